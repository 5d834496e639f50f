"""Tests for official/nlp/modeling/layers/block_sublayers.py: `MatmulDense`, `GatedActivation`."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official.nlp.modeling.layers import block_sublayers
from tests import testing


def _values_and_gradients(layer, x, upstream):
  with tf.GradientTape() as tape:
    tape.watch(x)
    total = tf.reduce_sum(tf.cast(layer(x), tf.float32) * upstream)
  return [layer(x)] + tape.gradient(total, [x] + layer.trainable_variables)


@pytest.mark.parametrize('kernel_halves', [False, True])
@pytest.mark.parametrize('shape', [(6, 8), (2, 3, 8)])
def test_matmul_dense_is_keras_dense(shape, kernel_halves):
  rng = np.random.default_rng(0)
  x = tf.constant(rng.normal(size=shape), tf.float32)
  upstream = tf.constant(rng.normal(size=shape[:-1] + (6,)), tf.float32)
  ours = block_sublayers.MatmulDense(6, kernel_halves=kernel_halves, activation='relu',
                                     bias_initializer='random_normal', name='dense')
  keras = tf_keras.layers.Dense(6, activation='relu', name='dense')
  ours.build(x.shape)
  keras.build(x.shape)
  keras.set_weights(ours.get_weights())
  assert [v.name for v in ours.weights] == [v.name for v in keras.weights]
  for a, b in zip(_values_and_gradients(ours, x, upstream),
                  _values_and_gradients(keras, x, upstream)):
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
  first, second = ours.halves(tf.reshape(x, [-1, 8]))
  np.testing.assert_array_equal(tf.concat([first, second], -1),
                                ours.rows(tf.reshape(x, [-1, 8])))


def test_matmul_dense_round_trip_and_errors():
  testing.run_layer_test(block_sublayers.MatmulDense, dict(units=4, kernel_halves=True),
                         [tf.ones([2, 3, 8])], (2, 3, 4))
  with pytest.raises(ValueError, match='kernel_halves needs an even number of units, found 5'):
    block_sublayers.MatmulDense(5, kernel_halves=True, name='intermediate')


@pytest.mark.parametrize('activation', ['gelu', 'exact_gelu', 'relu'])
def test_gated_activation_is_activation_of_the_first_half_times_the_second(activation):
  x = tf.random.normal([2, 3, 8], seed=1)
  inner, gate = x[..., :4], x[..., 4:]
  plain = {'gelu': lambda v: tf.nn.gelu(v, approximate=True),
           'exact_gelu': lambda v: tf.nn.gelu(v, approximate=False), 'relu': tf.nn.relu}
  np.testing.assert_allclose(block_sublayers.GatedActivation(activation)(x),
                             plain[activation](inner) * gate, rtol=1e-5, atol=1e-6)


def test_gated_activation_round_trip_and_fused_kernel(monkeypatch):
  testing.run_layer_test(block_sublayers.GatedActivation, dict(activation='exact_gelu'),
                         [tf.ones([2, 3, 8])], (2, 3, 4))
  from official.modeling import fused_ops  # pylint: disable=g-import-not-at-top
  calls = []
  real = fused_ops.gated_gelu
  monkeypatch.setattr(fused_ops, 'gated_gelu',
                      lambda *a, **k: calls.append(k['approximate']) or real(*a, **k))
  block_sublayers.GatedActivation('gelu')(tf.ones([2, 4]))
  block_sublayers.GatedActivation('relu')(tf.ones([2, 4]))
  assert calls == [True]
