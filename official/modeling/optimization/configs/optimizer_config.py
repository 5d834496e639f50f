"""Optimizer configs: the `optimizer` one-of of `OptimizationConfig` (Model Garden field names).

Example:
  >>> cfg = OptimizerConfig.from_dict({'type': 'adamw', 'adamw': {'weight_decay_rate': 0.01}})
  >>> cfg.get().epsilon
  1e-07
"""

import dataclasses
from typing import List, Optional

from official.modeling import hyperparams

_BETA = dict(ge=0.0, lt=1.0)


@dataclasses.dataclass
class BaseOptimizerConfig(hyperparams.Config):
  """Gradient clipping shared by all optimizers, applied to the cross-replica summed gradients.

  Attributes:
    clipnorm: clip each gradient to this L2 norm (per variable); None disables.
    clipvalue: clip each gradient element to [-clipvalue, clipvalue]; None disables.
    global_clipnorm: clip all gradients jointly to this global L2 norm; None disables.
  """
  clipnorm: Optional[float] = hyperparams.field(None, gt=0.0)
  clipvalue: Optional[float] = hyperparams.field(None, gt=0.0)
  global_clipnorm: Optional[float] = hyperparams.field(None, gt=0.0)

  def validate(self) -> None:
    super().validate()
    if self.clipnorm is not None and self.global_clipnorm is not None:
      raise hyperparams.ConfigError(
          'clipnorm', f'at most one of clipnorm and global_clipnorm can be set, found '
          f'clipnorm={self.clipnorm} and global_clipnorm={self.global_clipnorm}')


@dataclasses.dataclass
class SGDConfig(BaseOptimizerConfig):
  """Stochastic gradient descent with optional (Nesterov) momentum."""
  name: str = 'SGD'
  decay: float = hyperparams.unsupported(
      0.0, 'the legacy per-step `decay` is not supported; use a learning_rate schedule')
  nesterov: bool = False
  momentum: float = hyperparams.field(0.0, ge=0.0)


@dataclasses.dataclass
class AdamConfig(BaseOptimizerConfig):
  """Adam without weight decay."""
  name: str = 'Adam'
  beta_1: float = hyperparams.field(0.9, **_BETA)
  beta_2: float = hyperparams.field(0.999, **_BETA)
  epsilon: float = hyperparams.field(1e-07, gt=0.0)
  amsgrad: bool = False


@dataclasses.dataclass
class AdamWeightDecayConfig(BaseOptimizerConfig):
  """Adam with decoupled weight decay (BERT's optimizer).

  Attributes:
    weight_decay_rate: `var -= lr * weight_decay_rate * var` each step; 0 disables.
    include_in_weight_decay: regexes (searched in variable names) always decayed; wins over
      exclusion.
    exclude_from_weight_decay: regexes of variables not decayed, e.g. ['LayerNorm', 'layer_norm',
      'bias'].
    gradient_clip_norm: global-norm clipping of the summed gradients; 0 or None disables.
  """
  name: str = 'AdamWeightDecay'
  beta_1: float = hyperparams.field(0.9, **_BETA)
  beta_2: float = hyperparams.field(0.999, **_BETA)
  epsilon: float = hyperparams.field(1e-07, gt=0.0)
  amsgrad: bool = False
  weight_decay_rate: float = hyperparams.field(0.0, ge=0.0)
  include_in_weight_decay: Optional[List[str]] = None
  exclude_from_weight_decay: Optional[List[str]] = None
  gradient_clip_norm: Optional[float] = hyperparams.field(1.0, ge=0.0)


@dataclasses.dataclass
class LAMBConfig(BaseOptimizerConfig):
  """LAMB: Adam with decoupled weight decay and a per-variable trust ratio (layer adaptation).

  Attributes:
    exclude_from_weight_decay: regexes of variables not decayed.
    exclude_from_layer_adaptation: regexes of variables updated without the trust ratio; None means
      the same list as `exclude_from_weight_decay`.
  """
  name: str = 'LAMB'
  beta_1: float = hyperparams.field(0.9, **_BETA)
  beta_2: float = hyperparams.field(0.999, **_BETA)
  epsilon: float = hyperparams.field(1e-06, gt=0.0)
  weight_decay_rate: float = hyperparams.field(0.0, ge=0.0)
  exclude_from_weight_decay: Optional[List[str]] = None
  exclude_from_layer_adaptation: Optional[List[str]] = None


@dataclasses.dataclass
class RMSPropConfig(BaseOptimizerConfig):
  """RMSprop: gradients divided by a moving root mean square (`rho`), optionally centered."""
  name: str = 'RMSprop'
  rho: float = hyperparams.field(0.9, **_BETA)
  momentum: float = hyperparams.field(0.0, ge=0.0)
  epsilon: float = hyperparams.field(1e-7, gt=0.0)
  centered: bool = False


@dataclasses.dataclass
class AdagradConfig(BaseOptimizerConfig):
  """Adagrad: per-element rates from the sum of squared gradients."""
  name: str = 'Adagrad'
  initial_accumulator_value: float = hyperparams.field(0.1, ge=0.0)
  epsilon: float = hyperparams.field(1e-07, gt=0.0)


@dataclasses.dataclass
class EMAConfig(BaseOptimizerConfig):
  """Moving averages of the weights (`ema_optimizer.ExponentialMovingAverage`), evaluated instead
  of the trained weights; the `ema` field of `OptimizationConfig` (None disables).

  Attributes:
    trainable_weights_only: average the trainable variables only (False: all floating-point
      variables, e.g. batch-norm statistics too).
    average_decay: the decay of the averages.
    start_step: before this optimizer step the averages copy the weights.
    dynamic_decay: ramp the decay up as (1 + s) / (10 + s), s = steps since `start_step`, capped
      at `average_decay`.
    clipnorm, clipvalue, global_clipnorm: must stay None (clip in the `optimizer` member).
  """
  name: str = 'ExponentialMovingAverage'
  trainable_weights_only: bool = True
  average_decay: float = hyperparams.field(0.99, ge=0.0, le=1.0)
  start_step: int = hyperparams.field(0, ge=0)
  dynamic_decay: bool = True

  def validate(self) -> None:
    super().validate()
    for key in ('clipnorm', 'clipvalue', 'global_clipnorm'):
      if getattr(self, key) is not None:
        raise hyperparams.ConfigError(key, f'expected None (the moving average clips nothing; set '
                                      f'it in the optimizer member), found {getattr(self, key)}')


@dataclasses.dataclass
class LARSConfig(BaseOptimizerConfig):
  """LARS: momentum SGD with a per-variable trust ratio `eeta * ||w|| / ||g||` (large batches).

  Attributes:
    momentum: the momentum coefficient.
    eeta: the trust coefficient.
    weight_decay_rate: L2 decay added to the gradient; 0 disables.
    nesterov: use Nesterov momentum.
    classic_momentum: scale the gradient by the learning rate inside the momentum (True), or the
      momentum after it (False).
    exclude_from_weight_decay: regexes of variables not decayed.
    exclude_from_layer_adaptation: regexes of variables updated without the trust ratio; None means
      the same list as `exclude_from_weight_decay`.
  """
  name: str = 'LARS'
  momentum: float = hyperparams.field(0.9, ge=0.0)
  eeta: float = hyperparams.field(0.001, gt=0.0)
  weight_decay_rate: float = hyperparams.field(0.0, ge=0.0)
  nesterov: bool = False
  classic_momentum: bool = True
  exclude_from_weight_decay: Optional[List[str]] = None
  exclude_from_layer_adaptation: Optional[List[str]] = None


@dataclasses.dataclass
class OptimizerConfig(hyperparams.OneOfConfig):
  """The optimizer one-of: `type` is one of `sgd`, `adam`, `adamw`, `lamb`, `rmsprop`, `lars`,
  `adagrad` (None until chosen)."""
  type: Optional[str] = None
  sgd: SGDConfig = dataclasses.field(default_factory=SGDConfig)
  adam: AdamConfig = dataclasses.field(default_factory=AdamConfig)
  adamw: AdamWeightDecayConfig = dataclasses.field(default_factory=AdamWeightDecayConfig)
  lamb: LAMBConfig = dataclasses.field(default_factory=LAMBConfig)
  rmsprop: RMSPropConfig = dataclasses.field(default_factory=RMSPropConfig)
  lars: LARSConfig = dataclasses.field(default_factory=LARSConfig)
  adagrad: AdagradConfig = dataclasses.field(default_factory=AdagradConfig)
