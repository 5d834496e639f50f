"""Tests for official/nlp/modeling/layers/mat_mul_with_margin.py ."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official.nlp.modeling import layers
from tests import testing


def _encodings(batch=3, dim=4, seed=0):
  rng = np.random.default_rng(seed)
  return (rng.normal(size=(batch, dim)).astype(np.float32),
          rng.normal(size=(batch, dim)).astype(np.float32))


def test_logits_match_numpy():
  left, right = _encodings()
  left_logits, right_logits = layers.MatMulWithMargin(logit_scale=2.5, logit_margin=0.3)(
      tf.constant(left), tf.constant(right))
  expected = 2.5 * (left @ right.T - 0.3 * np.eye(3))
  np.testing.assert_allclose(left_logits, expected, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(right_logits, expected.T, rtol=1e-5, atol=1e-6)


def test_defaults_are_plain_dot_products():
  left, right = _encodings(batch=2, dim=3, seed=1)
  left_logits, _ = layers.MatMulWithMargin()(tf.constant(left), tf.constant(right))
  np.testing.assert_allclose(left_logits, left @ right.T, rtol=1e-5, atol=1e-6)


def test_symbolic_batch():
  left = tf_keras.Input(shape=(5,))
  right = tf_keras.Input(shape=(5,))
  left_logits, right_logits = layers.MatMulWithMargin(logit_margin=0.1)(left, right)
  assert left_logits.shape.as_list() == [None, None]
  assert right_logits.shape.as_list() == [None, None]


def test_rejects_rank_3():
  with pytest.raises(ValueError, match=r'expects left_encoded and right_encoded of shape '
                     r'\[batch, dim\], found \(2, 3, 4\)'):
    layers.MatMulWithMargin()(tf.zeros([2, 3, 4]), tf.zeros([2, 3, 4]))


def test_config_round_trip():
  left, right = _encodings()
  testing.run_layer_test(layers.MatMulWithMargin, dict(logit_scale=3.0, logit_margin=0.2),
                         [tf.constant(left), tf.constant(right)], [(3, 3), (3, 3)])
