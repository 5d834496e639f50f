"""Keras `compile`/`fit`/`evaluate` with a task's loss and metrics: `TaskStepsMixin`.

The models our tasks build (`BertPretrainerV2`, `BertClassifier`, ...) list `TaskStepsMixin` before
`tf_keras.Model`, and each task's `build_model` hands them the task (`model.use_task_steps(self)`).
Compiled without a `loss`, such a model's `fit`/`evaluate` run the task's `train_step` /
`validation_step` (its `build_losses`, loss scaling and `process_metrics`) and report the task's
`build_metrics()` by name next to `loss` (the mean over the epoch), e.g. `masked_lm_accuracy`.
Compiled with a `loss`, or never given a task, the model keeps Keras' own steps. The task is held
outside Keras' tracking, so checkpoints and SavedModels of the model are unchanged.

Example:
  >>> task = masked_lm.MaskedLMTask(config)
  >>> model = task.build_model()               # a BertPretrainerV2 given the task
  >>> model.compile(tf_keras.optimizers.Adam(1e-4))
  >>> model.fit(task.build_inputs(config.train_data), steps_per_epoch=100, epochs=3)
"""

from typing import Any, Dict, List, Mapping, Optional

import tensorflow as tf
import tf_keras


class _TaskSteps:
  """The task a model trains with, and the metrics created at `compile` (a plain object: Keras
  and `tf.Module` do not track it)."""

  def __init__(self, task: Any):
    self.task = task
    self.metrics: Optional[List[tf_keras.metrics.Metric]] = None  # [mean loss, *task metrics]


class TaskStepsMixin:
  """Makes `compile(optimizer)` + `fit`/`evaluate` of a Keras model run a task's steps.

  List it before `tf_keras.Model` in a model class; `use_task_steps(task)` turns it on.
  """

  def use_task_steps(self, task: Any) -> 'TaskStepsMixin':
    """Trains with `task`'s steps when compiled without a loss; returns the model."""
    object.__setattr__(self, '_task_steps', _TaskSteps(task))
    return self

  def _steps(self) -> Optional[_TaskSteps]:
    steps = self.__dict__.get('_task_steps')
    return steps if steps is not None and steps.metrics is not None else None

  def compile(self, *args, **kwargs):  # pylint: disable=missing-function-docstring
    super().compile(*args, **kwargs)
    steps = self.__dict__.get('_task_steps')
    if steps is not None:
      # Created here, in the caller's distribution scope.
      steps.metrics = None if self.loss else (
          [tf_keras.metrics.Mean(name=steps.task.loss)] +
          list(steps.task.build_metrics(training=True)))

  @property
  def metrics(self):  # pylint: disable=missing-function-docstring
    # Keras resets these each epoch and its progress bar shows them as they are (running means).
    steps = self._steps()
    return super().metrics + (list(steps.metrics) if steps else [])

  def _task_logs(self, steps: _TaskSteps, step_logs: Mapping[str, tf.Tensor]
                 ) -> Dict[str, tf.Tensor]:
    loss_metric = steps.metrics[0]
    loss_metric.update_state(step_logs[steps.task.loss])
    return {metric.name: metric.result() for metric in steps.metrics}

  def train_step(self, data):  # pylint: disable=missing-function-docstring
    steps = self._steps()
    if steps is None:
      return super().train_step(data)
    return self._task_logs(steps, steps.task.train_step(data, self, self.optimizer,
                                                        metrics=steps.metrics[1:]))

  def test_step(self, data):  # pylint: disable=missing-function-docstring
    steps = self._steps()
    if steps is None:
      return super().test_step(data)
    return self._task_logs(steps, steps.task.validation_step(data, self,
                                                             metrics=steps.metrics[1:]))
