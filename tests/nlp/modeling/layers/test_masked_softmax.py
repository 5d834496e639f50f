"""Tests for official/nlp/modeling/layers/masked_softmax.py."""

import numpy as np
import tensorflow as tf
import tf_keras

from official.nlp.modeling import layers
from tests import testing


def _softmax(x, axes):
  e = np.exp(x - x.max(axis=axes, keepdims=True))
  return e / e.sum(axis=axes, keepdims=True)


def test_masked_positions_get_zero_and_the_rest_renormalize():
  scores = np.random.default_rng(0).normal(size=(2, 3, 4)).astype(np.float32)
  mask = np.array([[1, 1, 0, 1], [0, 1, 1, 1]], np.float32)
  out = layers.MaskedSoftmax(mask_expansion_axes=[1])(scores, mask).numpy()
  expected = _softmax(np.where(mask[:, None, :] > 0, scores, -np.inf), -1)
  np.testing.assert_allclose(out, expected, atol=1e-6)
  np.testing.assert_allclose(layers.MaskedSoftmax()(scores), _softmax(scores, -1), atol=1e-6)


def test_several_normalization_axes_and_round_trip():
  scores = np.random.default_rng(1).normal(size=(2, 3, 4, 5)).astype(np.float32)
  out = layers.MaskedSoftmax(normalization_axes=[2, 3])(scores).numpy()
  np.testing.assert_allclose(out, _softmax(scores, (2, 3)), atol=1e-6)
  testing.run_layer_test(layers.MaskedSoftmax,
                         dict(mask_expansion_axes=[1], normalization_axes=[2, 3]),
                         [tf.constant(scores), tf.ones([2, 4, 5])], (2, 3, 4, 5))


def test_mixed_bfloat16_computes_in_float32():
  tf_keras.mixed_precision.set_global_policy('mixed_bfloat16')
  try:
    out = layers.MaskedSoftmax()(tf.constant([[0.0, 1.0, 2.0]], tf.bfloat16))
  finally:
    tf_keras.mixed_precision.set_global_policy('float32')
  assert out.dtype == tf.bfloat16
  np.testing.assert_allclose(tf.cast(out, tf.float32), _softmax(np.array([[0.0, 1, 2]]), -1),
                             atol=1e-2)
