"""Tests for official/nlp/modeling/layers/on_device_embedding.py."""

import numpy as np
import tensorflow as tf
import tf_keras

from official.nlp.modeling import layers
from tests import testing


def test_gather_matches_table_rows_and_round_trips():
  ids = tf.constant([[0, 3, 1], [2, 2, 4]])
  out = testing.run_layer_test(layers.OnDeviceEmbedding, dict(vocab_size=5, embedding_width=4),
                               [ids], (2, 3, 4))
  assert out.dtype == tf.float32
  layer = layers.OnDeviceEmbedding(5, 4)
  np.testing.assert_allclose(layer(ids), layer.embeddings.numpy()[ids.numpy()])
  assert layer.embeddings.name.endswith('embeddings:0')


def test_one_hot_lookup_agrees_with_gather():
  ids = tf.constant([[0, 3, 1], [2, 2, 4]])
  gather = layers.OnDeviceEmbedding(5, 4)
  one_hot = layers.OnDeviceEmbedding(5, 4, use_one_hot=True)
  gather(ids)
  one_hot(ids)
  one_hot.set_weights(gather.get_weights())
  np.testing.assert_allclose(one_hot(ids), gather(ids), atol=1e-6)


def test_mixed_precision_keeps_float32_table():
  tf_keras.mixed_precision.set_global_policy('mixed_bfloat16')
  try:
    layer = layers.OnDeviceEmbedding(5, 4)
    out = layer(tf.constant([[1, 2]]))
  finally:
    tf_keras.mixed_precision.set_global_policy('float32')
  assert out.dtype == tf.bfloat16 and layer.embeddings.dtype == tf.float32


def test_scale_factor_multiplies_the_rows_and_round_trips():
  ids = tf.constant([[0, 3, 1]])
  plain = layers.OnDeviceEmbedding(5, 4)
  scaled = layers.OnDeviceEmbedding(5, 4, scale_factor=2.0)
  plain(ids)
  scaled(ids)
  scaled.set_weights(plain.get_weights())
  np.testing.assert_allclose(scaled(ids), 2.0 * plain(ids).numpy(), atol=1e-6)
  testing.run_layer_test(layers.OnDeviceEmbedding,
                         dict(vocab_size=5, embedding_width=4, scale_factor=0.5), [ids], (1, 3, 4))
