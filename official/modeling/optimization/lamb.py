"""`LAMB`: layer-wise adaptive moments (You et al., 2019), with regex exclusions.

Per step t, for each variable w with summed (and clipped) gradient g:
  m = beta_1 * m + (1 - beta_1) * g;  v = beta_2 * v + (1 - beta_2) * g**2
  u = (m / (1 - beta_1**t)) / (sqrt(v / (1 - beta_2**t)) + epsilon)
      + weight_decay_rate * w  [if decayed]
  r = ||w|| / ||u|| if both norms are > 0 else 1     [1 for variables excluded from layer
                                                     adaptation]
  w -= lr * r * u
"""

from typing import Any, Dict, Optional, Sequence

import tensorflow as tf
import tf_keras

from official.modeling.optimization import _adam_base
from official.modeling.optimization import lr_schedule
from official.modeling.optimization import weight_decay


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class LAMB(_adam_base.AdamBase):
  """LAMB optimizer: Adam direction plus decoupled decay, scaled per variable by a trust ratio.

  Args:
    learning_rate: a float or a `LearningRateSchedule` of the optimizer step.
    beta_1, beta_2: moment decay rates in [0, 1).
    epsilon: added to sqrt of the bias-corrected second moment.
    weight_decay_rate: decoupled decay rate; 0 disables.
    exclude_from_weight_decay: regexes (re.search on names without `:0`) of variables not decayed.
    exclude_from_layer_adaptation: regexes of variables updated with trust ratio 1; None means the
      same list as `exclude_from_weight_decay`.
    name: the optimizer name.
    **kwargs: `global_clipnorm`, `clipnorm`, `clipvalue`, `gradient_transformers`,
      `gradient_aggregator`, `decay` (legacy inverse-time decay of the learning rate), and other
      tf_keras Optimizer arguments.

  Example:
    >>> opt = LAMB(1e-3, weight_decay_rate=0.01, exclude_from_weight_decay=['layer_norm', 'bias'])
  """

  def __init__(self, learning_rate: lr_schedule.LearningRate = 0.001, beta_1: float = 0.9,
               beta_2: float = 0.999, epsilon: float = 1e-6, weight_decay_rate: float = 0.0,
               exclude_from_weight_decay: Optional[Sequence[str]] = None,
               exclude_from_layer_adaptation: Optional[Sequence[str]] = None,
               name: str = 'LAMB', **kwargs: Any):
    super().__init__(learning_rate, beta_1, beta_2, epsilon, weight_decay_rate, None,
                     exclude_from_weight_decay, name, **kwargs)
    self._layer_adaptation_exclusions = self._no_dependency(_adam_base._pattern_list(  # pylint: disable=protected-access
        exclude_from_layer_adaptation, 'exclude_from_layer_adaptation'))

  def _do_layer_adaptation(self, param_name: str) -> bool:
    """Whether a variable of this name (without `:0`) is scaled by the trust ratio."""
    exclusions = self._layer_adaptation_exclusions
    if exclusions is None:
      exclusions = self._exclude_patterns
    return not weight_decay.matches_any(param_name, exclusions)

  def _build_extra(self, var_list, names) -> None:
    self._adapt_mask = self._no_dependency([self._do_layer_adaptation(n) for n in names])

  def update_step(self, gradient: Any, variable: tf.Variable) -> None:
    """Applies one LAMB step to `variable` (called per variable, per replica component)."""
    lr, m, v, bias_1, bias_2 = self._moments(gradient, variable)
    update = (m / bias_1) / (tf.sqrt(v / bias_2) + self.epsilon)
    if self.decays(variable):
      update += tf.cast(self.weight_decay_rate, variable.dtype) * variable
    if self._adapt_mask[self._index(variable)]:
      w_norm = tf.norm(variable)
      u_norm = tf.norm(update)
      ratio = tf.where((w_norm > 0) & (u_norm > 0), tf.math.divide_no_nan(w_norm, u_norm),
                       tf.ones_like(w_norm))
      update *= ratio
    variable.assign_sub(lr * update)

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.update(exclude_from_layer_adaptation=self._layer_adaptation_exclusions)
    return config
