"""`Task`: everything about one training objective (model, inputs, loss, metrics, steps).

The trainer stays generic: it calls `build_model`, `create_optimizer`, `build_inputs`,
`build_metrics`, `train_step` and `validation_step`, and `initialize` to restore `init_checkpoint`.

Keras-native use: a model class that lists `task_model.TaskStepsMixin` and is handed the task in
`build_model` (`model.use_task_steps(self)`, as every NLP task does) trains the task's loss and
reports its metrics in `fit`/`evaluate` when compiled without a loss; the metrics of `build_metrics`
may be created eagerly and updated inside a `tf.function` (e.g. around `validation_step`):

  >>> model = task.build_model()
  >>> model.compile(tf_keras.optimizers.Adam(1e-4))
  >>> model.fit(task.build_inputs(params.train_data),
  ...           steps_per_epoch=100)  # loss, masked_lm_accuracy, ...

Example:
  >>> class MyTask(Task):
  ...   def build_model(self): return tf_keras.Sequential([tf_keras.layers.Dense(1)])
  ...   def build_inputs(self, params, input_context=None): return make_dataset(params)
  ...   def build_losses(self, labels, model_outputs, aux_losses=None):
  ...     return tf.reduce_mean(tf.square(labels - model_outputs))
"""

import abc
import logging
from typing import Any, Dict, List, Mapping, Optional, Tuple

import tensorflow as tf
import tf_keras

from official.core import checkpointing
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
    ckpt_path = checkpointing.resolve_checkpoint(self.task_config.init_checkpoint)
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

  def eval_forward(self, inputs: Any, model: tf_keras.Model,
                   metrics: Optional[List[tf_keras.metrics.Metric]] = None
                   ) -> Tuple[Any, Any, tf.Tensor]:
    """`(labels, model outputs, loss)` of one eval batch (`inference_step`); updates `metrics`.

    Example:
      >>> labels, outputs, loss = task.eval_forward((features, labels), model, metrics)
    """
    features, labels = self._split(inputs)
    outputs = self.inference_step(features, model)
    loss = self.build_losses(labels, outputs, aux_losses=model.losses)
    if metrics:
      self.process_metrics(metrics, labels, outputs)
    return labels, outputs, loss

  def validation_step(self, inputs: Any, model: tf_keras.Model,
                      metrics: Optional[List[tf_keras.metrics.Metric]] = None
                      ) -> Dict[str, tf.Tensor]:
    """Forward pass and metric updates on one eval batch (`eval_forward`)."""
    _, _, loss = self.eval_forward(inputs, model, metrics)
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
