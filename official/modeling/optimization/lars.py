"""`LARS`: layer-wise adaptive rate scaling (You et al., 2017), momentum SGD for large batches.

Per step, for each variable w with summed (and clipped) gradient g and momentum buffer v:
  g += weight_decay_rate * w                                   [if decayed]
  classic momentum (default):
    r = eeta * ||w|| / ||g|| if both norms are > 0 else 1     [1 for variables excluded from
                                                              adaptation]
    v = momentum * v + lr * r * g;  w -= momentum * v + lr * r * g  (nesterov)  or  w -= v
  popular momentum (`classic_momentum=False`):
    v = momentum * v + g;  u = momentum * v + g (nesterov) or v
    r = eeta * ||w|| / ||u|| (as above);  w -= lr * r * u
"""

from typing import Any, Dict, Optional, Sequence

import tensorflow as tf
import tf_keras

from official.modeling.optimization import gradient_clipping
from official.modeling.optimization import lr_schedule
from official.modeling.optimization import weight_decay


def _trust_ratio(eeta: float, weights: tf.Tensor, direction: tf.Tensor) -> tf.Tensor:
  w_norm = tf.norm(weights)
  d_norm = tf.norm(direction)
  return tf.where((w_norm > 0) & (d_norm > 0), eeta * tf.math.divide_no_nan(w_norm, d_norm),
                  tf.ones_like(w_norm))


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class LARS(gradient_clipping.GradientClippingMixin, tf_keras.optimizers.Optimizer):
  """LARS optimizer: momentum SGD whose step is scaled per variable by `eeta * ||w|| / ||g||`.

  Args:
    learning_rate: a float or a `LearningRateSchedule` of the optimizer step.
    momentum: the momentum coefficient (>= 0).
    weight_decay_rate: L2 decay added to the gradient; 0 disables.
    eeta: the trust coefficient.
    nesterov: use Nesterov momentum.
    classic_momentum: apply the learning rate inside the momentum (True) or after it (False).
    exclude_from_weight_decay: regexes (re.search on names without `:0`) of variables not decayed.
    exclude_from_layer_adaptation: regexes of variables updated with trust ratio 1; None means the
      same list as `exclude_from_weight_decay`.
    name: the optimizer name.
    **kwargs: `global_clipnorm`, `clipnorm`, `clipvalue`, `gradient_transformers`,
      `gradient_aggregator`, and other tf_keras Optimizer arguments.

  Example:
    >>> opt = LARS(0.1, momentum=0.9, weight_decay_rate=1e-4,
    ...            exclude_from_weight_decay=['batch_normalization', 'bias'])
  """

  def __init__(self, learning_rate: lr_schedule.LearningRate = 0.01, momentum: float = 0.9,
               weight_decay_rate: float = 0.0, eeta: float = 0.001, nesterov: bool = False,
               classic_momentum: bool = True,
               exclude_from_weight_decay: Optional[Sequence[str]] = None,
               exclude_from_layer_adaptation: Optional[Sequence[str]] = None,
               name: str = 'LARS', **kwargs: Any):
    super().__init__(name=name, **kwargs)
    if momentum < 0:
      raise ValueError(f'{name}: momentum must be >= 0, found {momentum!r}')
    if weight_decay_rate < 0:
      raise ValueError(f'{name}: weight_decay_rate must be >= 0, found {weight_decay_rate!r}')
    if eeta <= 0:
      raise ValueError(f'{name}: eeta must be > 0, found {eeta!r}')
    self._learning_rate = self._build_learning_rate(learning_rate)
    self.momentum = float(momentum)
    self.weight_decay_rate = float(weight_decay_rate)
    self.eeta = float(eeta)
    self.nesterov = bool(nesterov)
    self.classic_momentum = bool(classic_momentum)
    self._exclude_patterns = self._no_dependency(
        None if exclude_from_weight_decay is None else [str(p) for p in exclude_from_weight_decay])
    self._adaptation_exclusions = self._no_dependency(
        None if exclude_from_layer_adaptation is None
        else [str(p) for p in exclude_from_layer_adaptation])

  def _do_use_weight_decay(self, param_name: str) -> bool:
    """Whether a variable of this name (without `:0`) gets weight decay."""
    return weight_decay.use_weight_decay(param_name, self.weight_decay_rate, None,
                                         self._exclude_patterns)

  def _do_layer_adaptation(self, param_name: str) -> bool:
    """Whether a variable of this name (without `:0`) is scaled by the trust ratio."""
    exclusions = self._adaptation_exclusions
    if exclusions is None:
      exclusions = self._exclude_patterns
    return not weight_decay.matches_any(param_name, exclusions)

  def build(self, var_list: Sequence[tf.Variable]) -> None:
    """Creates the momentum slots and the per-variable decay and adaptation decisions."""
    super().build(var_list)
    if getattr(self, '_built', False):
      return
    self._built = True
    self._momentums = [self.add_variable_from_reference(v, 'momentum') for v in var_list]
    names = [weight_decay.variable_name(v) for v in var_list]
    self._decay_mask = self._no_dependency([self._do_use_weight_decay(n) for n in names])
    self._adapt_mask = self._no_dependency([self._do_layer_adaptation(n) for n in names])

  def update_step(self, gradient: Any, variable: tf.Variable) -> None:
    """Applies one LARS step to `variable`."""
    dtype = variable.dtype
    if isinstance(gradient, tf.IndexedSlices):
      gradient = tf.convert_to_tensor(gradient)
    gradient = tf.cast(gradient, dtype)
    index = self._index_dict[self._var_key(variable)]
    velocity = self._momentums[index]
    lr = tf.cast(self.learning_rate, dtype)
    momentum = tf.cast(self.momentum, dtype)
    if self._decay_mask[index]:
      gradient += tf.cast(self.weight_decay_rate, dtype) * variable
    adapt = self._adapt_mask[index]
    if self.classic_momentum:
      scaled_lr = lr * _trust_ratio(self.eeta, variable, gradient) if adapt else lr
      next_v = momentum * velocity + scaled_lr * gradient
      update = momentum * next_v + scaled_lr * gradient if self.nesterov else next_v
      variable.assign_sub(update)
    else:
      next_v = momentum * velocity + gradient
      update = momentum * next_v + gradient if self.nesterov else next_v
      ratio = _trust_ratio(self.eeta, variable, update) if adapt else 1.0
      variable.assign_sub(lr * ratio * update)
    velocity.assign(next_v)

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.update(
        learning_rate=self._serialize_hyperparameter(self._learning_rate),
        momentum=self.momentum, weight_decay_rate=self.weight_decay_rate, eeta=self.eeta,
        nesterov=self.nesterov, classic_momentum=self.classic_momentum,
        exclude_from_weight_decay=self._exclude_patterns,
        exclude_from_layer_adaptation=self._adaptation_exclusions)
    return config
