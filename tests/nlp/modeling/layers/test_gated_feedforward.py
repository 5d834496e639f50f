"""Tests for official/nlp/modeling/layers/gated_feedforward.py."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official.nlp.modeling import layers
from tests import testing
from tests.nlp.modeling import numpy_bert


def _numpy_forward(x, layer, use_gate, apply_norm):
  # pylint: disable=protected-access
  dense = lambda d, h: h @ d.kernel.numpy() + d.bias.numpy()
  for i in range(layer.num_blocks):
    hidden = np.maximum(dense(layer._intermediate_dense[i], x), 0)
    if use_gate:
      hidden = hidden * dense(layer._gate_dense[i], x)
    y = dense(layer._output_dense[i], hidden)
    if apply_norm:
      y = numpy_bert.layer_norm(y + x, *[v.numpy() for v in layer._output_layer_norm[i].weights])
    x = y
  return x


@pytest.mark.parametrize('use_gate,apply_norm,position', [
    (True, True, 'before_residual'), (False, True, 'after_residual'),
    (True, False, 'before_residual')])
def test_matches_numpy(use_gate, apply_norm, position):
  x = np.random.default_rng(0).normal(size=(2, 3, 4)).astype(np.float32)
  layer = layers.GatedFeedforward(inner_dim=8, inner_activation='relu', use_gate=use_gate,
                                  apply_output_layer_norm=apply_norm, num_blocks=2,
                                  dropout_position=position)
  layer(x)
  for v in layer.weights:
    v.assign(v + 0.1)
  np.testing.assert_allclose(layer(x), _numpy_forward(x, layer, use_gate, apply_norm), atol=1e-5)


def test_dropout_position():
  x = tf.random.normal([4, 3, 8], seed=1)
  after = layers.GatedFeedforward(inner_dim=8, dropout=0.5, dropout_position='after_residual')
  out = after(x, training=True).numpy()
  # After the residual, dropped elements are exactly zero (before it, the residual fills them).
  assert 0.2 < (out == 0).mean() < 0.8
  before = layers.GatedFeedforward(inner_dim=8, dropout=0.5)
  assert (before(x, training=True).numpy() == 0).mean() < 0.05
  np.testing.assert_allclose(before(x, training=False), before(x, training=False))


def test_names_and_aliases():
  layer = layers.GatedFeedforward(intermediate_size=6, intermediate_activation='relu',
                                  num_blocks=2, name='ffn')
  layer(tf.ones([1, 2, 4]))
  assert layer.inner_dim == 6 and layer.inner_activation == 'relu'
  names = sorted(v.name for v in layer.weights if v.name.endswith('kernel:0'))
  assert names == ['ffn/gate_0/kernel:0', 'ffn/gate_1/kernel:0', 'ffn/intermediate_0/kernel:0',
                   'ffn/intermediate_1/kernel:0', 'ffn/output_0/kernel:0',
                   'ffn/output_1/kernel:0']
  assert 'ffn/output_layer_norm_1/gamma:0' in [v.name for v in layer.weights]


def test_mixed_float16_output_is_float32_after_the_layer_norm():
  tf_keras.mixed_precision.set_global_policy('mixed_float16')
  try:
    layer = layers.GatedFeedforward(inner_dim=8, num_blocks=2)
    assert layer(tf.ones([1, 2, 4])).dtype == tf.float32
  finally:
    tf_keras.mixed_precision.set_global_policy('float32')


def test_round_trip():
  testing.run_layer_test(
      layers.GatedFeedforward,
      dict(inner_dim=8, inner_activation='relu', num_blocks=2, use_gate=False,
           apply_output_layer_norm=False, kernel_regularizer='l2'),
      [tf.random.normal([2, 3, 4], seed=2)], (2, 3, 4))


def test_errors_name_the_argument():
  with pytest.raises(ValueError, match="dropout_position must be one of .* found 'middle'"):
    layers.GatedFeedforward(dropout_position='middle')
  with pytest.raises(ValueError, match='num_blocks must be at least 1, found 0'):
    layers.GatedFeedforward(num_blocks=0)
