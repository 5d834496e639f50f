"""Learning-rate and warmup configs: the `learning_rate` and `warmup` one-ofs of
`OptimizationConfig`.

Steps count optimizer updates. Fields that Model Garden leaves at None (`initial_learning_rate`,
`decay_steps`, `warmup_steps`) are required once their member is selected.

Example:
  >>> cfg = LrConfig.from_dict({'polynomial': {'initial_learning_rate': 1e-4, 'decay_steps': 1000}})
  >>> cfg.type, cfg.get().end_learning_rate
  ('polynomial', 0.0001)
"""

import dataclasses
from typing import List, Optional, Tuple

from official.modeling import hyperparams

# Learning rates become float32 tensors: a larger value cannot even be converted.
FLOAT32_MAX = 3.4028234663852886e38


@dataclasses.dataclass
class ConstantLrConfig(hyperparams.Config):
  """A constant learning rate."""
  name: str = 'Constant'
  learning_rate: float = hyperparams.field(0.1, ge=0.0, le=FLOAT32_MAX)


@dataclasses.dataclass
class StepwiseLrConfig(hyperparams.Config):
  """Piecewise constant: `values[i]` while `boundaries[i-1] < step - offset <= boundaries[i]`."""
  name: str = 'PiecewiseConstantDecay'
  boundaries: Optional[List[int]] = None
  values: Optional[List[float]] = None
  offset: int = hyperparams.field(0, ge=0)

  def validate(self) -> None:
    super().validate()
    if self.boundaries is None or self.values is None:
      return  # Checked by `LrConfig` when this member is selected.
    if len(self.values) != len(self.boundaries) + 1:
      raise hyperparams.ConfigError('values', f'expected len(boundaries) + 1 = '
                                    f'{len(self.boundaries) + 1} values, found {len(self.values)}')
    if any(b <= a for a, b in zip(self.boundaries, self.boundaries[1:])):
      raise hyperparams.ConfigError('boundaries', f'must be increasing, found {self.boundaries}')


@dataclasses.dataclass
class PolynomialLrConfig(hyperparams.Config):
  """Polynomial decay: `(init - end) * (1 - s / decay_steps) ** power + end`.

  With `s = min(step - offset, decay_steps)`.
  """
  name: str = 'PolynomialDecay'
  initial_learning_rate: Optional[float] = hyperparams.field(None, ge=0.0, le=FLOAT32_MAX)
  decay_steps: Optional[int] = hyperparams.field(None, gt=0)
  end_learning_rate: float = hyperparams.field(0.0001, ge=0.0, le=FLOAT32_MAX)
  power: float = 1.0
  cycle: bool = False
  offset: int = hyperparams.field(0, ge=0)


@dataclasses.dataclass
class LinearLrConfig(hyperparams.Config):
  """Linear decay from `initial_learning_rate` to `end_learning_rate` (polynomial with power 1).

  An mlm-garden addition: Model Garden has no `linear` learning-rate member (use `polynomial`
  there).
  """
  name: str = 'LinearDecay'
  initial_learning_rate: Optional[float] = hyperparams.field(None, ge=0.0, le=FLOAT32_MAX)
  decay_steps: Optional[int] = hyperparams.field(None, gt=0)
  end_learning_rate: float = hyperparams.field(0.0001, ge=0.0, le=FLOAT32_MAX)
  offset: int = hyperparams.field(0, ge=0)


@dataclasses.dataclass
class CosineLrConfig(hyperparams.Config):
  """Cosine decay: `init * ((1 - alpha) * 0.5 * (1 + cos(pi * s / decay_steps)) + alpha)`.

  With `s` clipped to `decay_steps`.
  """
  name: str = 'CosineDecay'
  initial_learning_rate: Optional[float] = hyperparams.field(None, ge=0.0, le=FLOAT32_MAX)
  decay_steps: Optional[int] = hyperparams.field(None, gt=0)
  alpha: float = hyperparams.field(0.0, ge=0.0, le=1.0)
  offset: int = hyperparams.field(0, ge=0)


@dataclasses.dataclass
class ExponentialLrConfig(hyperparams.Config):
  """`init * decay_rate ** (s / decay_steps)` with `s = max(step - offset, 0)`; `staircase` floors
  the exponent."""
  name: str = 'ExponentialDecay'
  initial_learning_rate: Optional[float] = hyperparams.field(None, ge=0.0, le=FLOAT32_MAX)
  decay_steps: Optional[int] = hyperparams.field(None, gt=0)
  decay_rate: Optional[float] = hyperparams.field(None, gt=0.0)
  staircase: Optional[bool] = None
  offset: int = hyperparams.field(0, ge=0)


@dataclasses.dataclass
class DirectPowerLrConfig(hyperparams.Config):
  """`init * max(step, 1) ** power` (power -0.5: inverse square root decay)."""
  name: str = 'DirectPowerDecay'
  initial_learning_rate: Optional[float] = hyperparams.field(None, ge=0.0, le=FLOAT32_MAX)
  power: float = -0.5


@dataclasses.dataclass
class PowerAndLinearDecayLrConfig(hyperparams.Config):
  """`init * max(s, 1) ** power`, ramped linearly to 0 over the last `linear_decay_fraction` of
  `total_decay_steps` (s = step - offset)."""
  name: str = 'PowerAndLinearDecay'
  initial_learning_rate: Optional[float] = hyperparams.field(None, ge=0.0, le=FLOAT32_MAX)
  total_decay_steps: Optional[int] = hyperparams.field(None, gt=0)
  power: float = -0.5
  linear_decay_fraction: float = hyperparams.field(0.1, ge=0.0, le=1.0)
  offset: int = hyperparams.field(0, ge=0)


@dataclasses.dataclass
class PowerDecayWithOffsetLrConfig(hyperparams.Config):
  """`pre_offset_learning_rate` up to `offset`, then `init * (step - offset) ** power` (capped)."""
  name: str = 'PowerDecayWithOffset'
  initial_learning_rate: Optional[float] = hyperparams.field(None, ge=0.0, le=FLOAT32_MAX)
  power: float = -0.5
  offset: int = hyperparams.field(0, ge=0)
  pre_offset_learning_rate: float = hyperparams.field(1.0e6, ge=0.0, le=FLOAT32_MAX)


@dataclasses.dataclass
class StepCosineLrConfig(hyperparams.Config):
  """Cosine decays from `values[i]` at `boundaries[i]` to `values[i + 1]` at `boundaries[i + 1]`."""
  name: str = 'StepCosineDecayWithOffset'
  boundaries: Optional[List[int]] = None
  values: Optional[List[float]] = None
  offset: int = hyperparams.field(0, ge=0)

  def validate(self) -> None:
    super().validate()
    if self.boundaries is None or self.values is None:
      return  # Checked by `LrConfig` when this member is selected.
    if len(self.values) != len(self.boundaries):
      raise hyperparams.ConfigError('values', f'expected one value per boundary '
                                    f'({len(self.boundaries)}), found {len(self.values)}')


@dataclasses.dataclass
class LinearWarmupConfig(hyperparams.Config):
  """Ramp linearly from `warmup_learning_rate` to the schedule's value at `warmup_steps`."""
  name: str = 'linear'
  warmup_learning_rate: float = hyperparams.field(0.0, ge=0.0, le=FLOAT32_MAX)
  warmup_steps: Optional[int] = hyperparams.field(None, ge=0)


@dataclasses.dataclass
class PolynomialWarmupConfig(hyperparams.Config):
  """`schedule(warmup_steps) * (max(step, 1) / warmup_steps) ** power` before `warmup_steps`."""
  name: str = 'polynomial'
  power: float = hyperparams.field(1.0, gt=0.0)
  warmup_steps: Optional[int] = hyperparams.field(None, ge=0)


def _check_required(one_of: hyperparams.OneOfConfig, required: Tuple[str, ...]) -> None:
  """Raises naming `<member>.<field>` when a required field of the selected member is None."""
  member = one_of.get()
  for name in required:
    if getattr(member, name, 0) is None:
      raise hyperparams.ConfigError(f'{one_of.type}.{name}',
                                    f'is required when type is {one_of.type!r}, found None')


@dataclasses.dataclass
class LrConfig(hyperparams.OneOfConfig):
  """The learning-rate one-of: `constant`, `stepwise`, `exponential`, `polynomial`, `linear`,
  `cosine`, `power`, `power_linear`, `power_with_offset` or `step_cosine_with_offset`."""
  type: Optional[str] = None
  constant: ConstantLrConfig = dataclasses.field(default_factory=ConstantLrConfig)
  stepwise: StepwiseLrConfig = dataclasses.field(default_factory=StepwiseLrConfig)
  exponential: ExponentialLrConfig = dataclasses.field(default_factory=ExponentialLrConfig)
  polynomial: PolynomialLrConfig = dataclasses.field(default_factory=PolynomialLrConfig)
  linear: LinearLrConfig = dataclasses.field(default_factory=LinearLrConfig)
  cosine: CosineLrConfig = dataclasses.field(default_factory=CosineLrConfig)
  power: DirectPowerLrConfig = dataclasses.field(default_factory=DirectPowerLrConfig)
  power_linear: PowerAndLinearDecayLrConfig = dataclasses.field(
      default_factory=PowerAndLinearDecayLrConfig)
  power_with_offset: PowerDecayWithOffsetLrConfig = dataclasses.field(
      default_factory=PowerDecayWithOffsetLrConfig)
  step_cosine_with_offset: StepCosineLrConfig = dataclasses.field(
      default_factory=StepCosineLrConfig)

  def validate(self) -> None:
    super().validate()
    if self.type is not None:
      _check_required(self, ('initial_learning_rate', 'decay_steps', 'decay_rate',
                             'total_decay_steps', 'boundaries', 'values'))


@dataclasses.dataclass
class WarmupConfig(hyperparams.OneOfConfig):
  """The warmup one-of: `linear` or `polynomial` (None: no warmup)."""
  type: Optional[str] = None
  linear: LinearWarmupConfig = dataclasses.field(default_factory=LinearWarmupConfig)
  polynomial: PolynomialWarmupConfig = dataclasses.field(default_factory=PolynomialWarmupConfig)

  def validate(self) -> None:
    super().validate()
    if self.type is not None:
      _check_required(self, ('warmup_steps',))
