"""Tests for official/nlp/modeling/layers/rotary_embedding.py."""

import numpy as np
import pytest
import tensorflow as tf

from official.nlp.modeling.layers import rotary_embedding
from tests import testing
from tests.nlp.modeling import numpy_modernbert


@pytest.mark.parametrize('theta', [10000.0, 160000.0])
def test_matches_numpy_hf_formula(theta):
  rng = np.random.default_rng(0)
  x = rng.normal(size=(2, 7, 3, 8)).astype(np.float32)
  positions = np.array([[0, 1, 2, 3, 4, 5, 6], [0, 1, 2, 0, 1, 2, 3]])  # 2nd row: packed
  out = rotary_embedding.rotary_embedding(tf.constant(x), tf.constant(positions), theta)
  np.testing.assert_allclose(out, numpy_modernbert.rotary(x, positions, theta), atol=1e-5)
  cos, sin = rotary_embedding.rotary_cos_sin(tf.constant(positions), 8, theta)
  expected_cos, expected_sin = numpy_modernbert.rotary_cos_sin(positions, 8, theta)
  np.testing.assert_allclose(cos, expected_cos, atol=1e-6)
  np.testing.assert_allclose(sin, expected_sin, atol=1e-6)


def test_default_positions_and_the_heads_first_layout():
  x = tf.random.normal([2, 5, 3, 4], seed=1)
  default = rotary_embedding.rotary_embedding(x)
  explicit = rotary_embedding.rotary_embedding(x, tf.range(5)[None] * tf.ones([2, 1], tf.int32))
  np.testing.assert_allclose(default, explicit, atol=1e-6)
  heads_first = rotary_embedding.rotary_embedding(tf.transpose(x, [0, 2, 1, 3]), sequence_axis=2)
  np.testing.assert_allclose(tf.transpose(heads_first, [0, 2, 1, 3]), default, atol=1e-6)
  # Position 0 is the identity; a rotation keeps the norm of every vector.
  np.testing.assert_allclose(default[:, 0], x[:, 0], atol=1e-6)
  np.testing.assert_allclose(tf.norm(default, axis=-1), tf.norm(x, axis=-1), rtol=1e-5)


def test_rotate_half_and_apply_rotary():
  np.testing.assert_array_equal(rotary_embedding.rotate_half(tf.constant([1.0, 2.0, 3.0, 4.0])),
                                [-3.0, -4.0, 1.0, 2.0])
  cos, sin = rotary_embedding.rotary_cos_sin(tf.constant([[1]]), dim=2)
  np.testing.assert_allclose(rotary_embedding.apply_rotary(tf.constant([[[1.0, 0.0]]]), cos, sin),
                             [[[np.cos(1.0), np.sin(1.0)]]], atol=1e-6)


def test_dot_products_depend_only_on_the_relative_position():
  rng = np.random.default_rng(2)
  q = tf.constant(rng.normal(size=(1, 1, 1, 16)), tf.float32)
  k = tf.constant(rng.normal(size=(1, 1, 1, 16)), tf.float32)

  def score(i, j):
    rotated_q = rotary_embedding.rotary_embedding(q, tf.constant([[i]]), 10000.0)
    rotated_k = rotary_embedding.rotary_embedding(k, tf.constant([[j]]), 10000.0)
    return float(tf.reduce_sum(rotated_q * rotated_k))

  for i, j in ((3, 1), (1, 3), (7, 7)):
    for shift in (1, 10, 100):
      assert score(i, j) == pytest.approx(score(i + shift, j + shift), abs=1e-4)
  assert abs(score(3, 1) - score(1, 3)) > 1e-3  # not symmetric: the sign of i - j counts


def test_packed_rows_restart_positions_per_document():
  x = tf.random.normal([1, 6, 2, 4], seed=3)
  packed = rotary_embedding.rotary_embedding(x, tf.constant([[0, 1, 2, 0, 1, 2]]))
  np.testing.assert_allclose(packed[:, 3:], rotary_embedding.rotary_embedding(x[:, 3:]),
                             atol=1e-6)


def test_bfloat16_angles_in_float32_cast_afterwards():
  positions = tf.constant([[0, 500, 4000]])
  cos, sin = rotary_embedding.rotary_cos_sin(positions, 8, 160000.0, tf.bfloat16)
  cos32, sin32 = rotary_embedding.rotary_cos_sin(positions, 8, 160000.0)
  assert cos.dtype == tf.bfloat16
  np.testing.assert_array_equal(tf.cast(cos, tf.float32), tf.cast(tf.cast(cos32, tf.bfloat16),
                                                                  tf.float32))
  np.testing.assert_array_equal(tf.cast(sin, tf.float32), tf.cast(tf.cast(sin32, tf.bfloat16),
                                                                  tf.float32))
  x = tf.random.normal([1, 3, 1, 8], seed=4)
  out = rotary_embedding.rotary_embedding(tf.cast(x, tf.bfloat16), positions, 160000.0)
  assert out.dtype == tf.bfloat16
  np.testing.assert_allclose(tf.cast(out, tf.float32),
                             rotary_embedding.rotary_embedding(x, positions, 160000.0), atol=0.05)


def test_jit_compile():
  x = tf.random.normal([2, 5, 2, 4], seed=5)
  positions = tf.constant([[0, 1, 2, 3, 4], [0, 1, 0, 1, 2]])
  compiled = tf.function(rotary_embedding.rotary_embedding, jit_compile=True)
  expected = rotary_embedding.rotary_embedding(x, positions)
  np.testing.assert_allclose(compiled(x, positions), expected, atol=1e-6)


def test_layer_round_trip():
  x = tf.random.normal([2, 3, 5, 4], seed=6)
  positions = tf.constant([[0, 1, 2, 3, 4], [3, 4, 0, 1, 2]])
  out = testing.run_layer_test(rotary_embedding.RotaryEmbedding,
                               dict(theta=160000.0, sequence_axis=2), [x], (2, 3, 5, 4),
                               call_kwargs=dict(position_ids=positions))
  expected = numpy_modernbert.rotary(np.transpose(x, [0, 2, 1, 3]), positions.numpy(), 160000.0)
  np.testing.assert_allclose(out, np.transpose(expected, [0, 2, 1, 3]), atol=1e-5)


def test_errors_name_the_argument():
  with pytest.raises(ValueError, match='even, positive vector size, found dim=3'):
    rotary_embedding.rotary_cos_sin(tf.range(2), 3)
  with pytest.raises(ValueError, match='theta must be positive, found -1'):
    rotary_embedding.rotary_cos_sin(tf.range(2), 4, theta=-1.0)
  with pytest.raises(ValueError, match=r'position_ids must be \[batch, seq\], found shape \(5,\)'):
    rotary_embedding.rotary_embedding(tf.zeros([1, 5, 2, 4]), tf.range(5))
  with pytest.raises(ValueError, match='found rank 4 and sequence_axis=3'):
    rotary_embedding.rotary_embedding(tf.zeros([1, 5, 2, 4]), sequence_axis=3)
