"""`OptimizerFactory`: builds the learning-rate schedule and the optimizer from an
`OptimizationConfig`.

Optimizer classes are looked up by `optimizer.type` in `LEGACY_OPTIMIZERS_CLS` (the default,
`use_legacy_optimizer=True`) or `NEW_OPTIMIZERS_CLS`. mlm-garden ships no legacy
(`tf_keras.optimizers.legacy`) optimizers: both tables hold our `tf_keras.optimizers.Optimizer`
subclasses, which clip the cross-replica summed gradients (`gradient_clipping`).
`register_optimizer_cls` adds a type. With `ema` set, the optimizer is wrapped in
`ema_optimizer.ExponentialMovingAverage` (from either table: Model Garden allows only its legacy
optimizers there).

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
from official.modeling.optimization import ema_optimizer
from official.modeling.optimization import gradient_clipping
from official.modeling.optimization import keras_optimizers
from official.modeling.optimization import lamb
from official.modeling.optimization import lars
from official.modeling.optimization import lr_schedule
from official.modeling.optimization.configs import optimization_config

_OPTIMIZERS: Dict[str, type] = {
    'sgd': keras_optimizers.SGD,
    'adam': keras_optimizers.Adam,
    'adamw': adamw.AdamWeightDecay,
    'lamb': lamb.LAMB,
    'lars': lars.LARS,
    'rmsprop': keras_optimizers.RMSprop,
    'adagrad': keras_optimizers.Adagrad,
}

# Model Garden's two tables (legacy and new Keras optimizers); here they start with the same
# classes.
LEGACY_OPTIMIZERS_CLS: Dict[str, type] = dict(_OPTIMIZERS)
NEW_OPTIMIZERS_CLS: Dict[str, type] = dict(_OPTIMIZERS)
OPTIMIZER_CLASSES = LEGACY_OPTIMIZERS_CLS  # The default table (earlier mlm-garden name).

LR_CLS: Dict[str, type] = {
    'stepwise': lr_schedule.PiecewiseConstantDecayWithOffset,
    'polynomial': lr_schedule.PolynomialDecayWithOffset,
    'exponential': lr_schedule.ExponentialDecayWithOffset,
    'cosine': lr_schedule.CosineDecayWithOffset,
    'power': lr_schedule.DirectPowerDecay,
    'power_linear': lr_schedule.PowerAndLinearDecay,
    'power_with_offset': lr_schedule.PowerDecayWithOffset,
    'step_cosine_with_offset': lr_schedule.StepCosineDecayWithOffset,
}
LR_CLASSES = LR_CLS

WARMUP_CLS: Dict[str, type] = {
    'linear': lr_schedule.LinearWarmup,
    'polynomial': lr_schedule.PolynomialWarmUp,
}
WARMUP_CLASSES = WARMUP_CLS

# Config fields that are not constructor arguments: SGD's legacy `decay` (validated to stay 0).
_NOT_ARGUMENTS = {'sgd': ('decay',)}
# Clipping fields dropped when None, so the optimizer sees its own defaults.
_CLIPPING = ('clipnorm', 'clipvalue', 'global_clipnorm')


def register_optimizer_cls(key: str, optimizer_config_cls: type,
                           use_legacy_optimizer: bool = True) -> None:
  """Registers an optimizer class under `optimizer.type == key`.

  The `OptimizerConfig` one-of also needs a member named `key` (subclass it) whose fields are the
  class's constructor arguments.

  Args:
    key: the optimizer type.
    optimizer_config_cls: the optimizer class (called with the member's fields and `learning_rate`).
    use_legacy_optimizer: register in `LEGACY_OPTIMIZERS_CLS` (True) or `NEW_OPTIMIZERS_CLS`.

  Raises:
    ValueError: `key` is already registered in that table.

  Example:
    >>> register_optimizer_cls('my_sgd', MySGD)
  """
  table, table_name = ((LEGACY_OPTIMIZERS_CLS, 'LEGACY_OPTIMIZERS_CLS') if use_legacy_optimizer
                       else (NEW_OPTIMIZERS_CLS, 'NEW_OPTIMIZERS_CLS'))
  if key in table:
    raise ValueError(f'{key} already registered in {table_name} (as {table[key].__name__})')
  table[key] = optimizer_config_cls


def _require_type(one_of: hyperparams.OneOfConfig, path: str, known: Sequence[str]) -> str:
  if one_of.type is None:
    raise hyperparams.ConfigError(f'{path}.type', f'is not set; expected one of {list(known)}')
  if one_of.type not in known:
    raise hyperparams.ConfigError(f'{path}.type', f'expected one of {list(known)}, found '
                                  f'{one_of.type!r}')
  return one_of.type


def _is_optimizer(obj: Any) -> bool:
  classes = [tf_keras.optimizers.Optimizer]
  legacy = getattr(tf_keras.optimizers, 'legacy', None)
  if legacy is not None:
    classes.append(legacy.Optimizer)
  return isinstance(obj, tuple(classes))


class OptimizerFactory:
  """Builds `tf_keras` schedules and optimizers from an `OptimizationConfig`.

  Args:
    config: the optimization config; validated here (errors name the full key path).

  Raises:
    hyperparams.ConfigError: (a ValueError) a bad value, or `optimizer.type`/`learning_rate.type`
      unset or unknown.

  Example:
    >>> factory = OptimizerFactory(OptimizationConfig({
    ...     'optimizer': {'type': 'sgd', 'sgd': {'momentum': 0.9}},
    ...     'learning_rate': {'type': 'stepwise', 'stepwise': {
    ...         'boundaries': [10000, 20000], 'values': [0.1, 0.01, 0.001]}},
    ...     'warmup': {'type': 'linear', 'linear': {'warmup_steps': 500}}}))
    >>> optimizer = factory.build_optimizer(factory.build_learning_rate())
  """

  def __init__(self, config: optimization_config.OptimizationConfig):
    config.validate()
    self._config = config
    known = sorted(set(LEGACY_OPTIMIZERS_CLS) | set(NEW_OPTIMIZERS_CLS))
    self._optimizer_type = _require_type(config.optimizer, 'optimizer', known)
    self._lr_type = _require_type(config.learning_rate, 'learning_rate',
                                  ['constant', 'linear'] + list(LR_CLS))
    self._warmup_type = config.warmup.type
    self._use_ema = config.ema is not None
    self._ema_config = config.ema
    if self._warmup_type is not None and self._warmup_type not in WARMUP_CLS:
      raise hyperparams.ConfigError('warmup.type', f'expected one of {list(WARMUP_CLS)} or None, '
                                    f'found {self._warmup_type!r}')

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
      lr = LR_CLS[self._lr_type](**lr_config.as_dict())
    if self._warmup_type is not None:
      lr = WARMUP_CLS[self._warmup_type](after_warmup_lr_sched=lr,
                                         **self._config.warmup.get().as_dict())
    return lr

  def build_optimizer(
      self, lr: lr_schedule.LearningRate,
      gradient_aggregator: Optional[gradient_clipping.GradientTransformer] = None,
      gradient_transformers: Optional[Sequence[gradient_clipping.GradientTransformer]] = None,
      postprocessor: Optional[Callable[[tf_keras.optimizers.Optimizer], Any]] = None,
      use_legacy_optimizer: bool = True,
      global_batch_size: Optional[int] = None) -> tf_keras.optimizers.Optimizer:
    """Builds the optimizer.

    Args:
      lr: a float or schedule, usually `build_learning_rate()`.
      gradient_aggregator: replaces the cross-replica sum of the gradients: a callable on the list
        of (gradient, variable).
      gradient_transformers: callables on the list of (gradient, variable), applied after the
        cross-replica sum and clipping.
      postprocessor: maps the built optimizer (after the `ema` wrapper, if any) to the returned
        one (e.g. a wrapper).
      use_legacy_optimizer: look the class up in `LEGACY_OPTIMIZERS_CLS` (True, the default) or
        `NEW_OPTIMIZERS_CLS`.
      global_batch_size: accepted for Model Garden compatibility; unused by these optimizers.

    Returns:
      A `tf_keras.optimizers.Optimizer`: with `ema` set an `ExponentialMovingAverage` wrapping
      it (call its `shadow_copy(model)` before training); or what `postprocessor` returns, which
      must be an optimizer too.

    Raises:
      TypeError: `postprocessor` returned something that is not an optimizer.
      ValueError: the optimizer type is not registered in the chosen table.
    """
    del global_batch_size  # Only Model Garden's LARS-style optimizers use it.
    table = LEGACY_OPTIMIZERS_CLS if use_legacy_optimizer else NEW_OPTIMIZERS_CLS
    if self._optimizer_type not in table:
      raise ValueError(f'optimizer.type {self._optimizer_type!r} is not registered in '
                       f'{"LEGACY" if use_legacy_optimizer else "NEW"}_OPTIMIZERS_CLS; '
                       f'registered: {sorted(table)}')
    member = self._config.optimizer.get()
    dropped = _NOT_ARGUMENTS.get(self._optimizer_type, ())
    kwargs = {k: v for k, v in member.as_dict().items()
              if k not in dropped and not (k in _CLIPPING and v is None)}
    if gradient_aggregator is not None:
      kwargs['gradient_aggregator'] = gradient_aggregator
    if gradient_transformers is not None:
      kwargs['gradient_transformers'] = gradient_transformers
    optimizer = table[self._optimizer_type](learning_rate=lr, **kwargs)
    if self._use_ema:
      ema = self._ema_config
      optimizer = ema_optimizer.ExponentialMovingAverage(
          optimizer, trainable_weights_only=ema.trainable_weights_only,
          average_decay=ema.average_decay, start_step=ema.start_step,
          dynamic_decay=ema.dynamic_decay, name=ema.name)
    if postprocessor is not None:
      optimizer = postprocessor(optimizer)
    if not _is_optimizer(optimizer):
      raise TypeError(f'OptimizerFactory.build_optimizer: the result is not a tf_keras optimizer: '
                      f'{optimizer!r} (check the postprocessor)')
    return optimizer
