"""Model Garden's `base_trainer.Trainer` constructor over our `trainer.Trainer`.

Model Garden builds its trainer from a model and an optimizer made by the caller
(`Trainer(config, task, model, optimizer, ...)`); ours builds them from the task and owns the
checkpoint manager of a `model_dir`. This `Trainer` is ours (the same compiled train loop,
evaluation, loss checks) taking Model Garden's arguments: no `model_dir` (the caller manages
checkpoints, e.g. with a `tf.train.CheckpointManager` of `trainer.checkpoint`), optional
datasets instead of the task's inputs, and a checkpoint exporter called after each evaluation.
It runs under the strategy of the scope it is built in.

`_AsyncTrainer` is Model Garden's base for trainers written on Orbit's `StandardTrainer` /
`StandardEvaluator` that may run under a `ParameterServerStrategy`: there every loop is
scheduled on the workers through a `ClusterCoordinator`. Our `Trainer` itself is made for
synchronous strategies: it schedules nothing on parameter-server workers, and its evaluation
cannot read a parameter-server dataset.

Example:
  >>> with strategy.scope():
  ...   task = task_factory.get_task(params.task)
  ...   trainer = Trainer(params, task, model=task.build_model(),
  ...                     optimizer=task.create_optimizer(params.trainer.optimizer_config,
  ...                                                     params.runtime))
  >>> trainer.train(tf.constant(100))   # {'training_loss': ..., 'learning_rate': ..., ...}
  >>> trainer.evaluate(tf.constant(10))  # {'validation_loss': ..., <task metrics>}
"""

import functools
from typing import Any, Dict, List, Optional

import orbit
import tensorflow as tf
import tf_keras

from official.core import base_task
from official.core import config_definitions as cfg
from official.core import trainer as trainer_lib


class _AsyncTrainer(orbit.StandardTrainer, orbit.StandardEvaluator):
  """An Orbit trainer and evaluator whose loops, under a `ParameterServerStrategy`, are
  scheduled on the workers (`join` waits for them).

  A subclass sets `self._strategy`, calls `init_async()`, then the `StandardTrainer` /
  `StandardEvaluator` constructors with datasets from `distribute_dataset`, and calls `join()`
  in `train_loop_end` / `eval_end` before reading results. Under other strategies it is a plain
  Orbit trainer.
  """

  def init_async(self) -> None:
    """Creates the `ClusterCoordinator` when the strategy is a `ParameterServerStrategy`."""
    if not isinstance(self._strategy, tf.distribute.Strategy):
      raise TypeError(f'_AsyncTrainer: self._strategy must be a tf.distribute.Strategy, found '
                      f'{type(self._strategy).__name__}')
    self._is_async = isinstance(self._strategy,
                                tf.distribute.experimental.ParameterServerStrategy)
    self._coordinator = None
    if self._is_async:
      self._coordinator = tf.distribute.experimental.coordinator.ClusterCoordinator(
          self._strategy)

  def coordinator_for_async(self) -> tf.distribute.experimental.coordinator.ClusterCoordinator:
    """The coordinator.

    Raises:
      ValueError: `init_async` did not create one (not a parameter-server run).
    """
    if not getattr(self, '_coordinator', None):
      raise ValueError('_AsyncTrainer: no coordinator; call init_async() under a '
                       'ParameterServerStrategy first')
    return self._coordinator

  def join(self) -> None:
    """Waits for every scheduled loop (parameter-server runs only)."""
    if getattr(self, '_is_async', False):
      self.coordinator_for_async().join()

  def create_train_loop_fn(self):
    """Orbit's train loop; under a parameter-server strategy, a function scheduling it."""
    loop = super().create_train_loop_fn()
    if not getattr(self, '_is_async', False):
      return loop

    def schedule(iterator, num_steps):
      self.coordinator_for_async().schedule(loop, args=(iterator, num_steps))

    return schedule

  def create_eval_loop_fn(self, has_state: bool):
    """Orbit's eval loop; under a parameter-server strategy, a function scheduling it.

    Raises:
      ValueError: a stateful evaluation (`eval_begin` returns a state) on parameter servers.
    """
    loop = super().create_eval_loop_fn(has_state)
    if not getattr(self, '_is_async', False):
      return loop
    if has_state:
      raise ValueError('_AsyncTrainer: a stateful evaluation (eval_begin returning a state) '
                       'cannot run on parameter servers')

    def schedule(iterator, num_steps, state=None, reduce_fn=None):
      del state, reduce_fn
      self.coordinator_for_async().schedule(loop, args=(iterator, num_steps))

    return schedule

  def distribute_dataset(self, dataset_or_fn: Any, *args: Any, **kwargs: Any) -> Any:
    """`orbit.utils.make_distributed_dataset` of the strategy; per worker on parameter servers.

    Args:
      dataset_or_fn: a `tf.data.Dataset`, or a function returning one (it may take an
        `input_context` argument).
      *args, **kwargs: passed to `dataset_or_fn`.
    """
    make = functools.partial(orbit.utils.make_distributed_dataset, self._strategy, dataset_or_fn,
                             *args, **kwargs)
    if getattr(self, '_is_async', False):
      return self.coordinator_for_async().create_per_worker_dataset(tf.function(make))
    return make()


class Trainer(trainer_lib.Trainer):
  """Our `trainer.Trainer` with Model Garden's constructor (see the module docstring).

  Args:
    config: the experiment config.
    task: the task.
    model: the model (built by the caller, e.g. `task.build_model()`).
    optimizer: the optimizer (e.g. `task.create_optimizer(...)`), used as given unless
      `trainer.skip_nonfinite_steps` asks for the skipping wrapper.
    train: prepare training (the train input).
    evaluate: prepare evaluation (kept for Model Garden's signature: the validation input is
      built when `evaluate` runs).
    train_dataset: a dataset (or distributed dataset) instead of `config.task.train_data`'s.
    validation_dataset: likewise instead of `config.task.validation_data`'s; iterated anew by
      each evaluation.
    checkpoint_exporter: an object with `maybe_export_checkpoint(checkpoint, logs, step)`
      (e.g. `best_checkpoint.BestCheckpointExporter`), called after each evaluation.

  Raises:
    AttributeError: `config` lacks `trainer` or `task` (or the data config of an input that
      was not given).
  """

  def __init__(self, config: cfg.ExperimentConfig, task: base_task.Task, model: tf_keras.Model,
               optimizer: tf_keras.optimizers.Optimizer, train: bool = True,
               evaluate: bool = True, train_dataset: Any = None, validation_dataset: Any = None,
               checkpoint_exporter: Any = None):
    _check_config(config, train_data=train and train_dataset is None,
                  validation_data=evaluate and validation_dataset is None)
    super().__init__(tf.distribute.get_strategy(), task, config, model_dir=None, train=train,
                     model=model, optimizer=optimizer, train_dataset=train_dataset,
                     validation_dataset=validation_dataset)
    self._checkpoint_exporter = checkpoint_exporter

  @property
  def config(self) -> cfg.ExperimentConfig:
    """The experiment config (`params`)."""
    return self.params

  @property
  def train_loss(self) -> tf_keras.metrics.Mean:
    """The mean training loss of the summary window (`training_loss`)."""
    return self.training_loss

  @property
  def validation_metrics(self) -> List[tf_keras.metrics.Metric]:
    """The task's evaluation metrics (`eval_metrics`)."""
    return self.eval_metrics

  @property
  def checkpoint_exporter(self) -> Any:
    """The checkpoint exporter given to the constructor (or None)."""
    return self._checkpoint_exporter

  def evaluate(self, num_steps: Optional[Any] = None) -> Dict[str, float]:
    """One evaluation (`trainer.Trainer.evaluate`), then the checkpoint exporter, if any."""
    logs = super().evaluate(num_steps)
    if self._checkpoint_exporter is not None:
      self._checkpoint_exporter.maybe_export_checkpoint(self.checkpoint, logs,
                                                        int(self.global_step.numpy()))
    return logs


def _check_config(config: Any, train_data: bool, validation_data: bool) -> None:
  """Raises `AttributeError` naming the first field the trainer needs that `config` lacks."""
  needed = ['trainer', 'task']
  if train_data:
    needed.append('task.train_data')
  if validation_data:
    needed.append('task.validation_data')
  for path in needed:
    node = config
    for part in path.split('.'):
      if not hasattr(node, part):
        raise AttributeError(f'config: the trainer needs a `{path}` field; '
                             f'{type(config).__name__} has none')
      node = getattr(node, part)
