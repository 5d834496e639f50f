"""Moving averages of the weights (`optimizer_config.ema`) in official/core/trainer.py: the averages
are created with the model, and evaluations run on them."""

import numpy as np
import pytest
import tensorflow as tf

from official.common import distribute_utils
from official.core import exp_factory
from official.core import task_factory
from official.core import trainer as trainer_lib
from official.modeling import optimization
from tests.core import toy_task
from tests.processes import run_on_two_cpus

_EMA = {'average_decay': 0.8, 'start_step': 2, 'dynamic_decay': True}


def _trainer(tmp_path, strategy_name: str = 'one_device', **trainer_overrides):
  params = exp_factory.get_exp_config('test/toy_regression')
  params.override({'trainer': {'optimizer_config': {'ema': _EMA}, **trainer_overrides}})
  strategy = distribute_utils.get_distribution_strategy(strategy_name)
  with strategy.scope():
    task = task_factory.get_task(params.task)
  trainer = trainer_lib.Trainer(strategy, task, params, str(tmp_path))
  trainer.restore_or_initialize()
  return trainer


def _validation_loss(trainer, kernel: np.ndarray, steps: int) -> float:
  """The mean squared error of `x @ kernel` over the first `steps` validation batches (numpy)."""
  data = trainer.params.task.validation_data
  batches = list(trainer.task.build_inputs(data).take(steps).as_numpy_iterator())
  return float(np.mean([np.mean((y - x @ kernel) ** 2) for x, y in batches]))


@pytest.mark.slow
@pytest.mark.parametrize('skip_nonfinite_steps', [False, True])
def test_evaluation_uses_the_averages_then_restores_the_weights(tmp_path, skip_nonfinite_steps):
  trainer = _trainer(tmp_path, skip_nonfinite_steps=skip_nonfinite_steps)
  assert isinstance(trainer.ema, optimization.ExponentialMovingAverage)
  assert trainer.ema.has_shadow_copy
  assert len(trainer.ema.average_weights) == len(trainer.model.trainable_variables) == 1

  history = []
  for _ in range(4):
    trainer.train(tf.constant(1))
    history.append(trainer.model.get_weights()[0].copy())
  # The averages follow the numpy reference (zeros, copy before step 2, then dynamic decay).
  average = np.zeros_like(history[0])
  for t, weights in enumerate(history, start=1):
    decay = 0.0 if t < 2 else min(0.8, (1 + t - 2) / (10 + t - 2))
    average = average - (1 - decay) * (average - weights)
  np.testing.assert_allclose(trainer.ema.average_weights[0].numpy(), average, rtol=1e-5)

  logs = trainer.evaluate(4)
  np.testing.assert_allclose(logs['validation_loss'], _validation_loss(trainer, average, 4),
                             rtol=1e-4)
  assert abs(logs['validation_loss'] - _validation_loss(trainer, history[-1], 4)) > 1e-3
  # The trained weights are back, and training goes on from them.
  np.testing.assert_array_equal(trainer.model.get_weights()[0], history[-1])
  np.testing.assert_array_equal(trainer.ema.average_weights[0].numpy(), average)


def test_checkpoints_carry_the_averages(tmp_path):
  trainer = _trainer(tmp_path)
  trainer.train(tf.constant(3))
  trainer.manager.save_at(3)
  average = trainer.ema.average_weights[0].numpy()
  weights = trainer.model.get_weights()[0]

  resumed = _trainer(tmp_path)  # restores the latest checkpoint
  assert int(resumed.global_step.numpy()) == 3
  np.testing.assert_array_equal(resumed.ema.average_weights[0].numpy(), average)
  np.testing.assert_array_equal(resumed.model.get_weights()[0], weights)


def test_train_and_eval_run_with_ema_set_in_the_config(tmp_path):
  runner = toy_task.runner_in_process(tmp_path, mode='train_and_eval', run_post_eval=True,
                                      train_steps=10, validation_interval=10,
                                      optimizer_config={'ema': {'average_decay': 0.9}})
  _, logs = runner.run()
  trainer = runner.trainer
  assert int(trainer.global_step.numpy()) == 10
  average = trainer.ema.average_weights[0].numpy()
  np.testing.assert_allclose(logs['validation_loss'], _validation_loss(trainer, average, 4),
                             rtol=1e-4)
  names = [n for n, _ in tf.train.list_variables(tf.train.latest_checkpoint(str(tmp_path)))]
  assert 'optimizer/_average_weights/0/.ATTRIBUTES/VARIABLE_VALUE' in names
  # The runner's eval actions save the averaged weights too (Model Garden's EMACheckpointing).
  ema_checkpoint = tf.train.latest_checkpoint(str(tmp_path / 'ema_checkpoints'))
  assert ema_checkpoint and ema_checkpoint.endswith('-10'), ema_checkpoint


@pytest.mark.slow
def test_two_replica_mirrored_evaluation_uses_the_averages(tmp_path):
  """Two virtual CPUs: the averages are mirrored, and swapped in and out on both replicas."""
  code = f"""
import numpy as np, tensorflow as tf
from tests.core import test_trainer_ema as t
trainer = t._trainer({str(tmp_path)!r}, 'mirrored')
assert trainer.strategy.num_replicas_in_sync == 2
trainer.train(tf.constant(4))
weights = [v.numpy() for v in trainer.model.trainable_variables[0].values]
averages = [v.numpy() for v in trainer.ema.average_weights[0].values]
logs = trainer.evaluate(4)
after = [v.numpy() for v in trainer.model.trainable_variables[0].values]
np.testing.assert_array_equal(averages[0], averages[1])
np.testing.assert_array_equal(after[0], weights[0])
np.testing.assert_array_equal(after[1], weights[1])
np.testing.assert_allclose(logs['validation_loss'], t._validation_loss(trainer, averages[0], 4),
                           rtol=1e-4)
"""
  result = run_on_two_cpus(code)
  assert result.returncode == 0, result.stderr[-2000:]
