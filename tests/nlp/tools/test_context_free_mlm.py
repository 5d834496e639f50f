"""Tests for official/nlp/tools/context_free_mlm.py: the context-free predictor's figures against
a hand computation on tiny records, and against the masked-LM task's own loss."""

import math

import numpy as np
import pytest
import tensorflow as tf

from official.nlp.tasks import masked_lm
from official.nlp.tools import context_free_mlm

# [PAD] 0, [UNK] 1, [CLS] 2, [SEP] 3, [MASK] 4, then a 5, b 6, c 7.
VOCAB = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]', 'a', 'b', 'c']
SPECIAL = [0, 2, 3, 4]
SEQ, PREDICTIONS = 6, 2
# (input ids, masked positions, labels, weights)
TRAIN = [([2, 5, 4, 6, 3, 0], [2, 0], [5, 0], [1, 0]),  # a a b after restoring
         ([2, 7, 5, 4, 3, 0], [3, 1], [6, 7], [1, 1])]  # c a b (position 1 kept its c)
HELD_OUT = [([2, 4, 7, 3, 0, 0], [1, 2], [6, 7], [1, 1]),  # [MASK] for b; c kept
            ([2, 5, 4, 3, 0, 0], [2, 0], [5, 0], [1, 0]),  # [MASK] for a
            ([2, 6, 3, 0, 0, 0], [1, 0], [1, 0], [1, 0])]  # b replacing [UNK]


def _write(path, rows):
  with tf.io.TFRecordWriter(str(path)) as writer:
    for ids, positions, labels, weights in rows:
      feature = {
          'input_ids': tf.train.Feature(int64_list=tf.train.Int64List(value=ids)),
          'input_mask': tf.train.Feature(int64_list=tf.train.Int64List(
              value=[int(i > 0) for i in ids])),
          'segment_ids': tf.train.Feature(int64_list=tf.train.Int64List(value=[0] * SEQ)),
          'masked_lm_positions': tf.train.Feature(int64_list=tf.train.Int64List(value=positions)),
          'masked_lm_ids': tf.train.Feature(int64_list=tf.train.Int64List(value=labels)),
          'masked_lm_weights': tf.train.Feature(float_list=tf.train.FloatList(value=weights)),
      }
      writer.write(tf.train.Example(features=tf.train.Features(feature=feature))
                   .SerializeToString())
  return str(path)


@pytest.fixture(name='records')
def _records(tmp_path):
  vocab = tmp_path / 'vocab.txt'
  vocab.write_text('\n'.join(VOCAB) + '\n')
  return dict(train=_write(tmp_path / 'train.tfrecord', TRAIN),
              held_out=_write(tmp_path / 'held_out.tfrecord', HELD_OUT), vocab=str(vocab))


def test_counts_probabilities_and_metrics_match_a_hand_computation(records):
  assert context_free_mlm.special_token_ids(records['vocab']) == SPECIAL
  counts = context_free_mlm.token_counts(records['train'], len(VOCAB), SPECIAL, batch_size=1,
                                         seq_length=SEQ, max_predictions_per_seq=PREDICTIONS)
  np.testing.assert_array_equal(counts, [0, 0, 0, 0, 0, 3, 2, 1])  # a a b + c a b
  probabilities = context_free_mlm.unigram_probabilities(counts, SPECIAL)
  # Add-one over [UNK], a, b, c: 1, 4, 3, 2 out of 10.
  np.testing.assert_allclose(probabilities, [0, 0.1, 0, 0, 0, 0.4, 0.3, 0.2])
  batches = list(context_free_mlm.masked_lm_batches(records['held_out'], 2, SEQ, PREDICTIONS))
  assert [len(b['masked_lm_ids']) for b in batches] == [2, 1]  # file order, the last partial
  result = context_free_mlm.context_free_metrics(probabilities, batches)
  # Batch 1: b from [MASK] (-ln 0.3, wrong: a is the guess), the kept c (0, right), a from
  # [MASK] (-ln 0.4, right); batch 2: [UNK] (-ln 0.1, wrong). The loss is the batches' mean.
  first = (-math.log(0.3) + 0.0 - math.log(0.4)) / 3
  assert result['lm_example_loss'] == pytest.approx((first - math.log(0.1)) / 2)
  assert result['masked_lm_accuracy'] == pytest.approx(2 / 4)
  assert (result['masked_targets'], result['kept'], result['records']) == (4, 1, 3)
  alone = context_free_mlm.context_free_metrics(probabilities, batches, copy_kept=False)
  first = (-math.log(0.3) - math.log(0.2) - math.log(0.4)) / 3
  assert alone['lm_example_loss'] == pytest.approx((first - math.log(0.1)) / 2)
  assert alone['masked_lm_accuracy'] == pytest.approx(1 / 4)
  assert alone['kept'] == 0


def test_the_loss_is_the_masked_lm_tasks_loss_of_the_same_predictions(records):
  """The predictor as logits through the task's own loss: the same lm_example_loss."""
  probabilities = np.array([0, 0.1, 0, 0, 0, 0.4, 0.3, 0.2])
  batches = list(context_free_mlm.masked_lm_batches(records['held_out'], 2, SEQ, PREDICTIONS))
  batch_losses = []
  for batch in batches:
    visible = np.take_along_axis(batch['input_word_ids'], batch['masked_lm_positions'], 1)
    logits = np.log(np.maximum(probabilities, 1e-30))[None, None].repeat(
        visible.shape[0], 0).repeat(PREDICTIONS, 1)
    kept = visible == batch['masked_lm_ids']
    logits[kept] = np.where(np.arange(len(VOCAB)) == visible[kept][:, None], 0.0, -1e9)
    weights = tf.constant(batch['masked_lm_weights'])
    per_position = masked_lm.masked_lm_loss(tf.constant(batch['masked_lm_ids']),
                                            tf.constant(logits, tf.float32), weights)
    batch_losses.append(float(tf.reduce_sum(per_position * weights) / tf.reduce_sum(weights)))
  result = context_free_mlm.context_free_metrics(probabilities, batches)
  assert result['lm_example_loss'] == pytest.approx(np.mean(batch_losses), rel=1e-5)


def test_baseline_on_records_of_our_tool(tmp_path):
  from official.nlp.data import create_pretraining_data  # pylint: disable=g-import-not-at-top
  vocab = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'] + [f'w{i}' for i in range(20)]
  vocab_file = tmp_path / 'vocab.txt'
  vocab_file.write_text('\n'.join(vocab) + '\n')
  rng = np.random.default_rng(0)
  text = tmp_path / 'corpus.txt'
  text.write_text('\n\n'.join('\n'.join(' '.join(f'w{min(i, 19)}' for i in rng.zipf(1.5, 7))
                                        for _ in range(5)) for _ in range(12)) + '\n')
  paths = {}
  for name, options in (('train', dict(pack=True, masked_lm_prob=0.3)),
                        ('held', dict(no_next_sentence=True, dupe_factor=1))):
    paths[name] = str(tmp_path / f'{name}.tfrecord')
    create_pretraining_data.create_pretraining_data(
        str(text), paths[name], str(vocab_file), max_seq_length=16, max_predictions_per_seq=5,
        num_workers=1, **dict(dict(dupe_factor=2), **options))
  result = context_free_mlm.context_free_baseline(paths['train'], {'held': paths['held']},
                                                  str(vocab_file), batch_size=4)['held']
  assert result['masked_targets'] > 0 and 0 <= result['kept'] <= result['masked_targets']
  assert result['lm_example_loss'] <= result['unigram_lm_example_loss']
  assert result['masked_lm_accuracy'] >= result['unigram_masked_lm_accuracy']
  assert 0 < result['unigram_lm_example_loss'] < math.log(len(vocab))  # w0 dominates (Zipf)
  # Without vocab.txt (a BPE or Unigram tokenizer has none) the records' metadata says the same.
  from_metadata = context_free_mlm.context_free_baseline(
      paths['train'], {'held': paths['held']}, batch_size=4)['held']
  assert from_metadata == result


def test_sizes_are_needed_without_metadata(records):
  with pytest.raises(ValueError, match='held_out.tfrecord: no metadata file'):
    next(context_free_mlm.masked_lm_batches(records['held_out']))
  with pytest.raises(ValueError, match='token id 7 outside the vocabulary of 6'):
    context_free_mlm.token_counts(records['train'], 6, seq_length=SEQ,
                                  max_predictions_per_seq=PREDICTIONS)
