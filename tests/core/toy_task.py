"""A tiny registered experiment for trainer tests: linear regression `y = x . w` on synthetic data.

Register it in train.py with `--experiment_module=tests.core.toy_task
--experiment=test/toy_regression` (`TOY`); `train_py` runs train.py's `main` with it in this
process (`TRAIN_PY` is the command of a real child process, for signal tests), `run_in_process`
runs the experiment through `train_lib` (`runner_in_process` builds the runner, for a test that
needs its trainer), `checkpoint_steps` lists the checkpoints a run kept.

Example:
  >>> result = train_py(*TOY, f'--model_dir={tmp_path}', '--mode=train')
  >>> result.returncode, checkpoint_steps(tmp_path)
  (0, [5, 10, 15, 20])
"""

import dataclasses
import sys
from typing import List

import numpy as np
import tensorflow as tf
import tf_keras

from official.common import distribute_utils
from official.core import base_task
from official.core import config_definitions as cfg
from official.core import exp_factory
from official.core import task_factory
from official.core import task_model
from official.core import train_lib
from official.modeling import hyperparams
from official.modeling import optimization
from tests import cli

TRUE_WEIGHTS = np.array([1.0, -2.0, 0.5, 3.0], np.float32)
# The train.py flags of the toy experiment.
TOY = ['--experiment_module=tests.core.toy_task', '--experiment=test/toy_regression']
# `python -m official.nlp.train` with the toy experiment: a child process (run it with cwd=ROOT
# and env=tests.processes.subprocess_env()).
TRAIN_PY = [sys.executable, '-m', 'official.nlp.train', *TOY]


@dataclasses.dataclass
class ToyModelConfig(hyperparams.Config):
  width: int = hyperparams.field(4, ge=1)


@dataclasses.dataclass
class ToyTaskConfig(cfg.TaskConfig):
  model: ToyModelConfig = dataclasses.field(default_factory=ToyModelConfig)
  train_data: cfg.DataConfig = dataclasses.field(
      default_factory=lambda: cfg.DataConfig(input_path='synthetic', global_batch_size=8,
                                             is_training=True))
  validation_data: cfg.DataConfig = dataclasses.field(
      default_factory=lambda: cfg.DataConfig(input_path='synthetic', global_batch_size=8,
                                             is_training=False))
  # The first `nan_batches` training batches get NaN labels (to test skip_nonfinite_steps).
  nan_batches: int = 0


class ToyModel(task_model.TaskStepsMixin, tf_keras.Sequential):
  """A Sequential model that `fit` trains with its task's steps when compiled without a loss."""


@task_factory.register_task_cls(ToyTaskConfig)
class ToyRegressionTask(base_task.Task):
  """Learns the weights of a linear function; the loss is the mean squared error."""

  def build_model(self) -> tf_keras.Model:
    width = self.task_config.model.width
    model = ToyModel([tf_keras.layers.Dense(1, use_bias=False, kernel_initializer='zeros')])
    model.build([None, width])
    return model.use_task_steps(self)

  def build_inputs(self, params, input_context=None) -> tf.data.Dataset:
    width = self.task_config.model.width
    batch_size = params.global_batch_size
    if input_context:
      batch_size = input_context.get_per_replica_batch_size(batch_size)
    rng = np.random.default_rng(0 if params.is_training else 1)
    x = rng.normal(size=(256, width)).astype(np.float32)
    y = x @ np.resize(TRUE_WEIGHTS, width)[:, None]
    if params.is_training and self.task_config.nan_batches:
      y[:self.task_config.nan_batches * batch_size] = np.nan
    dataset = tf.data.Dataset.from_tensor_slices((x, y))
    if input_context and input_context.num_input_pipelines > 1:
      # Workers take interleaved examples: their batches together are the one-process batch.
      dataset = dataset.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    if params.is_training:
      dataset = dataset.repeat()
    return dataset.batch(batch_size, drop_remainder=True)

  def build_losses(self, labels, model_outputs, aux_losses=None) -> tf.Tensor:
    # Under a mixed-precision policy the outputs are bfloat16/float16; the loss stays float32.
    error = tf.cast(labels, tf.float32) - tf.cast(model_outputs, tf.float32)
    return tf.reduce_mean(tf.square(error))

  def build_metrics(self, training: bool = True):
    del training
    return [tf_keras.metrics.MeanAbsoluteError(name='mean_absolute_error')]


@exp_factory.register_config_factory('test/toy_regression')
def toy_regression() -> cfg.ExperimentConfig:
  return cfg.ExperimentConfig(
      task=ToyTaskConfig(),
      trainer=cfg.TrainerConfig(
          train_steps=20, steps_per_loop=5, summary_interval=5, checkpoint_interval=5,
          validation_interval=10, validation_steps=4,
          optimizer_config=optimization.OptimizationConfig.from_dict({
              'optimizer': {'type': 'sgd', 'sgd': {'momentum': 0.0}},
              'learning_rate': {'type': 'polynomial', 'polynomial': {
                  'initial_learning_rate': 0.1, 'decay_steps': 20, 'end_learning_rate': 0.01}},
          })),
      runtime=cfg.RuntimeConfig(distribution_strategy='one_device'))


def train_py(*args: str) -> cli.CliResult:
  """What `python -m official.nlp.train *args` prints and exits with, run in this process
  (`tests.cli.run_app`): `returncode`, `stdout`, `stderr`."""
  # Function-level: `python -m official.nlp.train --experiment_module=tests.core.toy_task` imports
  # this module; importing official.nlp.train there too would define its flags twice.
  from official.nlp import train  # pylint: disable=g-import-not-at-top
  return cli.run_app(train.main, ['train', *args])


def runner_in_process(model_dir, mode: str = 'train', allow_config_change: bool = False,
                      run_post_eval: bool = False,
                      **trainer_overrides) -> train_lib.OrbitExperimentRunner:
  """The runner of the toy experiment on one device, with `trainer_overrides` (e.g.
  `train_steps=10`), built but not run: `runner.trainer` is there before and after `run()`."""
  params = exp_factory.get_exp_config('test/toy_regression')
  params.override({'trainer': trainer_overrides})
  strategy = distribute_utils.get_distribution_strategy('one_device')
  with strategy.scope():
    task = task_factory.get_task(params.task, logging_dir=str(model_dir))
  return train_lib.OrbitExperimentRunner(strategy, task, mode, params, str(model_dir),
                                         allow_config_change=allow_config_change,
                                         run_post_eval=run_post_eval)


def run_in_process(model_dir, mode: str = 'train', allow_config_change: bool = False,
                   run_post_eval: bool = False, **trainer_overrides):
  """Runs the toy experiment in this process on one device (as `train_lib.run_experiment`), with
  `trainer_overrides` (e.g. `train_steps=10`); returns its (model, logs)."""
  return runner_in_process(model_dir, mode, allow_config_change, run_post_eval,
                           **trainer_overrides).run()


def checkpoint_steps(model_dir) -> List[int]:
  """The steps of the checkpoints `model_dir` keeps (its checkpoint state), in order."""
  state = tf.train.get_checkpoint_state(str(model_dir))
  return sorted(int(p.rsplit('-', 1)[1]) for p in state.all_model_checkpoint_paths)
