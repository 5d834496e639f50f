"""Shared parts of AdamWeightDecay and LAMB: hyperparameters, first/second moments, decay masks."""

from typing import Any, Dict, List, Optional, Sequence, Tuple

import tensorflow as tf
import tf_keras

from official.modeling import checkpoint_compat
from official.modeling.optimization import gradient_clipping
from official.modeling.optimization import weight_decay


def _pattern_list(patterns: Optional[Sequence[str]], arg: str) -> Optional[List[str]]:
  if patterns is None:
    return None
  if isinstance(patterns, str):
    raise ValueError(f'{arg}: expected a list of regexes, found the string {patterns!r}')
  return [str(p) for p in patterns]


class AdamBase(checkpoint_compat.LegacySlotsMixin, gradient_clipping.GradientClippingMixin,
               tf_keras.optimizers.Optimizer):
  """Adam moments `m`, `v` (slot names as tf_keras Adam), bias-correction terms and decay masks.

  Subclasses implement `update_step` with `self._moments(gradient, variable)` and
  `self.decays(var)`. Checkpoints hold the moments as legacy slots and `iter` (Model Garden's keys;
  `checkpoint_compat`). Which variables are decayed is decided once, in `build`, from the (mirrored)
  model variables' names, so every replica makes the same decision.
  """

  def __init__(self, learning_rate: Any, beta_1: float, beta_2: float, epsilon: float,
               weight_decay_rate: float, include_in_weight_decay: Optional[Sequence[str]],
               exclude_from_weight_decay: Optional[Sequence[str]], name: str, **kwargs: Any):
    if kwargs.pop('weight_decay', None) is not None:
      raise ValueError(f'{name}: use weight_decay_rate (decoupled, regex exclusions), '
                       'not weight_decay')
    decay = kwargs.pop('decay', 0.0)
    super().__init__(name=name, weight_decay=None, **kwargs)
    if decay is None or decay < 0:
      raise ValueError(f'{name}: decay must be >= 0, found {decay!r}')
    # Legacy Keras inverse-time decay: lr / (1 + decay * step) at step 0, 1, ...; 0 disables.
    self.decay = float(decay)
    for arg, value in (('beta_1', beta_1), ('beta_2', beta_2)):
      if not 0.0 <= value < 1.0:
        raise ValueError(f'{name}: {arg} must be in [0, 1), found {value!r}')
    if epsilon <= 0:
      raise ValueError(f'{name}: epsilon must be > 0, found {epsilon!r}')
    if weight_decay_rate < 0:
      raise ValueError(f'{name}: weight_decay_rate must be >= 0, found {weight_decay_rate!r}')
    self._learning_rate = self._build_learning_rate(learning_rate)
    self.beta_1 = float(beta_1)
    self.beta_2 = float(beta_2)
    self.epsilon = float(epsilon)
    self.weight_decay_rate = float(weight_decay_rate)
    self._include_patterns = self._no_dependency(
        _pattern_list(include_in_weight_decay, 'include_in_weight_decay'))
    self._exclude_patterns = self._no_dependency(
        _pattern_list(exclude_from_weight_decay, 'exclude_from_weight_decay'))

  def _decayed_lr(self, dtype: tf.DType) -> tf.Tensor:
    """The learning rate of this step in `dtype`, with the legacy `decay` applied when set."""
    lr = tf.cast(self.learning_rate, dtype)
    if self.decay:
      lr = lr / (1.0 + tf.cast(self.decay, dtype) * tf.cast(self.iterations, dtype))
    return lr

  def _get_hyper(self, name: str, dtype: Optional[tf.DType] = None) -> Any:
    """A hyperparameter by name (`learning_rate`, `beta_1`, `decay`, ...), as legacy Keras
    optimizers expose them."""
    value = self.learning_rate if name in ('learning_rate', 'lr') else getattr(self, name)
    return value if dtype is None else tf.cast(value, dtype)

  def _do_use_weight_decay(self, param_name: str) -> bool:
    """Whether a variable of this name (without `:0`) gets weight decay."""
    return weight_decay.use_weight_decay(param_name, self.weight_decay_rate, self._include_patterns,
                                         self._exclude_patterns)

  def build(self, var_list: Sequence[tf.Variable]) -> None:
    """Creates the `m` and `v` slots and the per-variable decay decisions."""
    super().build(var_list)
    if getattr(self, '_built', False):
      return
    self._built = True
    self._momentums = [self.add_variable_from_reference(v, 'm') for v in var_list]
    self._velocities = [self.add_variable_from_reference(v, 'v') for v in var_list]
    names = [weight_decay.variable_name(v) for v in var_list]
    self._decay_mask = self._no_dependency([
        weight_decay.use_weight_decay(n, self.weight_decay_rate, self._include_patterns,
                                      self._exclude_patterns) and self._use_weight_decay(v)
        for n, v in zip(names, var_list)])
    self._build_extra(var_list, names)
    self.restore_deferred_slots()

  def _build_extra(self, var_list: Sequence[tf.Variable], names: Sequence[str]) -> None:
    """Hook for subclasses' extra slots or masks."""

  def _index(self, variable: tf.Variable) -> int:
    return self._index_dict[self._var_key(variable)]

  def decays(self, variable: tf.Variable) -> bool:
    """Whether `variable` (or a replica's component of it) gets weight decay."""
    return self._decay_mask[self._index(variable)]

  def _moments(self, gradient: Any, variable: tf.Variable) -> Tuple[tf.Tensor, ...]:
    """Updates `m` and `v`; returns (lr, m, v, 1 - beta_1**t, 1 - beta_2**t).

    All in the variable's dtype.
    """
    dtype = variable.dtype
    if isinstance(gradient, tf.IndexedSlices):
      # Embedding gradients: the moments of every row decay each step, so a dense update is exact.
      gradient = tf.convert_to_tensor(gradient)
    gradient = tf.cast(gradient, dtype)
    index = self._index(variable)
    m, v = self._momentums[index], self._velocities[index]
    lr = self._decayed_lr(dtype)
    step = tf.cast(self.iterations + 1, dtype)
    beta_1 = tf.constant(self.beta_1, dtype)
    beta_2 = tf.constant(self.beta_2, dtype)
    m.assign_add((gradient - m) * (1.0 - beta_1))
    v.assign_add((tf.square(gradient) - v) * (1.0 - beta_2))
    return lr, m, v, 1.0 - tf.pow(beta_1, step), 1.0 - tf.pow(beta_2, step)

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.pop('weight_decay', None)
    config.update(
        learning_rate=self._serialize_hyperparameter(self._learning_rate),
        beta_1=self.beta_1, beta_2=self.beta_2, epsilon=self.epsilon,
        weight_decay_rate=self.weight_decay_rate, decay=self.decay,
        exclude_from_weight_decay=self._exclude_patterns)
    return config
