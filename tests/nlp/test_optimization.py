"""Tests for official/nlp/optimization.py."""

import json

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official.modeling import optimization as modeling_optimization
from official.nlp import optimization


def _schedule_numpy(step, init_lr=1e-3, total=100, warmup=10, end_lr=1e-5, power=1.0):
  if step < warmup:
    return init_lr * step / warmup
  fraction = min(step, total) / total
  return (init_lr - end_lr) * (1 - fraction) ** power + end_lr


def test_adamw_with_warmup_then_polynomial_decay():
  optimizer = optimization.create_optimizer(1e-3, num_train_steps=100, num_warmup_steps=10,
                                            end_lr=1e-5)
  assert isinstance(optimizer, modeling_optimization.AdamWeightDecay)
  assert optimization.AdamWeightDecay is modeling_optimization.AdamWeightDecay
  assert (optimizer.weight_decay_rate, optimizer.epsilon, optimizer.beta_2) == (0.01, 1e-6, 0.999)
  schedule = optimizer._learning_rate  # pylint: disable=protected-access
  assert isinstance(schedule, optimization.WarmUp)
  for step in (0, 3, 9, 10, 40, 100, 150):
    np.testing.assert_allclose(float(schedule(step)), _schedule_numpy(step), rtol=1e-5)


def test_lamb_without_warmup_uses_the_decay_alone():
  optimizer = optimization.create_optimizer(2e-3, 50, 0, optimizer_type='lamb', poly_power=2.0)
  assert isinstance(optimizer, optimization.LAMB)
  schedule = optimizer._learning_rate  # pylint: disable=protected-access
  assert isinstance(schedule, tf_keras.optimizers.schedules.PolynomialDecay)
  np.testing.assert_allclose(float(schedule(25)),
                             _schedule_numpy(25, 2e-3, 50, 0, 0.0, 2.0), rtol=1e-5)


def test_weight_decay_skips_layer_norm_and_bias():
  optimizer = optimization.create_optimizer(1.0, 10, 0)
  # Zero gradients: Adam's step is 0, so only the decoupled decay (lr * 0.01 * w) moves weights.
  variables = [tf.Variable([1.0], name=name)
               for name in ('dense/kernel', 'layer_norm/gamma', 'dense/bias')]
  optimizer.apply_gradients([(tf.constant([0.0]), v) for v in variables])
  np.testing.assert_allclose([v.numpy()[0] for v in variables], [0.99, 1.0, 1.0], rtol=1e-6)


def test_warmup_power_and_config_round_trip():
  decay = tf_keras.optimizers.schedules.PolynomialDecay(1.0, 100, 0.0)
  warmup = optimization.WarmUp(1.0, decay, warmup_steps=10, power=2.0, name='warm')
  np.testing.assert_allclose(float(warmup(5)), 0.25, rtol=1e-6)
  config = json.loads(json.dumps(tf_keras.optimizers.schedules.serialize(warmup)))
  rebuilt = tf_keras.optimizers.schedules.deserialize(config)
  assert isinstance(rebuilt, optimization.WarmUp)
  for step in (5, 10, 60):
    np.testing.assert_allclose(float(rebuilt(step)), float(warmup(step)), rtol=1e-6)


def test_bad_arguments_are_named():
  with pytest.raises(ValueError, match=r"optimizer_type: expected one of \['adamw', 'lamb'\], "
                                       r"found 'sgd'"):
    optimization.create_optimizer(1e-3, 10, 1, optimizer_type='sgd')
  with pytest.raises(ValueError, match='warmup_steps must be > 0, found 0'):
    optimization.WarmUp(1.0, lambda step: 1.0, warmup_steps=0)
