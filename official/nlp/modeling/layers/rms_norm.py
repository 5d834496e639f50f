"""Root-mean-square normalization (Zhang and Sennrich 2019): LayerNorm without centering or bias."""

from typing import Any, Dict

import tensorflow as tf
import tf_keras


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class RMSNorm(tf_keras.layers.Layer):
  """Root-mean-square normalization: x / sqrt(mean(x^2) + epsilon) * scale, in float32.

  Args:
    epsilon: added to the mean square.

  Example:
    >>> RMSNorm()(tf.constant([[3.0, 4.0]])).numpy().round(4)   # rms 3.5355
    array([[0.8485, 1.1314]], dtype=float32)
  """

  def __init__(self, epsilon: float = 1e-6, **kwargs):
    kwargs.setdefault('dtype', tf.float32)
    super().__init__(**kwargs)
    self.epsilon = epsilon

  def build(self, input_shape):
    self.scale = self.add_weight('scale', shape=[int(input_shape[-1])], initializer='ones')
    super().build(input_shape)

  def call(self, inputs):
    x = tf.cast(inputs, tf.float32)
    return x * tf.math.rsqrt(tf.reduce_mean(tf.square(x), -1, keepdims=True) + self.epsilon) * (
        self.scale)

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.update(epsilon=self.epsilon)
    return config
