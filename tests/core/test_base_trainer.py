"""Tests for official/core/base_trainer.py (Model Garden's constructor over our trainer)."""

import pytest
import tensorflow as tf

from official.core import base_trainer
from official.core import config_definitions as cfg
from official.utils.testing import mock_task


def _config() -> cfg.ExperimentConfig:
  return cfg.ExperimentConfig(trainer=cfg.TrainerConfig(optimizer_config=cfg.OptimizationConfig(
      {'optimizer': {'type': 'sgd', 'sgd': {'momentum': 0.0}},
       'learning_rate': {'type': 'constant', 'constant': {'learning_rate': 0.5}}})))


def _trainer(task=None, **kwargs) -> base_trainer.Trainer:
  config = _config()
  task = task or mock_task.MockTask(config.task)
  optimizer = task.create_optimizer(config.trainer.optimizer_config, config.runtime)
  return base_trainer.Trainer(config, task, model=task.build_model(), optimizer=optimizer,
                              **kwargs)


def test_trains_the_given_model_with_the_given_optimizer():
  task = mock_task.MockTask()
  config = _config()
  model = task.build_model()
  optimizer = task.create_optimizer(config.trainer.optimizer_config, config.runtime)
  trainer = base_trainer.Trainer(config, task, model=model, optimizer=optimizer)
  assert trainer.model is model and trainer.optimizer is optimizer and trainer.config is config
  assert trainer.manager is None and trainer.train_loss is trainer.training_loss
  logs = trainer.train(tf.constant(3))
  # The loss is the dense unit's output on zeros, its bias: 1 - 0.5 * step (SGD, gradient 1).
  assert logs['training_loss'] == pytest.approx((1.0 + 0.5 + 0.0) / 3)
  assert logs['learning_rate'] == pytest.approx(0.5)
  assert int(trainer.global_step.numpy()) == 3 and int(optimizer.iterations.numpy()) == 3


def test_given_datasets_replace_the_task_inputs():
  batches = tf.data.Dataset.from_tensors((tf.zeros([2, 2]), tf.zeros([2, 1], tf.int32)))
  trainer = _trainer(train_dataset=batches.repeat(), validation_dataset=batches.repeat(4))
  trainer.train(tf.constant(2))
  logs = trainer.evaluate(-1)  # the whole validation dataset: 4 batches
  assert logs['counter'] == 4.0
  assert logs['validation_loss'] == pytest.approx(0.0)  # bias 1 - 2 * 0.5
  assert [metric.name for metric in trainer.validation_metrics] == ['acc']


def test_evaluation_without_a_loss_in_the_task_logs():

  class NoLossTask(mock_task.MockTask):

    def validation_step(self, inputs, model, metrics=None):
      logs = super().validation_step(inputs, model, metrics)
      del logs[self.loss]
      return logs

  logs = _trainer(NoLossTask()).evaluate(tf.constant(3))
  assert 'validation_loss' not in logs and logs['counter'] == 3.0


def test_checkpoint_exporter_gets_every_evaluation():
  calls = []

  class Exporter:

    def maybe_export_checkpoint(self, checkpoint, logs, global_step):
      calls.append((checkpoint, dict(logs), global_step))

  trainer = _trainer(checkpoint_exporter=Exporter())
  trainer.train(tf.constant(1))
  logs = trainer.evaluate(tf.constant(2))
  assert len(calls) == 1
  checkpoint, exported_logs, step = calls[0]
  assert checkpoint is trainer.checkpoint and exported_logs == logs and step == 1


def test_config_without_a_field_is_named():

  class NoTask:
    trainer = cfg.TrainerConfig()

  task = mock_task.MockTask()
  with pytest.raises(AttributeError, match='needs a `task` field'):
    base_trainer.Trainer(NoTask(), task, task.build_model(), optimizer=None)


class _CountingTrainer(base_trainer._AsyncTrainer):  # pylint: disable=protected-access
  """Counts train and eval steps (as Model Garden's test of `_AsyncTrainer`)."""

  def __init__(self):
    self._strategy = tf.distribute.get_strategy()
    self.init_async()
    self.steps = tf.Variable(0, dtype=tf.int64)
    dataset = self.distribute_dataset(lambda ctx=None: tf.data.Dataset.range(3))
    base_trainer.orbit.StandardTrainer.__init__(self, dataset)
    base_trainer.orbit.StandardEvaluator.__init__(self, dataset)

  def train_loop_begin(self):
    self.steps.assign(0)

  def train_step(self, iterator):
    self.steps.assign_add(next(iterator))

  def train_loop_end(self):
    self.join()
    return int(self.steps.numpy())

  def eval_begin(self):
    self.steps.assign(0)

  def eval_step(self, iterator):
    self.steps.assign_add(next(iterator))

  def eval_end(self, *args):
    self.join()
    return int(self.steps.numpy())


def test_async_trainer_is_a_plain_orbit_trainer_without_parameter_servers():
  trainer = _CountingTrainer()
  assert trainer.train(tf.constant(3)) == 0 + 1 + 2
  assert trainer.evaluate(tf.constant(-1)) == 3
  with pytest.raises(ValueError, match='no coordinator'):
    trainer.coordinator_for_async()
