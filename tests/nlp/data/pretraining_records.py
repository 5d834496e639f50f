"""Writes small pretraining TFRecords in the Google-BERT layout, for tests: random examples
(`make_example`, `write_records`, independent of our tool), and our tool's records of a corpus
whose sentences walk a word list in order (`walking_corpus_records`)."""

from typing import Any, Dict, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf


def _int_feature(values):
  return tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))


def _float_feature(values):
  return tf.train.Feature(float_list=tf.train.FloatList(value=list(values)))


def make_example(rng: np.random.Generator, seq_length: int, max_predictions: int, vocab_size: int,
                 v2_names: bool = False, next_sentence: bool = True,
                 num_tokens: Optional[int] = None) -> tf.train.Example:
  """One example `[CLS] A [SEP] B [SEP]` + zero padding with random masked positions."""
  num_tokens = num_tokens or int(rng.integers(6, seq_length + 1))
  ids = np.zeros(seq_length, np.int64)
  ids[:num_tokens] = rng.integers(5, vocab_size, num_tokens)
  split = num_tokens // 2
  ids[0], ids[split], ids[num_tokens - 1] = 2, 3, 3  # [CLS], [SEP], [SEP]
  segments = np.zeros(seq_length, np.int64)
  segments[split + 1:num_tokens] = 1
  mask = (np.arange(seq_length) < num_tokens).astype(np.int64)
  candidates = [i for i in range(1, num_tokens - 1) if i != split]
  count = min(max_predictions, max(1, len(candidates) // 5))
  positions = np.sort(rng.choice(candidates, count, replace=False))
  labels = ids[positions].copy()
  ids[positions] = 4  # [MASK]
  pad = max_predictions - count
  feature = {
      'input_word_ids' if v2_names else 'input_ids': _int_feature(ids),
      'input_mask': _int_feature(mask),
      'input_type_ids' if v2_names else 'segment_ids': _int_feature(segments),
      'masked_lm_positions': _int_feature(list(positions) + [0] * pad),
      'masked_lm_ids': _int_feature(list(labels) + [0] * pad),
      'masked_lm_weights': _float_feature([1.0] * count + [0.0] * pad),
  }
  if next_sentence:
    feature['next_sentence_labels'] = _int_feature([int(rng.integers(0, 2))])
  return tf.train.Example(features=tf.train.Features(feature=feature))


def write_records(path: str, num_examples: int, seq_length: int = 16, max_predictions: int = 4,
                  vocab_size: int = 50, seed: int = 0, gzip: bool = False, **kwargs) -> list:
  """Writes `num_examples` records to `path`; returns the examples."""
  rng = np.random.default_rng(seed)
  examples = [make_example(rng, seq_length, max_predictions, vocab_size, **kwargs)
              for _ in range(num_examples)]
  options = tf.io.TFRecordOptions(compression_type='GZIP' if gzip else None)
  with tf.io.TFRecordWriter(path, options) as writer:
    for example in examples:
      writer.write(example.SerializeToString())
  return examples


def walking_corpus_records(tmp_path, words: Sequence[str], num_documents: int, seq_length: int,
                           max_predictions: int, dupe_factor: int,
                           **options: Any) -> Tuple[str, Dict[str, Any]]:
  """`create_pretraining_data`'s records of `num_documents` documents of 4 sentences, each 5 words
  walking `words` in order from a random start (seed 0), with `vocab.txt` (BERT's 5 special tokens,
  then `words`) in `tmp_path`.

  Args:
    options: more arguments of `create_pretraining_data` (e.g. `sentence_order=True`).

  Returns:
    (the records' path, the tool's metadata).

  Example:
    >>> path, metadata = walking_corpus_records(tmp_path, WORDS, 24, 16, 3, dupe_factor=2)
  """
  from official.nlp.data import create_pretraining_data  # pylint: disable=g-import-not-at-top
  vocab = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'] + list(words)
  (tmp_path / 'vocab.txt').write_text('\n'.join(vocab) + '\n')
  rng = np.random.default_rng(0)
  documents = []
  for _ in range(num_documents):
    start = int(rng.integers(0, len(words)))
    documents.append('\n'.join(' '.join(words[(start + 5 * s + k) % len(words)] for k in range(5))
                               for s in range(4)))
  (tmp_path / 'corpus.txt').write_text('\n\n'.join(documents) + '\n')
  output = str(tmp_path / 'train.tfrecord')
  metadata = create_pretraining_data.create_pretraining_data(
      str(tmp_path / 'corpus.txt'), output, str(tmp_path / 'vocab.txt'), max_seq_length=seq_length,
      max_predictions_per_seq=max_predictions, dupe_factor=dupe_factor, num_workers=1, **options)
  return output, metadata
