"""Tests for official/modeling/optimization/lars.py: steps against a numpy LARS."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official.modeling.optimization import lars


def _np_lars(w, grads, lr, momentum, wd, eeta, nesterov, classic, decay, adapt):
  v = np.zeros_like(w)
  for g in grads:
    if decay:
      g = g + wd * w
    if classic:
      ratio = 1.0
      if adapt and np.linalg.norm(w) > 0 and np.linalg.norm(g) > 0:
        ratio = eeta * np.linalg.norm(w) / np.linalg.norm(g)
      v = momentum * v + lr * ratio * g
      w = w - (momentum * v + lr * ratio * g if nesterov else v)
    else:
      v = momentum * v + g
      update = momentum * v + g if nesterov else v
      ratio = 1.0
      if adapt and np.linalg.norm(w) > 0 and np.linalg.norm(update) > 0:
        ratio = eeta * np.linalg.norm(w) / np.linalg.norm(update)
      w = w - lr * ratio * update
  return w


@pytest.mark.parametrize('nesterov', [False, True])
@pytest.mark.parametrize('classic', [True, False])
def test_steps_match_numpy(nesterov, classic):
  variables = (tf.Variable([[0.5, -1.0], [2.0, 0.25]], name='layer/kernel'),
               tf.Variable([1.5, -0.5], name='layer/bias'),
               tf.Variable([0.0, 0.0], name='layer/zero_kernel'))
  init = [v.numpy() for v in variables]
  rng = np.random.default_rng(3)
  grads = [[rng.normal(size=x.shape).astype(np.float32) for x in init] for _ in range(3)]
  opt = lars.LARS(0.5, momentum=0.9, weight_decay_rate=0.01, eeta=0.01, nesterov=nesterov,
                  classic_momentum=classic, exclude_from_weight_decay=['bias'])
  for step_grads in grads:
    opt.apply_gradients(zip([tf.constant(g) for g in step_grads], variables))
  for i, var in enumerate(variables):
    expected = _np_lars(init[i], [g[i] for g in grads], 0.5, 0.9, 0.01, 0.01, nesterov, classic,
                        decay=(i != 1), adapt=(i != 1))
    np.testing.assert_allclose(var.numpy(), expected, rtol=1e-5, atol=1e-7, err_msg=var.name)


def test_exclusions_and_config_round_trip():
  opt = lars.LARS(0.1, weight_decay_rate=1e-4, exclude_from_weight_decay=['bias'],
                  exclude_from_layer_adaptation=['layer_norm'], clipnorm=1.0)
  # pylint: disable=protected-access
  assert opt._do_use_weight_decay('dense/kernel') and not opt._do_use_weight_decay('dense/bias')
  assert opt._do_layer_adaptation('dense/bias') and not opt._do_layer_adaptation('x/layer_norm/g')
  restored = tf_keras.optimizers.deserialize(tf_keras.optimizers.serialize(opt),
                                             use_legacy_optimizer=False)
  assert type(restored) is lars.LARS
  assert restored.get_config() == opt.get_config()


def test_bad_arguments_raise():
  with pytest.raises(ValueError, match='eeta must be > 0'):
    lars.LARS(eeta=0.0)
  with pytest.raises(ValueError, match='momentum must be >= 0'):
    lars.LARS(momentum=-0.1)
