"""`OptimizationConfig`: optimizer + learning-rate schedule + warmup (Model Garden's schema).

Example (the `trainer.optimizer_config` block of a Model Garden YAML file):
  >>> cfg = OptimizationConfig.from_dict({
  ...     'optimizer': {'type': 'adamw', 'adamw': {'weight_decay_rate': 0.01}},
  ...     'learning_rate': {'type': 'polynomial', 'polynomial': {
  ...         'initial_learning_rate': 1e-4, 'decay_steps': 1000, 'end_learning_rate': 0.0}},
  ...     'warmup': {'type': 'polynomial', 'polynomial': {'warmup_steps': 100}}})
  >>> cfg.validate()
"""

import dataclasses
from typing import Optional

from official.modeling import hyperparams
from official.modeling.optimization.configs import learning_rate_config
from official.modeling.optimization.configs import optimizer_config


@dataclasses.dataclass
class OptimizationConfig(hyperparams.Config):
  """How parameters are updated: `optimizer`, `learning_rate` and `warmup` one-ofs.

  Attributes:
    optimizer: the optimizer one-of (`sgd`, `adam`, `adamw`, `lamb`, `rmsprop`, `lars`, `adagrad`).
    ema: moving averages of the weights (`EMAConfig`), evaluated instead of the trained ones;
      None (the default) disables them.
    learning_rate: the schedule one-of (`constant`, `stepwise`, `exponential`, `polynomial`,
      `linear`, `cosine`, `power`, `power_linear`, `power_with_offset`, `step_cosine_with_offset`).
    warmup: the warmup one-of (`linear`, `polynomial`); None type means no warmup.
  """
  optimizer: optimizer_config.OptimizerConfig = dataclasses.field(
      default_factory=optimizer_config.OptimizerConfig)
  ema: Optional[optimizer_config.EMAConfig] = None
  learning_rate: learning_rate_config.LrConfig = dataclasses.field(
      default_factory=learning_rate_config.LrConfig)
  warmup: learning_rate_config.WarmupConfig = dataclasses.field(
      default_factory=learning_rate_config.WarmupConfig)
