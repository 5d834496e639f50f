"""`ExponentialMovingAverage`: an optimizer wrapper that keeps moving averages of the weights.

After each update of the wrapped optimizer (whose `iterations` is then t), every averaged
weight w gets
  average -= (1 - decay_t) * (average - w)
with decay_t = 0 before `start_step` (the average copies w), else
  min(average_decay, (1 + s) / (10 + s)) with s = t - start_step   (`dynamic_decay`), or
  average_decay.
Averages start at zero. Evaluating with the averages swaps them into the model
(`swap_weights`, twice to undo); they are checkpointed with the optimizer (the wrapped optimizer
under `ema_base_optimizer`, the averages under `_average_weights`).

Example:
  >>> optimizer = ExponentialMovingAverage(SGD(0.1), average_decay=0.999)
  >>> optimizer.shadow_copy(model)        # creates the averages (zeros)
  >>> optimizer.apply_gradients(zip(grads, model.trainable_variables))
  >>> optimizer.swap_weights()            # the model now holds the averages
  >>> model.evaluate(...)
  >>> optimizer.swap_weights()            # back to the trained weights
"""

import logging
from typing import Any, Dict, List, Optional, Sequence, Union

import tensorflow as tf
import tf_keras

# The EMA config's clipping fields (shared by every optimizer config); the wrapper clips nothing.
_CLIPPING = ('clipnorm', 'clipvalue', 'global_clipnorm')


def _decay(step: tf.Tensor, average_decay: float, start_step: int,
           dynamic_decay: bool) -> tf.Tensor:
  """The decay after the update that brought `iterations` to `step` (float32 scalar)."""
  since_start = step - float(start_step)
  if dynamic_decay:
    s = tf.maximum(since_start, 0.0)
    decay = tf.minimum(tf.constant(average_decay, tf.float32), (1.0 + s) / (10.0 + s))
  else:
    decay = tf.constant(average_decay, tf.float32)
  return tf.where(since_start < 0.0, tf.zeros_like(decay), decay)


def _is_float(variable: tf.Variable) -> bool:
  dtype = getattr(variable, 'true_dtype', variable.dtype)
  return dtype.is_floating


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class ExponentialMovingAverage(tf_keras.optimizers.Optimizer):
  """Wraps an optimizer; after each of its updates, moves averages of the weights toward them.

  Every other part of the optimizer API (`iterations`, `learning_rate`, `build`, clipping
  attributes, ...) is the wrapped optimizer's.

  Args:
    optimizer: the `tf_keras.optimizers.Optimizer` that computes and applies the updates.
    trainable_weights_only: `shadow_copy(model)` averages `model.trainable_variables` (True)
      or all of `model.variables` (False; e.g. batch-norm statistics too; integer variables are
      left out).
    average_decay: the decay of the averages, in [0, 1].
    start_step: before this optimizer step the averages copy the weights (decay 0).
    dynamic_decay: ramp the decay up as `(1 + s) / (10 + s)` (s: steps since `start_step`),
      capped at `average_decay`.
    name: the optimizer name.
    **kwargs: `clipnorm`, `clipvalue`, `global_clipnorm` (Model Garden's config passes them):
      must be None; clipping belongs to the wrapped optimizer.

  Raises:
    TypeError: `optimizer` is not a `tf_keras.optimizers.Optimizer`, or an unknown argument.
    ValueError: `average_decay` outside [0, 1], a negative `start_step`, or a clipping argument
      set.

  Example:
    >>> optimizer = ExponentialMovingAverage(tf_keras.optimizers.SGD(0.1),
    ...                                      trainable_weights_only=False)
    >>> optimizer.shadow_copy(model)
  """

  def __init__(self, optimizer: tf_keras.optimizers.Optimizer,
               trainable_weights_only: bool = True, average_decay: float = 0.99,
               start_step: int = 0, dynamic_decay: bool = True,
               name: str = 'ExponentialMovingAverage', **kwargs: Any):
    # The base constructor is not called: this wrapper has no learning rate, step counter or
    # slots of its own (those are the wrapped optimizer's).
    if not isinstance(optimizer, tf_keras.optimizers.Optimizer):
      raise TypeError(f'ExponentialMovingAverage: optimizer must be a '
                      f'tf_keras.optimizers.Optimizer, found {type(optimizer).__name__}')
    unknown = sorted(set(kwargs) - set(_CLIPPING))
    if unknown:
      raise TypeError(f'ExponentialMovingAverage: unexpected arguments {unknown}')
    clipping = {k: v for k, v in kwargs.items() if v is not None}
    if clipping:
      raise ValueError(f'ExponentialMovingAverage: expected clipping arguments to be None (set '
                       f'them on the wrapped optimizer), found {clipping}')
    if not 0.0 <= average_decay <= 1.0:
      raise ValueError(f'ExponentialMovingAverage: average_decay must be in [0, 1], found '
                       f'{average_decay!r}')
    if int(start_step) != start_step or start_step < 0:
      raise ValueError(f'ExponentialMovingAverage: start_step must be an integer >= 0, found '
                       f'{start_step!r}')
    self._maybe_initialize_trackable()
    self.name = name
    self._mesh = None
    self._run_with_dtensor = False
    self._optimizer = self._no_dependency(optimizer)
    self._track_trackable(optimizer, 'ema_base_optimizer')
    self._trainable_weights_only = bool(trainable_weights_only)
    self._average_decay = float(average_decay)
    self._start_step = int(start_step)
    self._dynamic_decay = bool(dynamic_decay)
    self._average_weights = None  # tracked (checkpointed) once shadow_copy sets it
    self._model_weights = None  # the averaged variables (not tracked: they are the model's)
    self._pending_model = None  # a model whose variables did not exist yet at shadow_copy
    self._strategy = None  # the strategy the averages were created under

  # ---- the averages ----------------------------------------------------------------------------
  def shadow_copy(self, model_or_variables: Union[tf_keras.Model, Sequence[tf.Variable]]) -> None:
    """Creates the averages (zeros, beside each weight's devices) of the weights to average.

    Call it inside the distribution strategy's scope, once the model's variables exist; given a
    model without variables yet, the averages are created at the first `apply_gradients`.

    Args:
      model_or_variables: a model (its trainable or all floating-point variables, per
        `trainable_weights_only`), or the list of variables to average.

    Raises:
      ValueError: the averages exist already.
    """
    if self.has_shadow_copy:
      raise ValueError('ExponentialMovingAverage.shadow_copy: the averages exist already '
                       '(check has_shadow_copy first)')
    if isinstance(model_or_variables, tf_keras.Model):
      model = model_or_variables
      try:
        variables = (model.trainable_variables if self._trainable_weights_only
                     else model.variables)
      except ValueError:  # a model with a build() method that has not run yet
        variables = []
      variables = [v for v in variables if _is_float(v)]
      if not variables:
        logging.info('ExponentialMovingAverage: the model has no variables yet; the averages '
                     'are created at the first apply_gradients')
        self._pending_model = self._no_dependency(model)
        return
    else:
      variables = list(model_or_variables)
    strategy = tf.distribute.get_strategy()
    averages = []
    for variable in variables:
      dtype = getattr(variable, 'true_dtype', variable.dtype)
      name = f'average/{variable._shared_name}'  # pylint: disable=protected-access
      with strategy.extended.colocate_vars_with(variable):
        averages.append(tf.Variable(tf.zeros(variable.shape, dtype), trainable=False, name=name))
    self._model_weights = self._no_dependency(variables)
    self._average_weights = averages
    self._strategy = self._no_dependency(strategy)
    self._pending_model = self._no_dependency(None)

  @property
  def has_shadow_copy(self) -> bool:
    """Whether the averages exist (`shadow_copy` created them)."""
    return self._average_weights is not None

  @property
  def average_weights(self) -> List[tf.Variable]:
    """The averages, in the order of `shadow_copy`'s variables (empty before it)."""
    return list(self._average_weights or [])

  def _require_shadow_copy(self, caller: str) -> None:
    if not self.has_shadow_copy:
      raise ValueError(f'ExponentialMovingAverage.{caller}: no averages yet; call '
                       'shadow_copy(model) first (inside the strategy scope)')

  def _update_averages(self, strategy: tf.distribute.Strategy) -> None:
    decay = _decay(tf.cast(self.iterations, tf.float32), self._average_decay, self._start_step,
                   self._dynamic_decay)

    def move(average, value):
      rate = tf.cast(1.0 - decay, average.dtype)
      return average.assign_sub(rate * (average - tf.cast(value, average.dtype)))

    for average, value in zip(self._average_weights, self._model_weights):
      strategy.extended.update(average, move, args=(value,), group=False)

  def swap_weights(self) -> None:
    """Exchanges the weights and their averages (exactly); calling it twice restores both.

    Call it outside `strategy.run` (in a cross-replica context, or with no strategy).

    Raises:
      ValueError: inside a replica context, or before `shadow_copy`.
    """
    if tf.distribute.has_strategy() and not tf.distribute.in_cross_replica_context():
      raise ValueError('ExponentialMovingAverage.swap_weights: expected a cross-replica context '
                       '(outside strategy.run), found a replica context')
    self._require_shadow_copy('swap_weights')
    if tf.distribute.has_strategy():
      self._swap()
    else:  # e.g. an Orbit controller's evaluation, outside the strategy's scope
      with self._strategy.scope():
        self._swap()

  @tf.function
  def _swap(self) -> None:
    strategy = tf.distribute.get_strategy()

    def exchange(value, average):
      kept = tf.identity(value)
      value.assign(average)
      average.assign(kept)
      return value

    for value, average in zip(self._model_weights, self._average_weights):
      strategy.extended.update(value, exchange, args=(average,))

  def assign_average_vars(self, var_list: Sequence[tf.Variable]) -> tf.Operation:
    """Assigns each trainable variable of `var_list` its average (non-trainable ones are skipped).

    Args:
      var_list: model variables, each trainable one averaged by this optimizer.

    Returns:
      The grouped assignment op.

    Raises:
      ValueError: before `shadow_copy`, or a trainable variable without an average.
    """
    self._require_shadow_copy('assign_average_vars')
    by_key = {self._var_key(v): a for v, a in zip(self._model_weights, self._average_weights)}
    assigns = []
    for variable in var_list:
      if not variable.trainable:
        continue
      average = by_key.get(self._var_key(variable))
      if average is None:
        raise ValueError(f'ExponentialMovingAverage.assign_average_vars: {variable.name} has no '
                         'average (it was not in shadow_copy\'s variables)')
      assigns.append(variable.assign(average))
    return tf.group(assigns)

  # ---- the optimizer API -----------------------------------------------------------------------
  def apply_gradients(self, grads_and_vars, name: Optional[str] = None,
                      skip_gradients_aggregation: bool = False, **kwargs: Any):
    """Applies the wrapped optimizer's update, then moves the averages (replica context).

    Args:
      grads_and_vars: (gradient, variable) pairs.
      name: the name scope of the update.
      skip_gradients_aggregation: the gradients are already summed across replicas.
      **kwargs: passed to the wrapped optimizer (`experimental_aggregate_gradients`).

    Returns:
      What the wrapped optimizer's `apply_gradients` returns (its `iterations`).

    Raises:
      ValueError: before `shadow_copy`.
    """
    if not self.has_shadow_copy and self._pending_model is not None:
      with tf.init_scope():
        self.shadow_copy(self._pending_model)
    self._require_shadow_copy('apply_gradients')
    result = self._optimizer.apply_gradients(
        grads_and_vars, name=name, skip_gradients_aggregation=skip_gradients_aggregation,
        **kwargs)
    tf.__internal__.distribute.interim.maybe_merge_call(self._update_averages,
                                                        tf.distribute.get_strategy())
    return result

  @property
  def inner_optimizer(self) -> tf_keras.optimizers.Optimizer:
    """The wrapped optimizer."""
    return self._optimizer

  @property
  def iterations(self) -> tf.Variable:
    """The wrapped optimizer's step counter (settable)."""
    return self._optimizer.iterations

  @iterations.setter
  def iterations(self, variable: tf.Variable) -> None:
    self._optimizer.iterations = variable

  @property
  def learning_rate(self) -> Any:
    """The wrapped optimizer's learning rate (settable unless it is a schedule)."""
    return self._optimizer.learning_rate

  @learning_rate.setter
  def learning_rate(self, learning_rate: Any) -> None:
    self._optimizer.learning_rate = learning_rate

  @property
  def lr(self) -> Any:
    """Alias of `learning_rate`."""
    return self._optimizer.learning_rate

  @lr.setter
  def lr(self, learning_rate: Any) -> None:
    self._optimizer.learning_rate = learning_rate

  @property
  def variables(self) -> List[tf.Variable]:
    """The wrapped optimizer's variables, then the averages."""
    return list(self._optimizer.variables) + self.average_weights

  @property
  def weights(self) -> List[tf.Variable]:
    """Alias of `variables`."""
    return self.variables

  def build(self, var_list: Sequence[tf.Variable]) -> None:
    """Creates the wrapped optimizer's slots for `var_list` (the averages: `shadow_copy`)."""
    self._optimizer.build(var_list)

  def aggregate_gradients(self, grads_and_vars):
    """The wrapped optimizer's cross-replica aggregation."""
    return self._optimizer.aggregate_gradients(grads_and_vars)

  def exclude_from_weight_decay(self, var_list=None, var_names=None) -> None:
    """The wrapped optimizer's `exclude_from_weight_decay`."""
    self._optimizer.exclude_from_weight_decay(var_list=var_list, var_names=var_names)

  def finalize_variable_values(self, var_list: Sequence[tf.Variable]) -> None:
    """The wrapped optimizer's `finalize_variable_values` (the averages are not copied in)."""
    self._optimizer.finalize_variable_values(var_list)

  def __getattr__(self, name: str) -> Any:
    # Only public names reach the wrapped optimizer: private ones (Trackable state) must not.
    if name.startswith('_') or '_optimizer' not in self.__dict__:
      raise AttributeError(f'{type(self).__name__} has no attribute {name!r}')
    return getattr(self._optimizer, name)

  def _trackable_children(self, save_type: str = 'checkpoint', **kwargs: Any):
    # Not the base Optimizer's: it caches its children once, before the averages may exist.
    base = tf.__internal__.tracking.AutoTrackable
    return base._trackable_children(self, save_type, **kwargs)  # pylint: disable=protected-access

  def get_config(self) -> Dict[str, Any]:
    """The constructor arguments, with the wrapped optimizer serialized."""
    return {
        'optimizer': tf_keras.optimizers.serialize(self._optimizer),
        'trainable_weights_only': self._trainable_weights_only,
        'average_decay': self._average_decay,
        'start_step': self._start_step,
        'dynamic_decay': self._dynamic_decay,
        'name': self.name,
    }

  @classmethod
  def from_config(cls, config: Dict[str, Any],
                  custom_objects: Optional[Dict[str, Any]] = None) -> 'ExponentialMovingAverage':
    """Rebuilds the wrapper and its wrapped optimizer from `get_config()`."""
    config = dict(config)
    optimizer = config.pop('optimizer')
    if not isinstance(optimizer, tf_keras.optimizers.Optimizer):
      optimizer = tf_keras.optimizers.deserialize(optimizer, custom_objects=custom_objects,
                                                  use_legacy_optimizer=False)
    return cls(optimizer, **config)


def find_moving_average(optimizer: Any) -> Optional[ExponentialMovingAverage]:
  """The `ExponentialMovingAverage` that is `optimizer` or that it wraps (e.g. inside a
  `LossScaleOptimizer`), else None.

  Example:
    >>> ema = find_moving_average(trainer.optimizer)
    >>> if ema is not None and ema.has_shadow_copy: ema.swap_weights()
  """
  for candidate in (optimizer, getattr(optimizer, 'inner_optimizer', None)):
    if isinstance(candidate, ExponentialMovingAverage):
      return candidate
  return None
