"""`OptimizerFactory`: builds the learning-rate schedule and the optimizer from an `OptimizationConfig`.

Example:
  >>> factory = OptimizerFactory(params.trainer.optimizer_config)
  >>> optimizer = factory.build_optimizer(factory.build_learning_rate())
  >>> # float16 training: wrap afterwards; clipping then sees the unscaled, summed gradients.
  >>> optimizer = tf_keras.mixed_precision.LossScaleOptimizer(optimizer)
"""

from typing import Any, Callable, Dict, Optional, Sequence

import tf_keras

from official.modeling import hyperparams
from official.modeling.optimization import adamw
from official.modeling.optimization import gradient_clipping
from official.modeling.optimization import keras_optimizers
from official.modeling.optimization import lamb
from official.modeling.optimization import lr_schedule
from official.modeling.optimization.configs import optimization_config

OPTIMIZER_CLASSES: Dict[str, type] = {
    'sgd': keras_optimizers.SGD,
    'adam': keras_optimizers.Adam,
    'adamw': adamw.AdamWeightDecay,
    'lamb': lamb.LAMB,
}

LR_CLASSES: Dict[str, type] = {
    'stepwise': lr_schedule.PiecewiseConstantDecayWithOffset,
    'polynomial': lr_schedule.PolynomialDecayWithOffset,
    'cosine': lr_schedule.CosineDecayWithOffset,
}

WARMUP_CLASSES: Dict[str, type] = {
    'linear': lr_schedule.LinearWarmup,
    'polynomial': lr_schedule.PolynomialWarmUp,
}

# Config fields that are not constructor arguments.
_NOT_ARGUMENTS = ('decay',)


def _require_type(one_of: hyperparams.OneOfConfig, path: str, known: Sequence[str]) -> str:
  if one_of.type is None:
    raise hyperparams.ConfigError(f'{path}.type', f'is not set; expected one of {list(known)}')
  if one_of.type not in known:
    raise hyperparams.ConfigError(f'{path}.type', f'expected one of {list(known)}, found '
                                  f'{one_of.type!r}')
  return one_of.type


class OptimizerFactory:
  """Builds `tf_keras` schedules and optimizers from an `OptimizationConfig`.

  Args:
    config: the optimization config; validated here (errors name the full key path).

  Raises:
    hyperparams.ConfigError: (a ValueError) a bad value, or `optimizer.type`/`learning_rate.type`
      unset or unknown.
  """

  def __init__(self, config: optimization_config.OptimizationConfig):
    config.validate()
    self._config = config
    self._optimizer_type = _require_type(config.optimizer, 'optimizer', list(OPTIMIZER_CLASSES))
    self._lr_type = _require_type(config.learning_rate, 'learning_rate',
                                  ['constant', 'linear'] + list(LR_CLASSES))
    self._warmup_type = config.warmup.type

  def build_learning_rate(self) -> lr_schedule.LearningRate:
    """The learning rate: a float (constant, no warmup) or a `LearningRateSchedule` of the step.

    The warmup, when set, wraps the decay schedule; the decay still counts from step 0.
    """
    lr_config = self._config.learning_rate.get()
    if self._lr_type == 'constant':
      lr = lr_config.learning_rate
    elif self._lr_type == 'linear':
      lr = lr_schedule.PolynomialDecayWithOffset(
          initial_learning_rate=lr_config.initial_learning_rate, decay_steps=lr_config.decay_steps,
          end_learning_rate=lr_config.end_learning_rate, power=1.0, offset=lr_config.offset,
          name=lr_config.name)
    else:
      lr = LR_CLASSES[self._lr_type](**lr_config.as_dict())
    if self._warmup_type is not None:
      lr = WARMUP_CLASSES[self._warmup_type](after_warmup_lr_sched=lr,
                                             **self._config.warmup.get().as_dict())
    return lr

  def build_optimizer(
      self, lr: lr_schedule.LearningRate,
      gradient_transformers: Optional[Sequence[gradient_clipping.GradientTransformer]] = None,
      postprocessor: Optional[Callable[[tf_keras.optimizers.Optimizer], Any]] = None,
      global_batch_size: Optional[int] = None) -> tf_keras.optimizers.Optimizer:
    """Builds the optimizer.

    Args:
      lr: a float or schedule, usually `build_learning_rate()`.
      gradient_transformers: callables on the list of (gradient, variable), applied after the
        cross-replica sum and clipping.
      postprocessor: maps the built optimizer to the returned one (e.g. a wrapper).
      global_batch_size: accepted for Model Garden compatibility; unused by these optimizers.

    Returns:
      A `tf_keras.optimizers.Optimizer` (or what `postprocessor` returns).
    """
    del global_batch_size  # Only Model Garden's LARS-style optimizers use it.
    member = self._config.optimizer.get()
    kwargs = {k: v for k, v in member.as_dict().items() if k not in _NOT_ARGUMENTS}
    optimizer = OPTIMIZER_CLASSES[self._optimizer_type](
        learning_rate=lr, gradient_transformers=gradient_transformers, **kwargs)
    if postprocessor is not None:
      optimizer = postprocessor(optimizer)
    return optimizer
