"""Learned absolute position embeddings."""

from typing import Any, Dict

import tensorflow as tf
import tf_keras


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class PositionEmbedding(tf_keras.layers.Layer):
  """Returns the learned position embeddings [seq, width] for a [batch, seq, width] input.

  Args:
    max_length: the longest sequence (rows of the table).
    initializer: the table's initializer.

  Example:
    >>> PositionEmbedding(max_length=32)(tf.zeros([2, 5, 16])).shape
    TensorShape([1, 5, 16])
  """

  def __init__(self, max_length: int, initializer: Any = 'glorot_uniform', **kwargs):
    super().__init__(**kwargs)
    self.max_length = max_length
    self.initializer = tf_keras.initializers.get(initializer)

  def build(self, input_shape):
    self.embeddings = self.add_weight('embeddings', shape=[self.max_length, int(input_shape[-1])],
                                      initializer=self.initializer)
    super().build(input_shape)

  def call(self, inputs):
    length = tf.shape(inputs)[1]
    return tf.cast(self.embeddings[None, :length], self.compute_dtype)

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.update(max_length=self.max_length,
                  initializer=tf_keras.initializers.serialize(self.initializer))
    return config
