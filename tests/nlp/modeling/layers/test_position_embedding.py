"""Tests for official/nlp/modeling/layers/position_embedding.py."""

import numpy as np
import tensorflow as tf

from official.nlp.modeling import layers
from tests import testing


def test_slices_the_table_for_the_sequence_length():
  layer = layers.PositionEmbedding(max_length=10)
  out = layer(tf.zeros([2, 4, 6]))
  assert out.shape == (1, 4, 6) and layer.embeddings.shape == (10, 6)
  np.testing.assert_allclose(out[0], layer.embeddings.numpy()[:4])
  np.testing.assert_allclose(layer(tf.zeros([1, 7, 6]))[0], layer.embeddings.numpy()[:7])


def test_round_trip():
  testing.run_layer_test(layers.PositionEmbedding, dict(max_length=10), [tf.zeros([2, 4, 6])],
                         (1, 4, 6))
