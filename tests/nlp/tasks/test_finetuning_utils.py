"""Tests for official/nlp/tasks/finetuning_utils.py (the helpers the fine-tuning tasks share)."""

import types

import numpy as np
import pytest
import tensorflow as tf

from official.nlp.tasks import finetuning_utils


def test_check_vocab_size_refuses_ids_past_the_table_only():
  meta = {'vocab_size': 40, 'metadata_path': 'ft/train.metadata.json'}
  with pytest.raises(ValueError, match=r'vocab_size is 30 but the records were written with a '
                     r'vocabulary of 40 tokens \(ft/train.metadata.json\); expected at most'):
    finetuning_utils.check_vocab_size(meta, 30)
  finetuning_utils.check_vocab_size(meta, 48)  # a padded table: fine
  finetuning_utils.check_vocab_size(None, 30)
  # The error names the selected encoder's field.
  with pytest.raises(ValueError, match=r'^task.model.encoder.bert.vocab_size is 30 '):
    finetuning_utils.check_vocab_size(meta, 30)
  with pytest.raises(ValueError, match=r'^task.model.encoder.modernbert.vocab_size is 30 '):
    finetuning_utils.check_vocab_size(meta, 30, 'modernbert')


def test_dummy_batches_are_reproducible_and_sized():
  params = types.SimpleNamespace(global_batch_size=3, seq_length=5, is_training=False)
  make = lambda: finetuning_utils.dummy_batches(
      params, 7, 11, lambda features, seed, index, batch: tf.fill([batch], index))
  batches = list(make())
  assert len(batches) == 8  # eval: a fixed number of batches
  features, labels = batches[2]
  assert features['input_word_ids'].shape == (3, 5) and features['input_word_ids'].dtype == tf.int32
  assert int(tf.reduce_max(features['input_word_ids'])) < 7
  np.testing.assert_array_equal(features['input_mask'], np.ones((3, 5)))
  np.testing.assert_array_equal(features['input_type_ids'], np.zeros((3, 5)))
  np.testing.assert_array_equal(labels, [2, 2, 2])
  again, _ = next(iter(make().skip(2)))
  np.testing.assert_array_equal(again['input_word_ids'], features['input_word_ids'])


def test_dummy_batches_with_label_key_are_one_dict():
  params = types.SimpleNamespace(global_batch_size=2, seq_length=4, is_training=False)
  pairs = finetuning_utils.dummy_batches(
      params, 7, 11, lambda features, seed, index, batch: tf.fill([batch], index))
  dicts = finetuning_utils.dummy_batches(
      params, 7, 11, lambda features, seed, index, batch: tf.fill([batch], index),
      label_key='label_ids')
  (features, labels), batch = next(iter(pairs.skip(1))), next(iter(dicts.skip(1)))
  assert sorted(batch) == ['input_mask', 'input_type_ids', 'input_word_ids', 'label_ids']
  np.testing.assert_array_equal(batch['label_ids'], labels)
  np.testing.assert_array_equal(batch['input_word_ids'], features['input_word_ids'])
