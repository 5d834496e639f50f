"""Tests for official/nlp/data/batch_trimming.py: the trimmed length, the tensors cut, and the
encoders' outputs at the real positions unchanged by the cut."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official.nlp.data import batch_trimming
from official.nlp.modeling import networks
from tests import testing

SEQ = 32


def _mask(lengths, seq=SEQ):
  return tf.constant([[1] * n + [0] * (seq - n) for n in lengths], tf.int32)


@pytest.mark.parametrize('lengths, multiple, expected', [
    ([3, 5], 4, 8),      # the longest row (5) rounded up to 8
    ([3, 5], 1, 5),      # no rounding
    ([16], 16, 16),      # already a multiple
    ([0, 0], 16, 16),    # all padding: one multiple, never an empty batch
    ([31], 16, SEQ),     # rounded to 32 = the records' length
    ([30], 12, SEQ),     # rounded to 36, capped at the records' length
])
def test_trimmed_length(lengths, multiple, expected):
  assert int(batch_trimming.trimmed_length(_mask(lengths), SEQ, multiple)) == expected


def test_trimmed_length_counts_to_the_last_real_position():
  # A hole in the mask does not shorten the row: its last real token is at position 6.
  mask = tf.constant([[1, 1, 0, 0, 0, 1, 0, 0]], tf.int32)
  assert int(batch_trimming.trimmed_length(mask, 8, multiple=1)) == 6


def test_trim_batch_cuts_the_sequence_tensors_of_a_dict_and_of_a_pair():
  ids = tf.reshape(tf.range(2 * SEQ), [2, SEQ])
  features = {'input_word_ids': ids, 'input_mask': _mask([5, 9]),
              'input_type_ids': tf.zeros([2, SEQ], tf.int32)}
  batch = dict(features, label_ids=tf.constant([0, 1]), example_id=tf.constant([7, 8]))
  out = batch_trimming.trim_batch(batch, SEQ, multiple=4)
  assert {k: v.shape.as_list() for k, v in out.items()} == {
      'input_word_ids': [2, 12], 'input_mask': [2, 12], 'input_type_ids': [2, 12],
      'label_ids': [2], 'example_id': [2]}
  np.testing.assert_array_equal(out['input_word_ids'], ids.numpy()[:, :12])
  np.testing.assert_array_equal(out['example_id'], [7, 8])
  # A tagging pair: per-token labels are cut with the features.
  tags = tf.where(_mask([5, 9]) > 0, 3, -1)
  cut_features, cut_tags = batch_trimming.trim_batch((features, tags), SEQ, multiple=4)
  assert cut_features['input_mask'].shape == (2, 12) and cut_tags.shape == (2, 12)
  np.testing.assert_array_equal(cut_tags, tags.numpy()[:, :12])


def test_trim_batch_refuses_a_batch_without_a_mask_and_a_bad_multiple():
  with pytest.raises(ValueError, match="expected a batch with 'input_mask'.*found dict"):
    batch_trimming.trim_batch({'input_word_ids': tf.zeros([1, SEQ], tf.int32)}, SEQ)
  with pytest.raises(ValueError, match='multiple must be >= 1, found 0'):
    batch_trimming.trim_batch({'input_mask': _mask([3])}, SEQ, multiple=0)


@pytest.mark.parametrize('family', ['bert', 'modernbert'])
def test_encoder_outputs_at_real_positions_do_not_change(family):
  """Through a dataset and a graph with an unknown length (as the fine-tuning loop runs it), the
  trimmed batch's sequence and pooled outputs equal the padded batch's at the real positions."""
  tf_keras.utils.set_random_seed(1)
  if family == 'bert':
    encoder = networks.BertEncoder(**testing.tiny_kwargs(family, vocab_size=30),
                                   dict_outputs=True)
  else:
    encoder = networks.ModernBertEncoder(**testing.tiny_kwargs(family, vocab_size=30))
  lengths = [4, 11, 7]
  mask = _mask(lengths)
  rng = np.random.default_rng(0)
  batch = {'input_word_ids': tf.constant(rng.integers(1, 30, (3, SEQ)), tf.int32) * mask,
           'input_mask': mask, 'input_type_ids': tf.zeros([3, SEQ], tf.int32)}
  dataset = tf.data.Dataset.from_tensors(batch)

  @tf.function
  def run(inputs):
    outputs = encoder(inputs, training=False)
    return outputs['sequence_output'], outputs['pooled_output']

  full_sequence, full_pooled = run(batch)
  trimmed = next(iter(batch_trimming.trim_dataset(dataset, SEQ, multiple=8)))
  assert trimmed['input_word_ids'].shape == (3, 16)
  sequence, pooled = run(trimmed)
  for row, n in enumerate(lengths):
    np.testing.assert_allclose(sequence[row, :n], full_sequence[row, :n], atol=1e-5)
  np.testing.assert_allclose(pooled, full_pooled, atol=1e-5)


def test_trim_dataset_keeps_a_pair_a_pair():
  features = {'input_mask': _mask([2, 3])}
  dataset = tf.data.Dataset.from_tensors((features, tf.constant([0, 1])))
  cut_features, labels = next(iter(batch_trimming.trim_dataset(dataset, SEQ, multiple=4)))
  assert cut_features['input_mask'].shape == (2, 4)
  np.testing.assert_array_equal(labels, [0, 1])
