"""Learning-rate schedules with a step offset, and warmup wrappers (serializable, XLA-friendly).

Every schedule maps an optimizer step (an int or float scalar tensor, e.g. `optimizer.iterations`)
to a float32 learning rate without Python branching on tensors (XLA compiles it), and round-trips
through `get_config`/`from_config` and `tf_keras.optimizers.schedules.serialize`. The
`...WithOffset` decays (polynomial, cosine, exponential, piecewise constant) are Keras's schedules
(`base_lr_class`) given `max(step - offset, 0)`; the power and step-cosine schedules and the warmups
are our own.

Example:
  >>> decay = PolynomialDecayWithOffset(1e-4, decay_steps=1000, end_learning_rate=0.0)
  >>> lr = PolynomialWarmUp(decay, warmup_steps=100)
  >>> lr(50)   # 1e-4 * 0.9 (the decay at step 100) * 50 / 100 = 4.5e-05
"""

import math
from typing import Any, Dict, List, Optional, Sequence, Union

import tensorflow as tf
import tf_keras

LearningRate = Union[float, tf_keras.optimizers.schedules.LearningRateSchedule]

_Schedule = tf_keras.optimizers.schedules.LearningRateSchedule
_register = tf_keras.utils.register_keras_serializable(package='mlm_garden')


def _as_float(step: Any) -> tf.Tensor:
  return tf.cast(step, tf.float32)


def _shifted(step: Any, offset: int) -> tf.Tensor:
  """`max(step - offset, 0)` as float32: the schedule holds its initial value before `offset`."""
  return tf.maximum(_as_float(step) - float(offset), 0.0)


class _OffsetMixin:
  """Shifts the step by `offset` before the Keras schedule (`base_lr_class`) sees it.

  `schedule(step) == base_lr_class(**same_args)(step - offset)` for `step >= offset`; before
  `offset` the schedule holds its step-0 value.
  """
  base_lr_class: type = _Schedule

  def __call__(self, step: Any) -> tf.Tensor:
    return self.base_lr_class.__call__(self, _shifted(step, self.offset))

  def get_config(self) -> Dict[str, Any]:
    return dict(self.base_lr_class.get_config(self), offset=self.offset)


def _check_decay_steps(name: str, decay_steps: Any) -> None:
  if decay_steps is None or decay_steps <= 0:
    raise ValueError(f'{name}: decay_steps must be > 0, found {decay_steps!r}')


@_register
class PolynomialDecayWithOffset(_OffsetMixin, tf_keras.optimizers.schedules.PolynomialDecay):
  """Polynomial decay from `initial_learning_rate` to `end_learning_rate`, starting at `offset`.

  lr(step) = (init - end) * (1 - s / d) ** power + end, with s = max(step - offset, 0) and, without
  `cycle`, s clipped to d = decay_steps; with `cycle`, d = decay_steps * max(ceil(s / decay_steps),
  1).
  """
  base_lr_class = tf_keras.optimizers.schedules.PolynomialDecay

  def __init__(self, initial_learning_rate: float, decay_steps: int,
               end_learning_rate: float = 0.0001, power: float = 1.0, cycle: bool = False,
               offset: int = 0, name: str = 'PolynomialDecay'):
    """Polynomial decay counted from `offset`.

    Args:
      initial_learning_rate: the rate at step `offset` (and before).
      decay_steps: steps to reach `end_learning_rate` (> 0).
      end_learning_rate: the final rate.
      power: the polynomial's exponent (1.0 = linear).
      cycle: restart the decay every `decay_steps` instead of holding `end_learning_rate`.
      offset: the step at which the decay starts.
      name: the schedule's name.

    Example:
      >>> PolynomialDecayWithOffset(1.0, decay_steps=100, end_learning_rate=0.0,
      ...                           offset=10)(60)  # 0.5
    """
    _check_decay_steps(name, decay_steps)
    super().__init__(float(initial_learning_rate), int(decay_steps), float(end_learning_rate),
                     float(power), bool(cycle), name)
    self.offset = int(offset)


@_register
class CosineDecayWithOffset(_OffsetMixin, tf_keras.optimizers.schedules.CosineDecay):
  """Cosine decay from `initial_learning_rate` to `alpha * initial_learning_rate`, starting at
  `offset`.

  lr(step) = init * ((1 - alpha) * 0.5 * (1 + cos(pi * s / decay_steps)) + alpha), with
  s = clip(step - offset, 0, decay_steps).
  """
  base_lr_class = tf_keras.optimizers.schedules.CosineDecay

  def __init__(self, initial_learning_rate: float, decay_steps: int, alpha: float = 0.0,
               offset: int = 0, name: str = 'CosineDecay', **kwargs: Any):
    """Cosine decay counted from `offset`.

    Args:
      initial_learning_rate: the rate at step `offset` (and before).
      decay_steps: steps to reach the final rate (> 0).
      alpha: the final rate as a fraction of `initial_learning_rate`.
      offset: the step at which the decay starts.
      name: the schedule's name.
      **kwargs: Keras `CosineDecay`'s `warmup_target` and `warmup_steps` (from `get_config`).

    Example:
      >>> CosineDecayWithOffset(0.1, decay_steps=1000)(500)   # 0.05
    """
    _check_decay_steps(name, decay_steps)
    super().__init__(float(initial_learning_rate), int(decay_steps), float(alpha), name, **kwargs)
    self.offset = int(offset)


@_register
class ExponentialDecayWithOffset(_OffsetMixin, tf_keras.optimizers.schedules.ExponentialDecay):
  """Exponential decay `init * decay_rate ** (s / decay_steps)` with s = max(step - offset, 0);
  with `staircase`, the exponent is rounded down."""
  base_lr_class = tf_keras.optimizers.schedules.ExponentialDecay

  def __init__(self, initial_learning_rate: float, decay_steps: int, decay_rate: float,
               staircase: Optional[bool] = False, offset: int = 0,
               name: str = 'ExponentialDecay'):
    """Exponential decay counted from `offset`.

    Args:
      initial_learning_rate: the rate at step `offset` (and before).
      decay_steps: steps per factor `decay_rate` (> 0).
      decay_rate: the factor per `decay_steps`.
      staircase: decay in whole steps of `decay_steps` (None means False).
      offset: the step at which the decay starts.
      name: the schedule's name.

    Example:
      >>> ExponentialDecayWithOffset(0.1, 1000, 0.96, staircase=True)(1999)   # 0.096
    """
    _check_decay_steps(name, decay_steps)
    if decay_rate is None:
      raise ValueError(f'{name}: decay_rate is required, found None')
    super().__init__(float(initial_learning_rate), int(decay_steps), float(decay_rate),
                     bool(staircase), name)
    self.offset = int(offset)


@_register
class PiecewiseConstantDecayWithOffset(_OffsetMixin,
                                       tf_keras.optimizers.schedules.PiecewiseConstantDecay):
  """Piecewise constant: `values[i]` for `boundaries[i-1] < step - offset <= boundaries[i]`."""
  base_lr_class = tf_keras.optimizers.schedules.PiecewiseConstantDecay

  def __init__(self, boundaries: Sequence[int], values: Sequence[float], offset: int = 0,
               name: str = 'PiecewiseConstantDecay'):
    """Piecewise constant rates, boundaries counted from `offset`.

    Args:
      boundaries: increasing step boundaries, length n.
      values: the n + 1 rates.
      offset: subtracted from the step before comparing with `boundaries`.
      name: the schedule's name.

    Example:
      >>> PiecewiseConstantDecayWithOffset([10, 20], [0.1, 0.01, 0.001])(15)   # 0.01
    """
    if boundaries is None or values is None or len(values) != len(boundaries) + 1:
      raise ValueError(f'{name}: expected len(boundaries) + 1 values, found boundaries='
                       f'{boundaries!r}, values={values!r}')
    super().__init__([int(b) for b in boundaries], [float(v) for v in values], name)
    self.offset = int(offset)

  def get_config(self) -> Dict[str, Any]:
    return dict(boundaries=list(self.boundaries), values=list(self.values), offset=self.offset,
                name=self.name)


@_register
class DirectPowerDecay(_Schedule):
  """`initial_learning_rate * max(step, 1) ** power` (e.g. power -0.5: inverse square root)."""

  def __init__(self, initial_learning_rate: float, power: float = 1.0,
               name: str = 'DirectPowerDecay'):
    """Power of the step.

    Args:
      initial_learning_rate: the rate at steps 0 and 1.
      power: the exponent of the step (negative to decay).
      name: the schedule's name.

    Example:
      >>> DirectPowerDecay(1.0, power=-1.0)(250)   # 0.004
    """
    super().__init__()
    if initial_learning_rate is None:
      raise ValueError(f'{name}: initial_learning_rate is required, found None')
    self.initial_learning_rate = float(initial_learning_rate)
    self.power = float(power)
    self.name = name

  def __call__(self, step: Any) -> tf.Tensor:
    with tf.name_scope(self.name):
      return self.initial_learning_rate * tf.pow(tf.maximum(_as_float(step), 1.0), self.power)

  def get_config(self) -> Dict[str, Any]:
    return dict(initial_learning_rate=self.initial_learning_rate, power=self.power, name=self.name)


@_register
class PowerAndLinearDecay(_Schedule):
  """A power decay whose last `linear_decay_fraction` of `total_decay_steps` also ramps linearly to
  0.

  With s = step - offset: lr = init * max(s, 1) ** power * min(1, (total - s) / (total * fraction)),
  never below 0 (the linear factor is 1 when `fraction` is 0); before `offset` (s <= 1) lr = init.
  """

  def __init__(self, initial_learning_rate: float, total_decay_steps: int, power: float = 1.0,
               linear_decay_fraction: float = 0.1, offset: int = 0,
               name: str = 'PowerAndLinearDecay'):
    """Power decay followed by a linear ramp to zero.

    Args:
      initial_learning_rate: the rate at s <= 1.
      total_decay_steps: the step (after `offset`) at which the rate reaches 0.
      power: the exponent of the step.
      linear_decay_fraction: the final fraction of `total_decay_steps` with the linear ramp.
      offset: subtracted from the step.
      name: the schedule's name.

    Example:
      >>> PowerAndLinearDecay(1.0, 100, power=-1.0, linear_decay_fraction=0.5)(60)   # 1/60 * 0.8
    """
    super().__init__()
    if initial_learning_rate is None or total_decay_steps is None:
      raise ValueError(f'{name}: initial_learning_rate and total_decay_steps are required, found '
                       f'{initial_learning_rate!r} and {total_decay_steps!r}')
    self.initial_learning_rate = float(initial_learning_rate)
    self.total_decay_steps = int(total_decay_steps)
    self.power = float(power)
    self.linear_decay_fraction = float(linear_decay_fraction)
    self.offset = int(offset)
    self.name = name

  def __call__(self, step: Any) -> tf.Tensor:
    with tf.name_scope(self.name):
      s = _as_float(step) - float(self.offset)
      lr = self.initial_learning_rate * tf.pow(tf.maximum(s, 1.0), self.power)
      ramp = self.total_decay_steps * self.linear_decay_fraction
      if ramp > 0:
        lr = tf.maximum(0.0, lr * tf.minimum(1.0, (self.total_decay_steps - s) / ramp))
      return lr

  def get_config(self) -> Dict[str, Any]:
    return dict(initial_learning_rate=self.initial_learning_rate,
                total_decay_steps=self.total_decay_steps, power=self.power,
                linear_decay_fraction=self.linear_decay_fraction, offset=self.offset,
                name=self.name)


@_register
class PowerDecayWithOffset(_Schedule):
  """`pre_offset_learning_rate` until `offset`, then `init * max(step - offset, 1) ** power`, capped
  at `pre_offset_learning_rate`."""

  def __init__(self, initial_learning_rate: float, power: float = 1.0, offset: int = 0,
               pre_offset_learning_rate: float = 1.0e6, name: str = 'PowerDecayWithOffset'):
    """Power decay that starts at `offset`.

    Args:
      initial_learning_rate: the factor of the power term.
      power: the exponent of `step - offset`.
      offset: the last step with `pre_offset_learning_rate`.
      pre_offset_learning_rate: the rate up to `offset`, and the cap afterwards.
      name: the schedule's name.

    Example:
      >>> PowerDecayWithOffset(1.0, power=-1.0, offset=10, pre_offset_learning_rate=3.0)(20)  # 0.1
    """
    super().__init__()
    if initial_learning_rate is None:
      raise ValueError(f'{name}: initial_learning_rate is required, found None')
    self.initial_learning_rate = float(initial_learning_rate)
    self.power = float(power)
    self.offset = int(offset)
    self.pre_offset_learning_rate = float(pre_offset_learning_rate)
    self.name = name

  def __call__(self, step: Any) -> tf.Tensor:
    with tf.name_scope(self.name):
      s = _as_float(step)
      after = self.initial_learning_rate * tf.pow(tf.maximum(s - self.offset, 1.0), self.power)
      lr = tf.where(s > float(self.offset), after, self.pre_offset_learning_rate)
      return tf.minimum(lr, self.pre_offset_learning_rate)

  def get_config(self) -> Dict[str, Any]:
    return dict(initial_learning_rate=self.initial_learning_rate, power=self.power,
                offset=self.offset, pre_offset_learning_rate=self.pre_offset_learning_rate,
                name=self.name)


@_register
class StepCosineDecayWithOffset(_Schedule):
  """Consecutive cosine decays: from `values[i]` at `boundaries[i]` to `values[i + 1]` at
  `boundaries[i + 1]` (steps counted from `offset`).

  Before `boundaries[0]` the rate is `values[0]`; from the last boundary on it stays `values[-1]`
  (a finite rate, where Model Garden's last interval divides by zero).
  """

  def __init__(self, boundaries: Sequence[int], values: Sequence[float], offset: int = 0,
               name: str = 'StepCosineDecayWithOffset'):
    """Piecewise cosine decay.

    Args:
      boundaries: increasing start steps of the intervals, one per value.
      values: the rate at each boundary.
      offset: subtracted from the step.
      name: the schedule's name.

    Example:
      >>> StepCosineDecayWithOffset([0, 1000], [1.0, 0.5])(500)   # 0.75
    """
    super().__init__()
    if not values or boundaries is None or len(boundaries) != len(values):
      raise ValueError(f'{name}: expected as many boundaries as values (at least one), found '
                       f'boundaries={boundaries!r}, values={values!r}')
    if any(b <= a for a, b in zip(boundaries, boundaries[1:])):
      raise ValueError(f'{name}: boundaries must be increasing, found {boundaries!r}')
    self.boundaries = [int(b) for b in boundaries]
    self.values = [float(v) for v in values]
    self.offset = int(offset)
    self.name = name

  def __call__(self, step: Any) -> tf.Tensor:
    with tf.name_scope(self.name):
      s = _as_float(step) - float(self.offset)
      lr = tf.constant(self.values[0], tf.float32)
      for i in range(len(self.values) - 1):
        start, end = float(self.boundaries[i]), float(self.boundaries[i + 1])
        high, low = self.values[i], self.values[i + 1]
        progress = tf.clip_by_value((s - start) / (end - start), 0.0, 1.0)
        cosine = (high - low) * 0.5 * (1.0 + tf.cos(math.pi * progress)) + low
        lr = tf.where(s >= start, cosine, lr)
      return lr

  def get_config(self) -> Dict[str, Any]:
    return dict(boundaries=list(self.boundaries), values=list(self.values), offset=self.offset,
                name=self.name)


def _evaluate(schedule: LearningRate, step: Any) -> tf.Tensor:
  if isinstance(schedule, _Schedule):
    return tf.cast(schedule(step), tf.float32)
  return tf.constant(float(schedule), tf.float32)


def _serialize(schedule: LearningRate) -> Any:
  if isinstance(schedule, _Schedule):
    return tf_keras.optimizers.schedules.serialize(schedule)
  return float(schedule)


def _deserialize(value: Any) -> LearningRate:
  if isinstance(value, dict):
    return tf_keras.optimizers.schedules.deserialize(value)
  return float(value)


class _Warmup(_Schedule):
  """Shared parts of the warmup wrappers: `after_warmup_lr_sched` applies from `warmup_steps` on."""

  def __init__(self, after_warmup_lr_sched: LearningRate, warmup_steps: int, name: str):
    super().__init__()
    if warmup_steps is None or warmup_steps < 0:
      raise ValueError(f'{name}: warmup_steps must be >= 0, found {warmup_steps!r}')
    self.after_warmup_lr_sched = after_warmup_lr_sched
    self.warmup_steps = int(warmup_steps)
    self.name = name

  def _warmup_lr(self, step: tf.Tensor, final_lr: tf.Tensor) -> tf.Tensor:
    raise NotImplementedError

  def __call__(self, step: Any) -> tf.Tensor:
    with tf.name_scope(self.name):
      after = _evaluate(self.after_warmup_lr_sched, step)
      if self.warmup_steps == 0:
        return after
      s = _as_float(step)
      final_lr = _evaluate(self.after_warmup_lr_sched, self.warmup_steps)
      return tf.where(s < float(self.warmup_steps), self._warmup_lr(s, final_lr), after)

  def _base_config(self) -> Dict[str, Any]:
    return dict(after_warmup_lr_sched=_serialize(self.after_warmup_lr_sched),
                warmup_steps=self.warmup_steps, name=self.name)

  @classmethod
  def from_config(cls, config: Dict[str, Any]) -> '_Warmup':
    config = dict(config)
    config['after_warmup_lr_sched'] = _deserialize(config['after_warmup_lr_sched'])
    return cls(**config)


@_register
class LinearWarmup(_Warmup):
  """Linear warmup from `warmup_learning_rate` to `after_warmup_lr_sched(warmup_steps)`.

  lr(step) = wlr + step / warmup_steps * (after(warmup_steps) - wlr) while step < warmup_steps,
  then after(step) (the wrapped schedule counts from step 0, not from the end of warmup).

  Args:
    after_warmup_lr_sched: the schedule (or a float) used after warmup.
    warmup_steps: warmup length (0 disables warmup).
    warmup_learning_rate: the rate at step 0.
    name: the schedule's name.

  Example:
    >>> LinearWarmup(0.1, warmup_steps=10, warmup_learning_rate=0.0)(5)   # 0.05
  """

  def __init__(self, after_warmup_lr_sched: LearningRate, warmup_steps: int,
               warmup_learning_rate: float = 0.0, name: str = 'linear'):
    super().__init__(after_warmup_lr_sched, warmup_steps, name)
    self.warmup_learning_rate = float(warmup_learning_rate)

  def _warmup_lr(self, step: tf.Tensor, final_lr: tf.Tensor) -> tf.Tensor:
    return self.warmup_learning_rate + step / float(self.warmup_steps) * (
        final_lr - self.warmup_learning_rate)

  def get_config(self) -> Dict[str, Any]:
    return dict(self._base_config(), warmup_learning_rate=self.warmup_learning_rate)


@_register
class PolynomialWarmUp(_Warmup):
  """Polynomial warmup: `after(warmup_steps) * (max(step, 1) / warmup_steps) ** power` before
  warmup_steps.

  From `warmup_steps` on the wrapped schedule applies, counted from step 0.

  Args:
    after_warmup_lr_sched: the schedule (or a float) used after warmup.
    warmup_steps: warmup length (0 disables warmup).
    power: the exponent (1.0 = linear ramp; step 0 gets the step-1 value, never zero).
    name: the schedule's name.

  Example:
    >>> PolynomialWarmUp(0.1, warmup_steps=10, power=2.0)(5)   # 0.1 * 0.5 ** 2 = 0.025
  """

  def __init__(self, after_warmup_lr_sched: LearningRate, warmup_steps: int, power: float = 1.0,
               name: str = 'PolynomialWarmUp'):
    super().__init__(after_warmup_lr_sched, warmup_steps, name)
    self.power = float(power)

  def _warmup_lr(self, step: tf.Tensor, final_lr: tf.Tensor) -> tf.Tensor:
    fraction = tf.maximum(step, 1.0) / float(self.warmup_steps)
    return final_lr * tf.pow(fraction, self.power)

  def get_config(self) -> Dict[str, Any]:
    return dict(self._base_config(), power=self.power)


def current_learning_rate(schedule: LearningRate, step: Any) -> tf.Tensor:
  """The float32 learning rate of a schedule (or a constant float) at `step`.

  Example:
    >>> current_learning_rate(0.1, 7)   # a float32 scalar tensor 0.1
  """
  return _evaluate(schedule, step)


__all__: List[str] = ['PolynomialDecayWithOffset', 'CosineDecayWithOffset',
                      'ExponentialDecayWithOffset', 'PiecewiseConstantDecayWithOffset',
                      'DirectPowerDecay', 'PowerAndLinearDecay', 'PowerDecayWithOffset',
                      'StepCosineDecayWithOffset', 'LinearWarmup', 'PolynomialWarmUp',
                      'LearningRate', 'current_learning_rate']
