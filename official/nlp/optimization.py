"""BERT's optimizer in one call: `create_optimizer` (Model Garden's `official.nlp.optimization`).

`create_optimizer(init_lr, num_train_steps, num_warmup_steps)` gives AdamW (or LAMB) with weight
decay 0.01 (not on LayerNorm or bias variables) over a polynomial decay from `init_lr` to
`end_lr`, after a `WarmUp` that ramps from 0 to `init_lr`. The optimizers are
`official.modeling.optimization`'s; experiment configs build the same through
`OptimizerFactory`.

Example:
  >>> optimizer = create_optimizer(init_lr=1e-4, num_train_steps=10000, num_warmup_steps=100)
  >>> optimizer.learning_rate      # 0.0 at step 0; 5e-05 after 50 steps (half the warmup)
"""

import logging
from typing import Any, Callable, Dict, Optional, Union

import tensorflow as tf
import tf_keras

from official.modeling import optimization

AdamWeightDecay = optimization.AdamWeightDecay
LAMB = optimization.LAMB

# Variables whose names match these are not decayed (BERT's choice).
_NO_DECAY = ['LayerNorm', 'layer_norm', 'bias']
_OPTIMIZERS = {'adamw': AdamWeightDecay, 'lamb': LAMB}


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class WarmUp(tf_keras.optimizers.schedules.LearningRateSchedule):
  """`initial_learning_rate * (step / warmup_steps) ** power` before `warmup_steps`, then
  `decay_schedule_fn(step)` (counted from step 0, not from the end of the warmup).

  Args:
    initial_learning_rate: the rate the warmup reaches.
    decay_schedule_fn: the schedule (a callable of the step) after the warmup.
    warmup_steps: the warmup's length in steps (> 0).
    power: the warmup curve's exponent (1.0: linear).
    name: the name scope of the computation.

  Example:
    >>> decay = tf_keras.optimizers.schedules.PolynomialDecay(1e-3, 1000, 0.0)
    >>> WarmUp(1e-3, decay, warmup_steps=10)(5)    # 5e-4
  """

  def __init__(self, initial_learning_rate: float,
               decay_schedule_fn: Callable[[Any], tf.Tensor], warmup_steps: int,
               power: float = 1.0, name: Optional[str] = None):
    super().__init__()
    if not warmup_steps or warmup_steps <= 0:
      raise ValueError(f'WarmUp: warmup_steps must be > 0, found {warmup_steps!r}')
    self.initial_learning_rate = initial_learning_rate
    self.decay_schedule_fn = decay_schedule_fn
    self.warmup_steps = warmup_steps
    self.power = power
    self.name = name

  def __call__(self, step: Any) -> tf.Tensor:
    with tf.name_scope(self.name or 'WarmUp'):
      step = tf.cast(step, tf.float32)
      warmup_steps = tf.cast(self.warmup_steps, tf.float32)
      warmup_lr = self.initial_learning_rate * tf.pow(step / warmup_steps, self.power)
      return tf.cond(step < warmup_steps, lambda: tf.cast(warmup_lr, tf.float32),
                     lambda: tf.cast(self.decay_schedule_fn(step), tf.float32))

  def get_config(self) -> Dict[str, Any]:
    decay = self.decay_schedule_fn
    if isinstance(decay, tf_keras.optimizers.schedules.LearningRateSchedule):
      decay = tf_keras.optimizers.schedules.serialize(decay)
    return {'initial_learning_rate': self.initial_learning_rate, 'decay_schedule_fn': decay,
            'warmup_steps': self.warmup_steps, 'power': self.power, 'name': self.name}

  @classmethod
  def from_config(cls, config: Dict[str, Any]) -> 'WarmUp':
    config = dict(config)
    if isinstance(config['decay_schedule_fn'], dict):
      config['decay_schedule_fn'] = tf_keras.optimizers.schedules.deserialize(
          config['decay_schedule_fn'])
    return cls(**config)


def create_optimizer(init_lr: float, num_train_steps: int, num_warmup_steps: int,
                     end_lr: float = 0.0, optimizer_type: str = 'adamw', beta_1: float = 0.9,
                     poly_power: float = 1.0) -> Union[AdamWeightDecay, LAMB]:
  """BERT's optimizer: AdamW or LAMB over a warmup and a polynomial decay.

  Args:
    init_lr: the peak learning rate (reached at the end of the warmup).
    num_train_steps: the decay's length: the rate is `end_lr` from this step on.
    num_warmup_steps: the warmup's length (0: no warmup).
    end_lr: the final learning rate.
    optimizer_type: 'adamw' or 'lamb'.
    beta_1: the first-moment decay.
    poly_power: the decay's exponent (1.0: linear).

  Returns:
    The optimizer: weight decay 0.01 except on LayerNorm and bias variables, beta_2 0.999,
    epsilon 1e-6.

  Raises:
    ValueError: an unknown `optimizer_type`.

  Example:
    >>> create_optimizer(2e-5, num_train_steps=3000, num_warmup_steps=300, optimizer_type='lamb')
  """
  if optimizer_type not in _OPTIMIZERS:
    raise ValueError(f'optimizer_type: expected one of {sorted(_OPTIMIZERS)}, found '
                     f'{optimizer_type!r}')
  schedule = tf_keras.optimizers.schedules.PolynomialDecay(
      initial_learning_rate=init_lr, decay_steps=num_train_steps, end_learning_rate=end_lr,
      power=poly_power)
  if num_warmup_steps:
    schedule = WarmUp(initial_learning_rate=init_lr, decay_schedule_fn=schedule,
                      warmup_steps=num_warmup_steps)
  logging.info('create_optimizer: %s, peak learning rate %g, %d warmup steps of %d',
               optimizer_type, init_lr, num_warmup_steps, num_train_steps)
  return _OPTIMIZERS[optimizer_type](learning_rate=schedule, weight_decay_rate=0.01,
                                     beta_1=beta_1, beta_2=0.999, epsilon=1e-6,
                                     exclude_from_weight_decay=_NO_DECAY)
