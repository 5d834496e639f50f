"""Tests for official/modeling/optimization/lamb.py: steps against a numpy LAMB."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official.modeling.optimization import lamb


def _np_lamb(w, grads, lr, wd, decay, adapt, b1=0.9, b2=0.999, eps=1e-6):
  m = np.zeros_like(w)
  v = np.zeros_like(w)
  for t, g in enumerate(grads, start=1):
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    update = (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps)
    if decay:
      update = update + wd * w
    ratio = 1.0
    if adapt:
      w_norm, u_norm = np.linalg.norm(w), np.linalg.norm(update)
      ratio = w_norm / u_norm if w_norm > 0 and u_norm > 0 else 1.0
    w = w - lr * ratio * update
  return w


def _variables():
  return (tf.Variable([[0.5, -1.0], [2.0, 0.25]], name='layer/kernel'),
          tf.Variable([1.5, -0.5], name='layer/layer_norm/gamma'),
          tf.Variable([0.0, 0.0], name='layer/zero_kernel'))


@pytest.mark.parametrize('adaptation_exclusions, adapt', [
    (None, (True, False, True)),           # defaults to the weight-decay exclusions
    (['kernel'], (False, True, False)),
])
def test_steps_match_numpy(adaptation_exclusions, adapt):
  variables = _variables()
  init = [v.numpy() for v in variables]
  rng = np.random.default_rng(1)
  grads = [[rng.normal(size=x.shape).astype(np.float32) for x in init] for _ in range(3)]
  opt = lamb.LAMB(learning_rate=0.01, weight_decay_rate=0.1,
                  exclude_from_weight_decay=['layer_norm'],
                  exclude_from_layer_adaptation=adaptation_exclusions)
  for step_grads in grads:
    opt.apply_gradients(zip([tf.constant(g) for g in step_grads], variables))
  for i, var in enumerate(variables):
    expected = _np_lamb(init[i], [g[i] for g in grads], 0.01, 0.1, decay=(i != 1), adapt=adapt[i])
    np.testing.assert_allclose(var.numpy(), expected, rtol=1e-5, atol=1e-7, err_msg=var.name)


def test_trust_ratio_scales_the_step_to_the_weight_norm():
  # One step, one variable: the Adam direction is sign(g) (norm 2), the trust ratio ||w|| / 2.
  w = tf.Variable([3.0, 4.0, 0.0, 0.0], name='kernel')
  lamb.LAMB(learning_rate=0.1).apply_gradients([(tf.constant([1.0, -1.0, 1.0, -1.0]), w)])
  np.testing.assert_allclose(w.numpy(), [3.0, 4.0, 0.0, 0.0] - 0.1 * 2.5 * np.array([1, -1, 1, -1]),
                             rtol=1e-5)


def test_xla_and_checkpoint(tmp_path):
  variables = _variables()
  opt = lamb.LAMB(0.01, weight_decay_rate=0.01, exclude_from_weight_decay=['layer_norm'])

  @tf.function(jit_compile=True)
  def step():
    with tf.GradientTape() as tape:
      loss = sum(tf.reduce_sum(tf.square(v - 1.0)) for v in variables)
    opt.apply_gradients(zip(tape.gradient(loss, variables), variables))

  step()
  # Slots are saved next to their variables (legacy slot format, Model Garden's keys), so the
  # checkpoint holds the variables too, as every training checkpoint does.
  path = tf.train.Checkpoint(optimizer=opt, variables=list(variables)).save(str(tmp_path / 'ckpt'))
  restored = lamb.LAMB(0.01)
  restored.build(list(variables))
  tf.train.Checkpoint(optimizer=restored, variables=list(variables)).restore(
      path).assert_existing_objects_matched()
  assert int(restored.iterations) == 1
  for a, b in zip(opt.variables, restored.variables):
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_config_round_trip():
  opt = lamb.LAMB(1e-3, weight_decay_rate=0.01, exclude_from_weight_decay=['bias'],
                  exclude_from_layer_adaptation=['layer_norm'], global_clipnorm=1.0)
  restored = tf_keras.optimizers.deserialize(tf_keras.optimizers.serialize(opt),
                                             use_legacy_optimizer=False)
  assert type(restored) is lamb.LAMB
  assert restored.get_config() == opt.get_config()
  assert opt.get_config()['exclude_from_layer_adaptation'] == ['layer_norm']


def test_legacy_decay_and_hyperparameter_accessors():
  # Legacy Keras inverse-time decay: step t uses lr / (1 + decay * t).
  var = tf.Variable([1.0, 2.0], name='w')
  opt = lamb.LAMB(learning_rate=0.01, decay=0.5, weight_decay_rate=0.01)
  init, grad = var.numpy(), np.array([0.1, 0.1], np.float32)
  for _ in range(3):
    opt.apply_gradients([(tf.constant(grad), var)])
  w = init
  m = v = np.zeros_like(init)
  for t in range(3):
    m = 0.9 * m + 0.1 * grad
    v = 0.999 * v + 0.001 * grad * grad
    update = (m / (1 - 0.9 ** (t + 1))) / (np.sqrt(v / (1 - 0.999 ** (t + 1))) + 1e-6) + 0.01 * w
    w = w - np.linalg.norm(w) / np.linalg.norm(update) * 0.01 / (1 + 0.5 * t) * update
  np.testing.assert_allclose(var.numpy(), w, rtol=1e-5)
  assert float(opt._get_hyper('beta_1')) == pytest.approx(0.9)  # pylint: disable=protected-access
  assert opt.get_config()['decay'] == 0.5
  with pytest.raises(ValueError, match='decay must be >= 0'):
    lamb.LAMB(decay=-1.0)


def test_name_based_decay_and_adaptation_decisions():
  opt = lamb.LAMB(0.01, weight_decay_rate=0.01, exclude_from_weight_decay=['bias'],
                  exclude_from_layer_adaptation=['layer_norm'])
  # pylint: disable=protected-access
  assert opt._do_use_weight_decay('dense/kernel') and not opt._do_use_weight_decay('dense/bias')
  assert opt._do_layer_adaptation('dense/bias')
  assert not opt._do_layer_adaptation('encoder/layer_norm/gamma')
  assert not lamb.LAMB(0.01)._do_use_weight_decay('dense/kernel')  # rate 0
