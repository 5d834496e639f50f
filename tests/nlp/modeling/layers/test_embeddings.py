"""Tests for the embedding layers: on_device_embedding, position_embedding, reversible_embedding."""

import numpy as np
import tensorflow as tf

from official.nlp.modeling import layers
from tests import testing


def test_on_device_embedding_gather_and_one_hot_agree():
  ids = tf.constant([[0, 3, 1], [2, 2, 4]])
  gather = layers.OnDeviceEmbedding(5, 4)
  out = testing.run_layer_test(layers.OnDeviceEmbedding, dict(vocab_size=5, embedding_width=4),
                               [ids], (2, 3, 4))
  assert out.shape == (2, 3, 4)
  gather(ids)
  one_hot = layers.OnDeviceEmbedding(5, 4, use_one_hot=True)
  one_hot(ids)
  one_hot.set_weights(gather.get_weights())
  np.testing.assert_allclose(one_hot(ids), gather(ids), atol=1e-6)
  np.testing.assert_allclose(gather(ids), gather.embeddings.numpy()[ids.numpy()])


def test_position_embedding_slices_the_table():
  layer = layers.PositionEmbedding(max_length=10)
  out = layer(tf.zeros([2, 4, 6]))
  np.testing.assert_allclose(out[0], layer.embeddings.numpy()[:4])
  testing.run_layer_test(layers.PositionEmbedding, dict(max_length=10), [tf.zeros([2, 4, 6])],
                         (1, 4, 6))


def test_reversible_embedding_tied_and_untied():
  embedding = layers.ReversibleEmbedding(20, 8)
  hidden = embedding(tf.constant([[1, 2, 3]]))
  logits = embedding(hidden, reverse=True)
  np.testing.assert_allclose(logits, hidden.numpy() @ embedding.embeddings.numpy().T, atol=1e-5)
  testing.run_layer_test(layers.ReversibleEmbedding, dict(input_dim=20, output_dim=8,
                                                          tie_weights=False),
                         [tf.constant([[1, 2, 3]])], (1, 3, 8))
  untied = layers.ReversibleEmbedding(20, 8, tie_weights=False)
  untied(tf.constant([[1]]))
  assert untied(tf.zeros([1, 8]), reverse=True).shape == (1, 20)
