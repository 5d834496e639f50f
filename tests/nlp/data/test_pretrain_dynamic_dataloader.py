"""Tests for the length-bucketed loader of official/nlp/data/pretrain_dynamic_dataloader.py
(`BertPretrainBucketedDataConfig`, Model Garden's `BertPretrainDataConfig`, and
`PretrainingDynamicDataLoader`)."""

import numpy as np
import pytest
import tensorflow as tf

from official.nlp.data import pretrain_dynamic_dataloader as pdd
from official.nlp.tasks import masked_lm

MAX_SEQ = 32


def _write(path, lengths, num_masks, max_predictions=8):
  """Google-BERT records padded to MAX_SEQ / max_predictions; returns the examples as dicts."""
  rng = np.random.default_rng(len(lengths))
  examples = []
  with tf.io.TFRecordWriter(str(path)) as writer:
    for length, masks in zip(lengths, num_masks):
      ids = np.zeros(MAX_SEQ, np.int64)
      ids[:length] = rng.integers(1, 50, length)
      positions = np.zeros(max_predictions, np.int64)
      positions[:masks] = np.sort(rng.choice(np.arange(1, length), masks, replace=False))
      labels = np.zeros(max_predictions, np.int64)
      labels[:masks] = rng.integers(1, 50, masks)
      weights = np.zeros(max_predictions, np.float32)
      weights[:masks] = 1.0
      example = {'input_ids': ids, 'input_mask': (ids != 0).astype(np.int64),
                 'segment_ids': np.zeros(MAX_SEQ, np.int64), 'masked_lm_positions': positions,
                 'masked_lm_ids': labels, 'next_sentence_labels': np.array([length % 2])}
      feature = {k: tf.train.Feature(int64_list=tf.train.Int64List(value=v.tolist()))
                 for k, v in example.items()}
      feature['masked_lm_weights'] = tf.train.Feature(float_list=tf.train.FloatList(value=weights))
      writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
      examples.append(dict(example, masked_lm_weights=weights))
  return examples


def _config(path, **kwargs):
  return pdd.BertPretrainBucketedDataConfig(input_path=str(path), seq_bucket_lengths=[8, 16, 32],
                                            global_batch_size=2, is_training=False,
                                            deterministic=True, **kwargs)


@pytest.mark.slow
def test_batches_are_padded_to_their_bucket_and_keep_the_values(tmp_path):
  # Lengths 6 and 7 go to bucket 8, 12 and 16 to bucket 16; 3 masks each in bucket 8, 5 in 16.
  examples = _write(tmp_path / 'a.tfrecord', [6, 12, 7, 16], [3, 5, 3, 5])
  batches = list(pdd.PretrainingDynamicDataLoader(_config(tmp_path / 'a.tfrecord')).load())
  assert [b['input_word_ids'].shape for b in batches] == [(2, 8), (2, 16)]
  assert [b['masked_lm_positions'].shape for b in batches] == [(2, 3), (2, 5)]
  for batch, members in zip(batches, ([0, 2], [1, 3])):
    width = batch['input_word_ids'].shape[1]
    masks = batch['masked_lm_ids'].shape[1]
    for row, index in enumerate(members):
      example = examples[index]
      np.testing.assert_array_equal(batch['input_word_ids'][row], example['input_ids'][:width])
      np.testing.assert_array_equal(batch['input_mask'][row], example['input_mask'][:width])
      np.testing.assert_array_equal(batch['masked_lm_ids'][row], example['masked_lm_ids'][:masks])
      np.testing.assert_array_equal(batch['masked_lm_positions'][row],
                                    example['masked_lm_positions'][:masks])
      np.testing.assert_array_equal(batch['masked_lm_weights'][row], np.ones(masks))
      assert batch['next_sentence_labels'][row, 0] == example['next_sentence_labels'][0]
    assert batch['input_word_ids'].dtype == tf.int32
    assert batch['masked_lm_weights'].dtype == tf.float32


def test_unequal_mask_counts_in_a_batch_fail_clearly(tmp_path):
  _write(tmp_path / 'a.tfrecord', [6, 7], [3, 2])
  dataset = pdd.PretrainingDynamicDataLoader(_config(tmp_path / 'a.tfrecord')).load()
  with pytest.raises(tf.errors.InvalidArgumentError, match='Number of non padded mask tokens'):
    next(iter(dataset))


def test_model_garden_name_is_the_bucketed_config():
  # Model Garden's second `BertPretrainDataConfig` (in this module) is our bucketed config.
  assert pdd.BertPretrainDataConfig is pdd.BertPretrainBucketedDataConfig


def test_bucket_lengths_are_checked():
  with pytest.raises(ValueError, match=r'ascending and not empty; found \[16, 8\]'):
    pdd.PretrainingDynamicDataLoader(
        pdd.BertPretrainBucketedDataConfig(seq_bucket_lengths=[16, 8]))
  with pytest.raises(ValueError, match='found \\[\\]'):
    pdd.PretrainingDynamicDataLoader(pdd.BertPretrainBucketedDataConfig(seq_bucket_lengths=[]))


def test_masked_lm_task_reads_bucketed_batches(tmp_path):
  _write(tmp_path / 'a.tfrecord', [6, 7], [3, 3])
  config = masked_lm.MaskedLMConfig(train_data=_config(tmp_path / 'a.tfrecord'))
  batch = next(iter(masked_lm.MaskedLMTask(config).build_inputs(config.train_data)))
  assert batch['input_word_ids'].shape == (2, 8) and batch['masked_lm_ids'].shape == (2, 3)


def test_packed_records_need_position_ids(tmp_path):
  from official.nlp.data import create_pretraining_data  # pylint: disable=g-import-not-at-top
  (tmp_path / 'vocab.txt').write_text(
      '\n'.join(['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'] + [f'w{i}' for i in range(9)]))
  (tmp_path / 'corpus.txt').write_text('\n\n'.join(
      ' '.join(f'w{(d + i) % 9}' for i in range(20)) for d in range(6)) + '\n')
  path = str(tmp_path / 'packed.tfrecord')
  create_pretraining_data.create_pretraining_data(
      str(tmp_path / 'corpus.txt'), path, str(tmp_path / 'vocab.txt'), max_seq_length=MAX_SEQ,
      max_predictions_per_seq=8, pack=True, dupe_factor=1, num_workers=1)
  with pytest.raises(ValueError, match='packed.metadata.json: the records are packed .* found '
                     'use_position_id: false$'):
    pdd.PretrainingDynamicDataLoader(_config(path)).load()
  params = pdd.BertPretrainBucketedDataConfig(
      input_path=path, seq_bucket_lengths=[MAX_SEQ], global_batch_size=1, is_training=False,
      use_position_id=True, use_next_sentence_label=False)
  batch = next(iter(pdd.PretrainingDynamicDataLoader(params).load()))
  assert batch['position_ids'].shape == batch['input_word_ids'].shape == (1, MAX_SEQ)
