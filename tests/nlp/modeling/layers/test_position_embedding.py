"""Tests for official/nlp/modeling/layers/position_embedding.py."""

import math

import numpy as np
import pytest
import tensorflow as tf

from official.nlp.modeling import layers
from official.nlp.modeling.layers import position_embedding
from tests import testing


def test_slices_the_table_for_the_sequence_length():
  layer = layers.PositionEmbedding(max_length=10)
  out = layer(tf.zeros([2, 4, 6]))
  # Broadcast to the input's shape (Model Garden's output); unbroadcast rows for the encoder.
  assert out.shape == (2, 4, 6) and layer.embeddings.shape == (10, 6)
  np.testing.assert_allclose(out[1], layer.embeddings.numpy()[:4])
  rows = layer(tf.zeros([1, 7, 6]), broadcast=False)
  assert rows.shape == (1, 7, 6)
  np.testing.assert_allclose(rows[0], layer.embeddings.numpy()[:7])


def test_position_ids_pick_the_rows_of_packed_documents():
  layer = layers.PositionEmbedding(max_length=10)
  positions = np.array([[0, 1, 2, 0, 1], [0, 1, 2, 3, 4]], np.int32)
  out = layer(tf.zeros([2, 5, 6]), position_ids=positions)
  np.testing.assert_allclose(out, layer.embeddings.numpy()[positions])
  with pytest.raises(ValueError, match='position_ids need inputs'):
    layers.PositionEmbedding(max_length=10, seq_axis=2)(tf.zeros([2, 3, 5, 6]),
                                                        position_ids=positions)


def test_sequence_on_another_axis():
  layer = layers.PositionEmbedding(max_length=10, seq_axis=2)
  out = layer(tf.zeros([2, 3, 5, 6]))
  assert out.shape == (2, 3, 5, 6)
  np.testing.assert_allclose(out[1, 2], layer.embeddings.numpy()[:5])


def test_round_trip():
  testing.run_layer_test(layers.PositionEmbedding, dict(max_length=10, seq_axis=1),
                         [tf.zeros([2, 4, 6])], (2, 4, 6))


def test_sinusoidal_embedding_matches_the_formula():
  layer = layers.RelativePositionEmbedding(hidden_size=6)
  out = layer(tf.zeros([1, 5, 6])).numpy()
  inverse = np.exp(-np.arange(3) * math.log(1e4) / 2)
  angles = np.arange(5)[:, None] * inverse[None]
  np.testing.assert_allclose(out, np.concatenate([np.sin(angles), np.cos(angles)], 1), atol=1e-5)
  np.testing.assert_allclose(layer(None, length=5), out)
  with pytest.raises(ValueError, match='needs inputs or a length'):
    layer(None)
  testing.run_layer_test(layers.RelativePositionEmbedding, dict(hidden_size=6),
                         [tf.zeros([1, 5, 6])], (5, 6))


def _numpy_bucket(relative, bidirectional, num_buckets=32, max_distance=128):
  out = np.zeros_like(relative)
  for index, r in np.ndenumerate(relative):
    n, base, buckets = -r, 0, num_buckets
    if bidirectional:
      buckets //= 2
      base = buckets if n < 0 else 0
      n = abs(n)
    else:
      n = max(n, 0)
    exact = buckets // 2
    if n < exact:
      out[index] = base + n
    else:
      far = exact + int(math.log(n / exact) / math.log(max_distance / exact) * (buckets - exact))
      out[index] = base + min(far, buckets - 1)
  return out


@pytest.mark.parametrize('bidirectional', [True, False])
def test_relative_position_buckets_match_numpy(bidirectional):
  relative = np.arange(-300, 300, 7)[None, :] - np.arange(0, 40, 13)[:, None]
  got = position_embedding._relative_position_bucket(  # pylint: disable=protected-access
      tf.constant(relative, tf.int32), bidirectional=bidirectional).numpy()
  np.testing.assert_array_equal(got, _numpy_bucket(relative, bidirectional))


def test_relative_position_bias_gathers_per_head_bucket_values():
  layer = layers.RelativePositionBias(num_heads=3, name='bias')
  out = layer(tf.zeros([2, 4, 8]), tf.zeros([2, 6, 8])).numpy()
  assert out.shape == (2, 3, 4, 6) and layer.weights[0].name == 'bias/rel_embedding:0'
  relative = np.arange(6)[None, :] - np.arange(4)[:, None]
  table = layer.weights[0].numpy()
  expected = table[_numpy_bucket(relative, True)].transpose(2, 0, 1)
  np.testing.assert_allclose(out[1], expected, atol=1e-6)
  testing.run_layer_test(layers.RelativePositionBias, dict(num_heads=3, bidirectional=False),
                         [tf.zeros([2, 4, 8]), tf.zeros([2, 6, 8])], (2, 3, 4, 6))
