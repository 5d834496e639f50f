"""Tests for official/nlp/modeling/layers/self_attention_mask.py."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official.nlp.modeling import layers
from tests import testing


def test_get_mask_repeats_the_padding_mask():
  to_mask = np.array([[1, 1, 0], [1, 0, 0]], np.int32)
  mask = layers.get_mask(tf.zeros([2, 4, 5]), to_mask)
  assert mask.dtype == tf.float32
  np.testing.assert_array_equal(mask, np.repeat(to_mask[:, None, :], 4, axis=1))
  assert layers.get_mask(tf.zeros([2, 4]), to_mask, dtype=tf.int32).dtype == tf.int32


def test_layer_forms_and_static_shape():
  words, to_mask = tf_keras.Input((7, 8)), tf_keras.Input((7,), dtype=tf.int32)
  assert layers.SelfAttentionMask()(words, to_mask).shape.as_list() == [None, 7, 7]
  assert layers.SelfAttentionMask()([words, to_mask]).shape.as_list() == [None, 7, 7]


def test_round_trip():
  testing.run_layer_test(layers.SelfAttentionMask, {},
                         [tf.zeros([2, 3, 4]), tf.constant([[1, 1, 0], [1, 0, 0]])], (2, 3, 3))


def test_errors_name_the_argument():
  with pytest.raises(ValueError, match='needs to_mask'):
    layers.SelfAttentionMask()(tf.zeros([1, 2, 3]))
  with pytest.raises(ValueError, match=r'to_mask must be \[batch, to_length\]'):
    layers.get_mask(tf.zeros([1, 2, 3]), tf.ones([1, 2, 2]))
