"""Tests for official/core/base_task.py (through the toy regression task)."""

import re

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official.core import config_definitions as cfg
from official.core import exp_factory
from official.core import task_factory
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


def test_initialize_from_an_empty_directory_restores_nothing(tmp_path, caplog):
  # Model Garden's tests point init_checkpoint at an empty temporary directory: nothing to restore.
  task, _ = _task(init_checkpoint=str(tmp_path))
  model = task.build_model()
  before = model.get_weights()[0].copy()
  with caplog.at_level('WARNING'):
    task.initialize(model)
  np.testing.assert_array_equal(model.get_weights()[0], before)
  assert 'holds no checkpoint' in caplog.text


def test_get_task_by_config_or_by_class():
  task, params = _task()
  by_config = task_factory.get_task(params.task, logging_dir='/tmp/a')
  by_class = task_factory.get_task(toy_task.ToyRegressionTask, params.task, logging_dir='/tmp/b')
  by_keyword = task_factory.get_task(task_config=toy_task.ToyRegressionTask, params=params.task)
  for got, logging_dir in ((by_config, '/tmp/a'), (by_class, '/tmp/b'), (by_keyword, None)):
    assert type(got) is toy_task.ToyRegressionTask
    assert got.task_config is params.task and got.logging_dir == logging_dir
  with pytest.raises(TypeError, match='dict is not a Task subclass'):
    task_factory.get_task(dict, params.task)
  with pytest.raises(TypeError, match='config was given twice'):
    task_factory.get_task(params.task, params.task)


def test_build_metrics_update_inside_tf_function():
  task, _ = _task()
  model = task.build_model()
  model.set_weights([np.array([[1.0], [0.0], [0.0], [0.0]], np.float32)])
  metrics = task.build_metrics()  # created eagerly, outside the function
  x = np.random.default_rng(5).normal(size=(8, 4)).astype(np.float32)
  y = x @ toy_task.TRUE_WEIGHTS[:, None]

  @tf.function
  def step(inputs):
    return task.validation_step(inputs, model, metrics=metrics)

  for _ in range(3):
    logs = step((x, y))
  error = x[:, :1] - y
  np.testing.assert_allclose(float(logs['loss']), np.mean(error ** 2), rtol=1e-5)
  np.testing.assert_allclose(float(metrics[0].result()), np.mean(np.abs(error)), rtol=1e-5)
  assert float(metrics[0].count) == 3 * 8


def test_keras_fit_trains_the_task_loss_and_reports_its_metrics():
  task, params = _task()
  model = task.build_model()
  model.compile(tf_keras.optimizers.SGD(0.05))  # no loss: the task's steps
  dataset = task.build_inputs(params.task.train_data)
  history = model.fit(dataset, steps_per_epoch=5, epochs=3, verbose=0)
  assert sorted(history.history) == ['loss', 'mean_absolute_error']
  losses = history.history['loss']
  assert losses[0] > losses[1] > losses[2]
  # A one-step evaluation reports the task's loss and metric of that batch.
  x, y = next(iter(task.build_inputs(params.task.validation_data)))
  result = model.evaluate(tf.data.Dataset.from_tensors((x, y)), return_dict=True, verbose=0)
  error = model(x).numpy() - y.numpy()
  np.testing.assert_allclose(result['loss'], np.mean(error ** 2), rtol=1e-5)
  np.testing.assert_allclose(result['mean_absolute_error'], np.mean(np.abs(error)), rtol=1e-5)


def test_keras_fit_progress_shows_the_epoch_means(capsys):
  task, params = _task()
  model = task.build_model()
  model.compile(tf_keras.optimizers.SGD(0.05))
  assert [m.name for m in model.metrics] == ['loss', 'mean_absolute_error']
  history = model.fit(task.build_inputs(params.task.train_data), steps_per_epoch=5, epochs=2,
                      verbose=2)
  # Keras prints the task's running means as they are (not an average of them).
  shown = [float(v) for v in re.findall(r' - loss: ([\d.]+)', capsys.readouterr().out)]
  np.testing.assert_allclose(shown, history.history['loss'], atol=1e-4)


def test_keras_fit_with_a_compiled_loss_keeps_keras_steps():
  task, params = _task()
  model = task.build_model()
  model.compile(tf_keras.optimizers.SGD(0.05), loss='mae')
  history = model.fit(task.build_inputs(params.task.train_data), steps_per_epoch=2, epochs=1,
                      verbose=0)
  assert sorted(history.history) == ['loss']
  # Compiled again without a loss, the task's steps come back.
  model.compile(tf_keras.optimizers.SGD(0.05))
  history = model.fit(task.build_inputs(params.task.train_data), steps_per_epoch=2, epochs=1,
                      verbose=0)
  assert sorted(history.history) == ['loss', 'mean_absolute_error']


def test_attached_steps_leave_checkpoints_unchanged(tmp_path):
  task, _ = _task()
  model = task.build_model()
  model.compile(tf_keras.optimizers.SGD(0.05))
  plain = tf_keras.Sequential([tf_keras.layers.Dense(1, use_bias=False)])
  plain.build([None, 4])
  plain.compile(tf_keras.optimizers.SGD(0.05))
  names = {name for name, _ in tf.train.list_variables(
      tf.train.Checkpoint(model=model).save(str(tmp_path / 'a')))}
  plain_names = {name for name, _ in tf.train.list_variables(
      tf.train.Checkpoint(model=plain).save(str(tmp_path / 'b')))}
  assert names == plain_names
