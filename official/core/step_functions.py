"""The optimizer and replica train step of a `Trainer`: plain, XLA, or with gradient accumulation.

Two stand-ins for the optimizer let the task's own `train_step` serve every variant unchanged:
`GradientRecorder` (records the gradients of an XLA-compiled forward and backward pass, which are
applied outside the compiled function) and `GradientAccumulator` (adds each micro-batch's gradients
to accumulators; one update applies their mean).

Example:
  >>> step_fn = replica_train_step(task, model, optimizer, metrics, record_loss,
  ...                              use_xla=False, num_replicas=1)
  >>> strategy.run(step_fn, args=(next(iterator),))
"""

import logging
from typing import Any, Callable, List, Optional

import tensorflow as tf
import tf_keras

from official.core import config_definitions as cfg


def build_optimizer(task: Any, params: cfg.ExperimentConfig,
                    optimizer: Optional[tf_keras.optimizers.Optimizer] = None
                    ) -> tf_keras.optimizers.Optimizer:
  """The task's optimizer (`task.create_optimizer`, or `optimizer` when given); with
  `trainer.skip_nonfinite_steps` wrapped to skip the update of a step whose gradients are not
  finite.

  Raises:
    ValueError: gradient accumulation with float16 loss scaling (naming the field).
  """
  trainer = params.trainer
  if optimizer is None:
    optimizer = task.create_optimizer(trainer.optimizer_config, params.runtime)
  loss_scaled = isinstance(optimizer, tf_keras.mixed_precision.LossScaleOptimizer)
  if trainer.gradient_accumulation_steps > 1 and loss_scaled:
    raise ValueError('trainer.gradient_accumulation_steps: expected 1 with float16 loss '
                     f'scaling, found {trainer.gradient_accumulation_steps} (use bfloat16 or '
                     'float32)')
  if trainer.skip_nonfinite_steps and not loss_scaled:
    # A dynamic loss scale never goes below 1: with scale 1 and no growth, the wrapper changes
    # nothing but skipping the update of a step whose gradients are not finite.
    optimizer = tf_keras.mixed_precision.LossScaleOptimizer(
        optimizer, initial_scale=1.0, dynamic_growth_steps=2**31 - 1)
  return optimizer


def use_xla(runtime: cfg.RuntimeConfig, strategy: tf.distribute.Strategy) -> bool:
  """Whether the steps are compiled with XLA: `runtime.enable_xla` on GPU/TPU; on a CPU-only run
  only with `runtime.xla_on_cpu` too (XLA's CPU backend is slower than TF's oneDNN kernels)."""
  if not runtime.enable_xla:
    return False
  if runtime.xla_on_cpu or isinstance(strategy, tf.distribute.TPUStrategy):
    return True
  try:
    devices = list(strategy.extended.worker_devices)
  except RuntimeError:  # the default strategy: TensorFlow places ops on a GPU when there is one
    devices = [d.name for d in tf.config.list_logical_devices('GPU')[:1]]
  if any('GPU' in device.upper() for device in devices):
    return True
  logging.info('runtime.enable_xla is not applied on CPU (XLA is slower there than TensorFlow\'s '
               'own kernels); set runtime.xla_on_cpu=true to compile anyway.')
  return False


class GradientRecorder:
  """Stands in for an optimizer inside a compiled step: records the gradients instead of applying
  them; every other attribute (learning_rate, iterations, ...) is the optimizer's."""

  def __init__(self, optimizer: tf_keras.optimizers.Optimizer):
    self._optimizer = optimizer
    self.grads_and_vars: list = []

  def apply_gradients(self, grads_and_vars, *args, **kwargs) -> None:
    del args, kwargs
    self.grads_and_vars = list(grads_and_vars)

  def __getattr__(self, name: str) -> Any:
    return getattr(self._optimizer, name)


class GradientAccumulator:
  """Stands in for the optimizer in the task's step of a micro-batch: `apply_gradients` adds the
  gradients divided by `steps` to non-trainable accumulators; `apply` (in a replica context) then
  updates the weights once with the accumulated mean gradient and zeroes the accumulators.

  The accumulators are per-replica (`ON_READ`): micro-batches need no all-reduce; the optimizer
  all-reduces the accumulated gradients once per update. Every other attribute is the optimizer's.

  Args:
    optimizer: the real optimizer.
    model: the model (built) whose trainable variables get accumulators.
    steps: micro-batches per update.

  Raises:
    ValueError: the model has no variables yet.
  """

  def __init__(self, optimizer: tf_keras.optimizers.Optimizer, model: tf_keras.Model, steps: int):
    if not model.built or not model.trainable_variables:
      raise ValueError('trainer.gradient_accumulation_steps: expected a model whose variables '
                       'exist after build_model, found an unbuilt model')
    self._optimizer, self._steps = optimizer, steps
    self._accumulators = {
        v.ref(): tf.Variable(tf.zeros(v.shape, v.dtype), trainable=False,
                             name='gradient_accumulator',
                             synchronization=tf.VariableSynchronization.ON_READ,
                             aggregation=tf.VariableAggregation.SUM)
        for v in model.trainable_variables}
    self._variables: list = []  # the variables the task's step gives gradients to (traced)

  def apply_gradients(self, grads_and_vars, *args, **kwargs) -> None:
    del args, kwargs
    pairs = [(g, v) for g, v in grads_and_vars if g is not None]
    self._variables = [v for _, v in pairs]
    for g, v in pairs:
      self._accumulators[v.ref()].assign_add(tf.convert_to_tensor(g) / self._steps)

  def apply(self) -> None:
    """One optimizer update with the accumulated gradients; zeroes them."""
    accumulators = [self._accumulators[v.ref()] for v in self._variables]
    grads = [tf.identity(a) for a in accumulators]
    self._optimizer.apply_gradients(list(zip(grads, self._variables)))
    for a in accumulators:
      a.assign(tf.zeros_like(a))

  def __getattr__(self, name: str) -> Any:
    return getattr(self._optimizer, name)


def _deferred_xla_step(task: Any, model: tf_keras.Model, optimizer: Any,
                       metrics: List[tf_keras.metrics.Metric],
                       record_loss: Callable[[dict], None]) -> Callable:
  """A replica step whose forward and backward pass run in XLA and whose update does not.

  Under MirroredStrategy `apply_gradients` cannot run inside a `jit_compile` function, so the
  task's `train_step` is compiled with a stand-in optimizer that records the gradients; they are
  applied afterwards, outside the compiled function.
  """
  recorder = GradientRecorder(optimizer)
  variables: list = []

  @tf.function(jit_compile=True)
  def forward_backward(inputs):
    logs = task.train_step(inputs, model, recorder, metrics=metrics)
    pairs = [(g, v) for g, v in recorder.grads_and_vars if g is not None]
    variables[:] = [v for _, v in pairs]
    return logs, [g for g, _ in pairs]

  def step(inputs):
    logs, grads = forward_backward(inputs)
    optimizer.apply_gradients(list(zip(grads, variables)))
    record_loss(logs)
  return step


def replica_train_step(task: Any, model: tf_keras.Model, optimizer: Any,
                       metrics: List[tf_keras.metrics.Metric],
                       record_loss: Callable[[dict], None], use_xla: bool, num_replicas: int,
                       accumulator: Optional[GradientAccumulator] = None) -> Callable:
  """The function a replica runs for one train step (or one micro-batch of it).

  Args:
    task: the task (its `train_step(inputs, model, optimizer, metrics)` does the work).
    model: the model.
    optimizer: the optimizer.
    metrics: the train metrics the task's step updates.
    record_loss: called with the step's logs (the trainer's loss metrics).
    use_xla: compile the step with XLA; with several replicas only its forward and backward
      pass are (and nothing with loss scaling or accumulation).
    num_replicas: replicas in sync.
    accumulator: with gradient accumulation, the stand-in that collects the micro-batches'
      gradients (its `apply` makes the update).

  Returns:
    `step(inputs)`, run in a replica context.
  """
  update = accumulator if accumulator is not None else optimizer

  def step(inputs):
    record_loss(task.train_step(inputs, model, update, metrics=metrics))

  if not use_xla:
    return step
  if num_replicas == 1:
    return tf.function(step, jit_compile=True)
  if accumulator is not None:
    logging.warning('runtime.enable_xla: with several replicas and gradient accumulation the '
                    'train step runs without XLA.')
    return step
  if isinstance(optimizer, tf_keras.mixed_precision.LossScaleOptimizer):
    logging.warning('runtime.enable_xla: with several replicas and loss scaling the train step '
                    'runs without XLA.')
    return step
  return _deferred_xla_step(task, model, optimizer, metrics, record_loss)
