"""Learning-rate schedules with a step offset, and warmup wrappers (serializable, XLA-friendly).

Every schedule maps an optimizer step (an int or float scalar tensor, e.g. `optimizer.iterations`) to a
float32 learning rate, uses only element-wise ops and `tf.where` (no Python branching on tensors), and
round-trips through `get_config`/`from_config` and `tf_keras.optimizers.schedules.serialize`.

Example:
  >>> decay = PolynomialDecayWithOffset(1e-4, decay_steps=1000, end_learning_rate=0.0)
  >>> lr = PolynomialWarmUp(decay, warmup_steps=100)
  >>> lr(50)   # 1e-4 * 0.9 (the decay at step 100) * 50 / 100 = 4.5e-05
"""

import math
from typing import Any, Dict, List, Sequence, Union

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


@_register
class PolynomialDecayWithOffset(_Schedule):
  """Polynomial decay from `initial_learning_rate` to `end_learning_rate`, starting at `offset`.

  lr(step) = (init - end) * (1 - s / d) ** power + end, with s = max(step - offset, 0) and, without
  `cycle`, s clipped to d = decay_steps; with `cycle`, d = decay_steps * max(ceil(s / decay_steps), 1).

  Args:
    initial_learning_rate: the rate at step `offset` (and before).
    decay_steps: steps to reach `end_learning_rate` (> 0).
    end_learning_rate: the final rate.
    power: the polynomial's exponent (1.0 = linear).
    cycle: restart the decay every `decay_steps` instead of holding `end_learning_rate`.
    offset: the step at which the decay starts.
    name: the schedule's name.
  """

  def __init__(self, initial_learning_rate: float, decay_steps: int,
               end_learning_rate: float = 0.0001, power: float = 1.0, cycle: bool = False,
               offset: int = 0, name: str = 'PolynomialDecay'):
    super().__init__()
    if decay_steps is None or decay_steps <= 0:
      raise ValueError(f'{name}: decay_steps must be > 0, found {decay_steps!r}')
    self.initial_learning_rate = float(initial_learning_rate)
    self.decay_steps = int(decay_steps)
    self.end_learning_rate = float(end_learning_rate)
    self.power = float(power)
    self.cycle = bool(cycle)
    self.offset = int(offset)
    self.name = name

  def __call__(self, step: Any) -> tf.Tensor:
    with tf.name_scope(self.name):
      s = _shifted(step, self.offset)
      d = float(self.decay_steps)
      if self.cycle:
        d = d * tf.maximum(tf.math.ceil(s / d), 1.0)
      else:
        s = tf.minimum(s, d)
      fraction = 1.0 - s / d
      return ((self.initial_learning_rate - self.end_learning_rate) * tf.pow(fraction, self.power)
              + self.end_learning_rate)

  def get_config(self) -> Dict[str, Any]:
    return dict(initial_learning_rate=self.initial_learning_rate, decay_steps=self.decay_steps,
                end_learning_rate=self.end_learning_rate, power=self.power, cycle=self.cycle,
                offset=self.offset, name=self.name)


@_register
class CosineDecayWithOffset(_Schedule):
  """Cosine decay from `initial_learning_rate` to `alpha * initial_learning_rate`, starting at `offset`.

  lr(step) = init * ((1 - alpha) * 0.5 * (1 + cos(pi * s / decay_steps)) + alpha), with
  s = clip(step - offset, 0, decay_steps).

  Args:
    initial_learning_rate: the rate at step `offset` (and before).
    decay_steps: steps to reach the final rate (> 0).
    alpha: the final rate as a fraction of `initial_learning_rate`.
    offset: the step at which the decay starts.
    name: the schedule's name.
  """

  def __init__(self, initial_learning_rate: float, decay_steps: int, alpha: float = 0.0,
               offset: int = 0, name: str = 'CosineDecay'):
    super().__init__()
    if decay_steps is None or decay_steps <= 0:
      raise ValueError(f'{name}: decay_steps must be > 0, found {decay_steps!r}')
    self.initial_learning_rate = float(initial_learning_rate)
    self.decay_steps = int(decay_steps)
    self.alpha = float(alpha)
    self.offset = int(offset)
    self.name = name

  def __call__(self, step: Any) -> tf.Tensor:
    with tf.name_scope(self.name):
      d = float(self.decay_steps)
      s = tf.minimum(_shifted(step, self.offset), d)
      cosine = 0.5 * (1.0 + tf.cos(math.pi * s / d))
      return self.initial_learning_rate * ((1.0 - self.alpha) * cosine + self.alpha)

  def get_config(self) -> Dict[str, Any]:
    return dict(initial_learning_rate=self.initial_learning_rate, decay_steps=self.decay_steps,
                alpha=self.alpha, offset=self.offset, name=self.name)


@_register
class PiecewiseConstantDecayWithOffset(_Schedule):
  """Piecewise constant: `values[i]` for `boundaries[i-1] < step - offset <= boundaries[i]`.

  Args:
    boundaries: increasing step boundaries, length n.
    values: the n + 1 rates.
    offset: subtracted from the step before comparing with `boundaries`.
    name: the schedule's name.
  """

  def __init__(self, boundaries: Sequence[int], values: Sequence[float], offset: int = 0,
               name: str = 'PiecewiseConstantDecay'):
    super().__init__()
    if len(values) != len(boundaries) + 1:
      raise ValueError(f'{name}: expected len(boundaries) + 1 = {len(boundaries) + 1} values, '
                       f'found {len(values)}')
    self.boundaries = [int(b) for b in boundaries]
    self.values = [float(v) for v in values]
    self.offset = int(offset)
    self.name = name

  def __call__(self, step: Any) -> tf.Tensor:
    with tf.name_scope(self.name):
      s = _as_float(step) - float(self.offset)
      passed = tf.cast(s > tf.constant(self.boundaries, tf.float32), tf.int32)
      return tf.gather(tf.constant(self.values, tf.float32), tf.reduce_sum(passed))

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
  """Polynomial warmup: `after(warmup_steps) * (max(step, 1) / warmup_steps) ** power` before warmup_steps.

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
                      'PiecewiseConstantDecayWithOffset', 'LinearWarmup', 'PolynomialWarmUp',
                      'LearningRate', 'current_learning_rate']
