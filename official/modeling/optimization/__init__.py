"""Optimizers, learning-rate schedules and their configs (Model Garden's `optimization` API).

Example:
  >>> from official.modeling import optimization
  >>> config = optimization.OptimizationConfig.from_dict({
  ...     'optimizer': {'type': 'adamw', 'adamw': {'weight_decay_rate': 0.01}},
  ...     'learning_rate': {'type': 'polynomial', 'polynomial': {
  ...         'initial_learning_rate': 1e-4, 'decay_steps': 1000, 'end_learning_rate': 0.0}},
  ...     'warmup': {'type': 'polynomial', 'polynomial': {'warmup_steps': 100}}})
  >>> factory = optimization.OptimizerFactory(config)
  >>> optimizer = factory.build_optimizer(factory.build_learning_rate())
"""

from official.modeling.optimization.adamw import AdamWeightDecay
from official.modeling.optimization.configs.learning_rate_config import ConstantLrConfig
from official.modeling.optimization.configs.learning_rate_config import CosineLrConfig
from official.modeling.optimization.configs.learning_rate_config import DirectPowerLrConfig
from official.modeling.optimization.configs.learning_rate_config import ExponentialLrConfig
from official.modeling.optimization.configs.learning_rate_config import LinearLrConfig
from official.modeling.optimization.configs.learning_rate_config import LinearWarmupConfig
from official.modeling.optimization.configs.learning_rate_config import LrConfig
from official.modeling.optimization.configs.learning_rate_config import PolynomialLrConfig
from official.modeling.optimization.configs.learning_rate_config import PolynomialWarmupConfig
from official.modeling.optimization.configs.learning_rate_config import PowerAndLinearDecayLrConfig
from official.modeling.optimization.configs.learning_rate_config import PowerDecayWithOffsetLrConfig
from official.modeling.optimization.configs.learning_rate_config import StepCosineLrConfig
from official.modeling.optimization.configs.learning_rate_config import StepwiseLrConfig
from official.modeling.optimization.configs.learning_rate_config import WarmupConfig
from official.modeling.optimization.configs.optimization_config import OptimizationConfig
from official.modeling.optimization.configs.optimizer_config import AdagradConfig
from official.modeling.optimization.configs.optimizer_config import AdamConfig
from official.modeling.optimization.configs.optimizer_config import AdamWeightDecayConfig
from official.modeling.optimization.configs.optimizer_config import BaseOptimizerConfig
from official.modeling.optimization.configs.optimizer_config import EMAConfig
from official.modeling.optimization.configs.optimizer_config import LAMBConfig
from official.modeling.optimization.configs.optimizer_config import LARSConfig
from official.modeling.optimization.configs.optimizer_config import OptimizerConfig
from official.modeling.optimization.configs.optimizer_config import RMSPropConfig
from official.modeling.optimization.configs.optimizer_config import SGDConfig
from official.modeling.optimization.ema_optimizer import ExponentialMovingAverage
from official.modeling.optimization.keras_optimizers import Adagrad
from official.modeling.optimization.keras_optimizers import Adam
from official.modeling.optimization.keras_optimizers import RMSprop
from official.modeling.optimization.keras_optimizers import SGD
from official.modeling.optimization.lamb import LAMB
from official.modeling.optimization.lars import LARS
from official.modeling.optimization.lr_schedule import CosineDecayWithOffset
from official.modeling.optimization.lr_schedule import DirectPowerDecay
from official.modeling.optimization.lr_schedule import ExponentialDecayWithOffset
from official.modeling.optimization.lr_schedule import LinearWarmup
from official.modeling.optimization.lr_schedule import PiecewiseConstantDecayWithOffset
from official.modeling.optimization.lr_schedule import PolynomialDecayWithOffset
from official.modeling.optimization.lr_schedule import PolynomialWarmUp
from official.modeling.optimization.lr_schedule import PowerAndLinearDecay
from official.modeling.optimization.lr_schedule import PowerDecayWithOffset
from official.modeling.optimization.lr_schedule import StepCosineDecayWithOffset
from official.modeling.optimization.optimizer_factory import OptimizerFactory
from official.modeling.optimization.optimizer_factory import register_optimizer_cls
