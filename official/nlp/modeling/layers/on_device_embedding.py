"""Token and position embedding layers."""

from typing import Any, Dict, Optional

import tensorflow as tf
import tf_keras

from official.modeling import bfloat16_sums


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class OnDeviceEmbedding(tf_keras.layers.Layer):
  """An embedding table looked up with `tf.gather` (or a one-hot matmul for small tables).

  Args:
    vocab_size: rows of the table.
    embedding_width: columns of the table.
    initializer: the table's initializer.
    use_one_hot: look up by one-hot matmul (fast for tiny tables such as token types).
    scale_factor: multiply the looked-up rows by this (e.g. sqrt(embedding_width)); None: no
      scaling.

  Call args: ids int [batch, seq]. Returns [batch, seq, embedding_width].

  Example:
    >>> OnDeviceEmbedding(100, 16)(tf.zeros([2, 5], tf.int32)).shape
    TensorShape([2, 5, 16])
  """

  def __init__(self, vocab_size: int, embedding_width: int, initializer: Any = 'glorot_uniform',
               use_one_hot: bool = False, scale_factor: Optional[float] = None, **kwargs):
    super().__init__(**kwargs)
    self.vocab_size = vocab_size
    self.embedding_width = embedding_width
    self.initializer = tf_keras.initializers.get(initializer)
    self.use_one_hot = use_one_hot
    self.scale_factor = scale_factor

  def build(self, input_shape):
    self.embeddings = self.add_weight('embeddings', shape=[self.vocab_size, self.embedding_width],
                                      initializer=self.initializer)
    super().build(input_shape)

  def call(self, inputs):
    if self.use_one_hot:
      table = tf.cast(self.embeddings, self.compute_dtype)
      one_hot = tf.one_hot(inputs, self.vocab_size, dtype=table.dtype)
      rows = bfloat16_sums.einsum('bsv,vd->bsd', one_hot, table)
    else:
      # Gathering from the variable reads only the looked-up rows (then cast under mixed
      # precision) instead of casting the whole table first.
      rows = tf.cast(tf.gather(self.embeddings, inputs), self.compute_dtype)
    if self.scale_factor is not None:
      rows *= tf.cast(self.scale_factor, rows.dtype)
    return rows

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.update(vocab_size=self.vocab_size, embedding_width=self.embedding_width,
                  initializer=tf_keras.initializers.serialize(self.initializer),
                  use_one_hot=self.use_one_hot, scale_factor=self.scale_factor)
    return config
