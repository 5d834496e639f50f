"""A tiny registered task and experiment (`mock`) for trainer tests (Model Garden's names).

The model is one dense unit over 2 zero features (bias 1) whose mean output is also added as a
model loss; the data is an endless stream of zeros with label 0.

Example:
  >>> params = exp_factory.get_exp_config('mock')
  >>> task = task_factory.get_task(params.task)
  >>> model = task.build_model()
"""

import dataclasses
from typing import Any, Dict, List, Optional

import numpy as np
import tensorflow as tf
import tf_keras

from official.core import base_task
from official.core import config_definitions as cfg
from official.core import exp_factory
from official.core import task_factory


class MockModel(tf_keras.Model):
  """Wraps `network` and adds the mean of its output as a model loss (an `aux_losses` entry)."""

  def __init__(self, network: tf_keras.Model):
    super().__init__()
    self.network = network

  def call(self, inputs):  # pylint: disable=arguments-differ
    outputs = self.network(inputs)
    self.add_loss(tf.reduce_mean(outputs))
    return outputs


@dataclasses.dataclass
class MockTaskConfig(cfg.TaskConfig):
  """The mock task's config (the base task fields only)."""


@task_factory.register_task_cls(MockTaskConfig)
class MockTask(base_task.Task):
  """The mock task: a dense unit, accuracy as metric, a constant `counter` in the eval logs."""

  def __init__(self, params: Optional[MockTaskConfig] = None, logging_dir: Optional[str] = None,
               name: Optional[str] = None):
    super().__init__(params if params is not None else MockTaskConfig(), logging_dir=logging_dir,
                     name=name)

  def build_model(self, *args, **kwargs) -> tf_keras.Model:
    del args, kwargs
    inputs = tf_keras.layers.Input(shape=(2,), name='random', dtype=tf.float32)
    outputs = tf_keras.layers.Dense(1, bias_initializer=tf_keras.initializers.Ones(),
                                    name='dense_0')(inputs)
    return MockModel(tf_keras.Model(inputs=inputs, outputs=outputs))

  def build_losses(self, labels, model_outputs, aux_losses=None) -> tf.Tensor:
    """The sum of the model's own losses (`aux_losses`); 0 without any."""
    del labels, model_outputs
    return tf.add_n(list(aux_losses)) if aux_losses else tf.constant(0.0)

  def build_metrics(self, training: bool = True) -> List[tf_keras.metrics.Metric]:
    del training
    return [tf_keras.metrics.Accuracy(name='acc')]

  def validation_step(self, inputs, model: tf_keras.Model, metrics=None) -> Dict[str, tf.Tensor]:
    logs = super().validation_step(inputs, model, metrics)
    logs['counter'] = tf.constant(1, dtype=tf.float32)
    return logs

  def build_inputs(self, params: cfg.DataConfig) -> tf.data.Dataset:  # pylint: disable=arguments-differ
    del params
    features = tf.data.Dataset.range(1).repeat().map(
        lambda _: (tf.zeros([2], tf.float32), tf.zeros([1], tf.int32)))
    return features.batch(2, drop_remainder=True).prefetch(1)

  def aggregate_logs(self, state: Any = None, step_outputs: Any = None) -> Dict[str, list]:
    """Per key, a list of the per-replica values of each step, stacked."""
    state = {} if state is None else state
    for key, values in (step_outputs or {}).items():
      state.setdefault(key, []).append(np.stack([np.asarray(v) for v in values]))
    return state

  def reduce_aggregated_logs(self, aggregated_logs: Any,
                             global_step: Optional[tf.Tensor] = None) -> Dict[str, float]:
    """The sum of every aggregated value per key (the `counter` counts eval steps)."""
    del global_step
    return {k: float(np.sum(np.stack(v))) for k, v in (aggregated_logs or {}).items()}


@exp_factory.register_config_factory('mock')
def mock_experiment() -> cfg.ExperimentConfig:
  """The `mock` experiment: the mock task with the default trainer."""
  return cfg.ExperimentConfig(task=MockTaskConfig(), trainer=cfg.TrainerConfig())
