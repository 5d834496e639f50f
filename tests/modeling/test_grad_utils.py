"""Tests for official/modeling/grad_utils.py."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official.modeling import grad_utils
from official.modeling import performance


def _setup(optimizer):
  layer = tf_keras.layers.Dense(1, kernel_initializer='ones', bias_initializer='zeros')
  layer(tf.zeros([1, 2]))
  with tf.GradientTape() as tape:
    loss = tf.reduce_sum(layer(tf.constant([[0.5, 0.25]])))
  return layer, tape, loss, optimizer


def test_one_sgd_step_matches_numpy():
  layer, tape, loss, optimizer = _setup(tf_keras.optimizers.SGD(0.1))
  grad_utils.minimize_using_explicit_allreduce(tape, optimizer, loss, layer.trainable_variables)
  # d(x @ w + b)/dw = x, /db = 1
  np.testing.assert_allclose(layer.kernel.numpy(), [[1 - 0.1 * 0.5], [1 - 0.1 * 0.25]], rtol=1e-6)
  np.testing.assert_allclose(layer.bias.numpy(), [-0.1], rtol=1e-6)


@pytest.mark.parametrize('loss_scale', [None, 128])
def test_loss_scaled_step_unscales_and_runs_callbacks_in_order(loss_scale):
  optimizer = performance.configure_optimizer(tf_keras.optimizers.SGD(0.1), use_float16=True,
                                              loss_scale=loss_scale)
  layer, tape, loss, optimizer = _setup(optimizer)
  scale = float(optimizer.loss_scale.numpy())  # 2**15 (dynamic) or 128
  seen = []

  def record(stage):
    def callback(grads_and_vars):
      grads_and_vars = list(grads_and_vars)
      seen.append((stage, [g.dtype for g, _ in grads_and_vars],
                   float(grads_and_vars[1][0].numpy()[0])))
      return grads_and_vars
    return callback

  grad_utils.minimize_using_explicit_allreduce(
      tape, optimizer, loss, layer.trainable_variables,
      pre_allreduce_callbacks=[record('pre')], post_allreduce_callbacks=[record('post')])
  assert [stage for stage, _, _ in seen] == ['pre', 'post']
  assert seen[0][2] == pytest.approx(scale) and seen[1][2] == pytest.approx(1.0)
  assert seen[1][1] == [tf.float32, tf.float32]
  np.testing.assert_allclose(layer.bias.numpy(), [-0.1], rtol=1e-6)


def test_variables_without_gradients_are_skipped_or_named():
  used, unused = tf.Variable(1.0, name='used'), tf.Variable(1.0, name='unused')
  optimizer = tf_keras.optimizers.SGD(1.0)
  with tf.GradientTape(persistent=True) as tape:
    loss = used * 3.0
  grad_utils.minimize_using_explicit_allreduce(tape, optimizer, loss, [used, unused])
  assert (used.numpy(), unused.numpy()) == (-2.0, 1.0)
  with pytest.raises(ValueError, match=r"no gradient for any of them \(\['unused:0'\]\)"):
    grad_utils.minimize_using_explicit_allreduce(tape, optimizer, loss, [unused])


def test_sums_gradients_across_replicas():
  strategy = tf.distribute.MirroredStrategy(['/cpu:0'])  # one replica, a real replica context
  with strategy.scope():
    weight = tf.Variable(0.0)
    optimizer = tf_keras.optimizers.SGD(1.0)

  def step():
    with tf.GradientTape() as tape:
      loss = weight * 2.0
    grad_utils.minimize_using_explicit_allreduce(tape, optimizer, loss, [weight])

  strategy.run(tf.function(step))
  assert weight.numpy() == pytest.approx(-2.0)
  with pytest.raises(RuntimeError, match='replica context'):
    with strategy.scope():
      step()
