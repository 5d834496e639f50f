"""`Task`: everything about one training objective (model, inputs, loss, metrics, steps).

The trainer stays generic: it calls `build_model`, `create_optimizer`, `build_inputs`, `build_metrics`,
`train_step` and `validation_step`, and `initialize` to restore `init_checkpoint`.

Keras-native use works too: the model of `build_model` compiled without a loss trains the task's loss
and reports its metrics in `fit`/`evaluate` (`attach_to_model`), and the metrics of `build_metrics`
may be created eagerly and updated inside a `tf.function` (e.g. around `validation_step`):

  >>> model = task.build_model()
  >>> model.compile(tf_keras.optimizers.Adam(1e-4))
  >>> model.fit(task.build_inputs(params.train_data), steps_per_epoch=100)  # loss, masked_lm_accuracy, ...

Example:
  >>> class MyTask(Task):
  ...   def build_model(self): return tf_keras.Sequential([tf_keras.layers.Dense(1)])
  ...   def build_inputs(self, params, input_context=None): return make_dataset(params)
  ...   def build_losses(self, labels, model_outputs, aux_losses=None):
  ...     return tf.reduce_mean(tf.square(labels - model_outputs))
"""

import abc
import functools
import logging
from typing import Any, Dict, List, Mapping, Optional

import tensorflow as tf
import tf_keras

from official.core import config_definitions as cfg
from official.modeling import optimization


class Task(tf.Module, metaclass=abc.ABCMeta):
  """The base class of tasks (Model Garden's interface).

  Args:
    params: the task config.
    logging_dir: where the task may write extra logs (the model_dir).
    name: the module name.
  """

  loss = 'loss'

  def __init_subclass__(cls, **kwargs):
    """Makes the models of every task class trainable with Keras `compile`/`fit` (`attach_to_model`)."""
    super().__init_subclass__(**kwargs)
    build_model = cls.__dict__.get('build_model')
    if build_model is None or getattr(build_model, '__isabstractmethod__', False):
      return

    @functools.wraps(build_model)
    def build_model_for_keras(self, *args, **kwargs):
      model = build_model(self, *args, **kwargs)
      if isinstance(model, tf_keras.Model):
        attach_to_model(self, model)
      return model

    cls.build_model = build_model_for_keras

  def __init__(self, params: cfg.TaskConfig, logging_dir: Optional[str] = None,
               name: Optional[str] = None):
    super().__init__(name=name)
    self._task_config = params
    self._logging_dir = logging_dir

  @property
  def task_config(self) -> cfg.TaskConfig:
    return self._task_config

  @property
  def logging_dir(self) -> Optional[str]:
    return self._logging_dir

  @classmethod
  def create_optimizer(cls, optimizer_config: optimization.OptimizationConfig,
                       runtime_config: Optional[cfg.RuntimeConfig] = None
                       ) -> tf_keras.optimizers.Optimizer:
    """Builds the optimizer with its learning-rate schedule; float16 adds dynamic loss scaling."""
    factory = optimization.OptimizerFactory(optimizer_config)
    optimizer = factory.build_optimizer(factory.build_learning_rate())
    if runtime_config is not None and runtime_config.mixed_precision_dtype == 'float16':
      loss_scale = runtime_config.loss_scale
      if loss_scale is None or loss_scale == 'dynamic':
        optimizer = tf_keras.mixed_precision.LossScaleOptimizer(optimizer)
      else:
        optimizer = tf_keras.mixed_precision.LossScaleOptimizer(
            optimizer, dynamic=False, initial_scale=float(loss_scale))
    return optimizer

  def initialize(self, model: tf_keras.Model) -> None:
    """Restores `init_checkpoint` (a directory or a prefix) into the model, if one is set.

    Uses `model.checkpoint_items` when the model has them (partial restore of e.g. the encoder).
    """
    if not self.task_config.init_checkpoint:
      return
    ckpt_path = resolve_checkpoint(self.task_config.init_checkpoint)
    if ckpt_path is None:
      return
    items = getattr(model, 'checkpoint_items', None) or {'model': model}
    status = tf.train.Checkpoint(**items).read(ckpt_path)
    status.expect_partial().assert_existing_objects_matched()
    logging.info('Restored %s from %s', sorted(items), ckpt_path)

  def write_model_dir_assets(self, model_dir: str) -> None:
    """Writes what `model_dir` should carry besides checkpoints and `params.yaml` (default:
    nothing; the NLP tasks write the vocabulary of their records). Called by `train_lib` on
    the chief when training starts."""
    del model_dir

  @abc.abstractmethod
  def build_model(self) -> tf_keras.Model:
    """Creates the model (inside the distribution strategy's scope)."""

  def build_inputs(self, params: cfg.DataConfig,
                   input_context: Optional[tf.distribute.InputContext] = None) -> tf.data.Dataset:
    """Returns the dataset of `params`, batched per replica when `input_context` is given."""
    raise NotImplementedError(f'{type(self).__name__} does not implement build_inputs')

  def build_losses(self, labels: Any, model_outputs: Any,
                   aux_losses: Optional[List[tf.Tensor]] = None) -> tf.Tensor:
    """Returns the scalar loss."""
    raise NotImplementedError(f'{type(self).__name__} does not implement build_losses')

  def build_metrics(self, training: bool = True) -> List[tf_keras.metrics.Metric]:
    """The metrics updated by the train and validation steps."""
    del training
    return []

  def process_metrics(self, metrics: List[tf_keras.metrics.Metric], labels: Any,
                      model_outputs: Any, **kwargs) -> None:
    """Updates `metrics` from a batch."""
    del kwargs
    for metric in metrics:
      metric.update_state(labels, model_outputs)

  @staticmethod
  def _split(inputs: Any):
    if isinstance(inputs, (tuple, list)) and len(inputs) == 2:
      return inputs[0], inputs[1]
    return inputs, inputs

  def train_step(self, inputs: Any, model: tf_keras.Model,
                 optimizer: tf_keras.optimizers.Optimizer,
                 metrics: Optional[List[tf_keras.metrics.Metric]] = None) -> Dict[str, tf.Tensor]:
    """One optimizer step on a per-replica batch `(features, labels)` (or a dict holding both).

    The loss is divided by the replicas in sync so the summed gradients are the global mean.
    """
    features, labels = self._split(inputs)
    with tf.GradientTape() as tape:
      outputs = model(features, training=True)
      loss = self.build_losses(labels, outputs, aux_losses=model.losses)
      scaled_loss = scale_loss(loss / tf.distribute.get_strategy().num_replicas_in_sync, optimizer)
    apply_gradients(tape, scaled_loss, model, optimizer)
    if metrics:
      self.process_metrics(metrics, labels, outputs)
    return {self.loss: loss}

  def validation_step(self, inputs: Any, model: tf_keras.Model,
                      metrics: Optional[List[tf_keras.metrics.Metric]] = None
                      ) -> Dict[str, tf.Tensor]:
    """Forward pass and metric updates on one eval batch."""
    features, labels = self._split(inputs)
    outputs = self.inference_step(features, model)
    loss = self.build_losses(labels, outputs, aux_losses=model.losses)
    if metrics:
      self.process_metrics(metrics, labels, outputs)
    return {self.loss: loss}

  def inference_step(self, inputs: Any, model: tf_keras.Model) -> Any:
    """The model's outputs for `inputs` (inference mode)."""
    return model(inputs, training=False)

  def aggregate_logs(self, state: Any = None, step_logs: Optional[Mapping[str, Any]] = None) -> Any:
    """Accumulates per-step outputs across an evaluation (none by default)."""
    del step_logs
    return state

  def reduce_aggregated_logs(self, aggregated_logs: Any,
                             global_step: Optional[tf.Tensor] = None) -> Dict[str, float]:
    """Turns aggregated logs into extra eval metrics (none by default)."""
    del aggregated_logs, global_step
    return {}


def attach_to_model(task: 'Task', model: tf_keras.Model) -> tf_keras.Model:
  """Lets `model.compile(optimizer)` + `model.fit(...)` train the task's loss and report its metrics.

  Every `Task.build_model` calls it on the model it returns. When the model is compiled without a
  `loss`, its `train_step`/`test_step` become the task's `train_step`/`validation_step` (the task's
  `build_losses`, loss scaling and `process_metrics`), with the task's `build_metrics()` created at
  `compile` (in the caller's distribution scope) and reported by name next to `loss` (the mean over
  the epoch), e.g. `masked_lm_accuracy`, `lm_example_loss`. Compiled with a `loss`, the model keeps
  Keras' own steps. The task is held in closures, not as a tracked attribute, so checkpoints and
  SavedModels of the model are unchanged.

  Args:
    task: the task whose steps the model should use.
    model: a model built by `task`.

  Returns:
    `model` (changed in place; a second call does nothing).

  Example:
    >>> task = MaskedLMTask(config)
    >>> model = task.build_model()
    >>> model.compile(tf_keras.optimizers.Adam(1e-4))
    >>> model.fit(task.build_inputs(config.train_data), steps_per_epoch=100, epochs=3)
  """
  if model.__dict__.get('_task_steps_attached'):
    return model
  keras_compile, keras_reset_metrics = model.compile, model.reset_metrics
  keras_train_step, keras_test_step = model.train_step, model.test_step
  # The task's metrics once compiled without a loss: [mean loss, *task.build_metrics()].
  state: Dict[str, List[tf_keras.metrics.Metric]] = {}

  def compile(*args, **kwargs):  # pylint: disable=redefined-builtin
    keras_compile(*args, **kwargs)
    state.clear()
    if not model.loss:
      state['metrics'] = [tf_keras.metrics.Mean(name=task.loss)] + list(
          task.build_metrics(training=True))

  def reset_metrics():
    keras_reset_metrics()
    for metric in state.get('metrics', []):
      metric.reset_state()

  def logs(step_logs: Mapping[str, tf.Tensor]) -> Dict[str, tf.Tensor]:
    loss_metric, *metrics = state['metrics']
    loss_metric.update_state(step_logs[task.loss])
    return {metric.name: metric.result() for metric in state['metrics']}

  def train_step(data):
    if 'metrics' not in state:
      return keras_train_step(data)
    return logs(task.train_step(data, model, model.optimizer, metrics=state['metrics'][1:]))

  def test_step(data):
    if 'metrics' not in state:
      return keras_test_step(data)
    return logs(task.validation_step(data, model, metrics=state['metrics'][1:]))

  # Instance attributes shadow the class methods; object.__setattr__ keeps Keras' tracking away.
  for name, value in (('compile', compile), ('reset_metrics', reset_metrics),
                      ('train_step', train_step), ('test_step', test_step),
                      ('_task_steps_attached', True)):
    object.__setattr__(model, name, value)
  return model


def resolve_checkpoint(path: str) -> Optional[str]:
  """The checkpoint prefix of `path`: a directory's latest checkpoint, or `path` itself.

  An existing directory that holds no checkpoint yet gives None with a warning (nothing to restore,
  as in Model Garden, whose tests point `init_checkpoint` at an empty temporary directory).

  Raises:
    FileNotFoundError: naming `path` (as `task.init_checkpoint`) when `path` is neither a directory
      nor a checkpoint prefix.

  Example:
    resolve_checkpoint('runs/bert_mini')  # -> 'runs/bert_mini/ckpt-1000'
  """
  if tf.io.gfile.isdir(path):
    prefix = tf.train.latest_checkpoint(path)
    if prefix is None and not tf.io.gfile.exists(f'{path.rstrip("/")}/checkpoint'):
      logging.warning('task.init_checkpoint %r: the directory holds no checkpoint; nothing restored',
                      path)
      return None
  else:
    prefix = path
  if not prefix or not tf.io.gfile.exists(f'{prefix}.index'):
    raise FileNotFoundError(f'task.init_checkpoint {path!r}: no checkpoint found')
  return prefix


def scale_loss(loss: tf.Tensor, optimizer: Any) -> tf.Tensor:
  """`loss` multiplied by the loss scale of a `LossScaleOptimizer` (float16); else `loss`.

  Call it inside the `GradientTape`; `apply_gradients` undoes the scale on the gradients.
  """
  if isinstance(optimizer, tf_keras.mixed_precision.LossScaleOptimizer):
    return optimizer.get_scaled_loss(loss)
  return loss


def apply_gradients(tape: tf.GradientTape, scaled_loss: tf.Tensor, model: tf_keras.Model,
                    optimizer: Any) -> None:
  """Applies the gradients of `scaled_loss` to the model's trainable variables.

  Loss scaling is undone first; variables without a gradient (e.g. a pooler no loss reads) are left
  out of the update.
  """
  variables = model.trainable_variables
  grads = tape.gradient(scaled_loss, variables)
  if isinstance(optimizer, tf_keras.mixed_precision.LossScaleOptimizer):
    grads = optimizer.get_unscaled_gradients(grads)
  optimizer.apply_gradients([(g, v) for g, v in zip(grads, variables) if g is not None])
