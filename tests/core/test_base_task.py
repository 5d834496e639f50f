"""Tests for official/core/base_task.py (through the toy regression task)."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official.core import config_definitions as cfg
from official.core import exp_factory
from tests.core import toy_task


def _task(**task_overrides):
  params = exp_factory.get_exp_config('test/toy_regression')
  params.task.override(task_overrides)
  return toy_task.ToyRegressionTask(params.task, logging_dir='/tmp/logs'), params


def test_properties_and_defaults():
  task, params = _task()
  assert task.task_config is params.task and task.logging_dir == '/tmp/logs'
  assert task.loss == 'loss'
  assert task.aggregate_logs(state=None, step_logs={'x': 1}) is None
  assert task.reduce_aggregated_logs(None) == {}


def test_create_optimizer_loss_scaling():
  _, params = _task()
  opt_config = params.trainer.optimizer_config
  plain = toy_task.ToyRegressionTask.create_optimizer(opt_config, cfg.RuntimeConfig())
  assert not isinstance(plain, tf_keras.mixed_precision.LossScaleOptimizer)
  dynamic = toy_task.ToyRegressionTask.create_optimizer(
      opt_config, cfg.RuntimeConfig(mixed_precision_dtype='float16'))
  assert isinstance(dynamic, tf_keras.mixed_precision.LossScaleOptimizer) and dynamic.dynamic
  fixed = toy_task.ToyRegressionTask.create_optimizer(
      opt_config, cfg.RuntimeConfig(mixed_precision_dtype='float16', loss_scale=128.0))
  assert not fixed.dynamic and float(fixed.loss_scale) == 128.0


def test_train_step_is_one_sgd_step():
  task, params = _task()
  model = task.build_model()
  model.set_weights([np.array([[0.5], [0.0], [-1.0], [2.0]], np.float32)])
  optimizer = task.create_optimizer(params.trainer.optimizer_config)
  metrics = task.build_metrics()
  x = np.random.default_rng(3).normal(size=(8, 4)).astype(np.float32)
  y = x @ toy_task.TRUE_WEIGHTS[:, None]
  w = model.get_weights()[0]
  logs = task.train_step((x, y), model, optimizer, metrics)
  error = x @ w - y
  np.testing.assert_allclose(float(logs['loss']), np.mean(error ** 2), rtol=1e-5)
  grad = 2.0 * x.T @ error / len(x)
  np.testing.assert_allclose(model.get_weights()[0], w - 0.1 * grad, rtol=1e-5)  # lr at step 0
  np.testing.assert_allclose(float(metrics[0].result()), np.mean(np.abs(error)), rtol=1e-5)
  val = task.validation_step((x, y), model)
  assert float(val['loss']) < float(logs['loss'])


def test_initialize_from_directory_or_prefix(tmp_path):
  task, _ = _task()
  source = task.build_model()
  source.set_weights([np.arange(4, dtype=np.float32)[:, None]])
  prefix = tf.train.Checkpoint(model=source).save(str(tmp_path / 'ckpt'))
  for path in (str(tmp_path), prefix):
    target_task, _ = _task(init_checkpoint=path)
    target = target_task.build_model()
    target_task.initialize(target)
    np.testing.assert_array_equal(target.get_weights()[0], source.get_weights()[0])
  missing, _ = _task(init_checkpoint=str(tmp_path / 'nothing'))
  with pytest.raises(FileNotFoundError, match='task.init_checkpoint .*nothing'):
    missing.initialize(missing.build_model())
  empty, _ = _task()
  empty.initialize(empty.build_model())  # no init_checkpoint: nothing happens
