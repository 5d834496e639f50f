"""Keras-NLP's `ReversibleEmbedding`: an embedding that can also project hidden states to logits."""

from typing import Any, Dict

import tensorflow as tf
import tf_keras

from official.modeling import bfloat16_sums
from official.modeling import tf_utils


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class ReversibleEmbedding(tf_keras.layers.Embedding):
  """`call(ids)` embeds; `call(hidden, reverse=True)` returns logits over the vocabulary.

  Args:
    input_dim: vocabulary size.
    output_dim: embedding width.
    tie_weights: reverse with the transposed embedding table (else a separate
      `reverse_embeddings` [output_dim, input_dim]).
    embeddings_initializer: the table's initializer.
    **kwargs: other `tf_keras.layers.Embedding` arguments.

  Example:
    >>> embedding = ReversibleEmbedding(100, 16)
    >>> hidden = embedding(tf.zeros([2, 5], tf.int32))        # [2, 5, 16]
    >>> embedding(hidden, reverse=True).shape
    TensorShape([2, 5, 100])
  """

  def __init__(self, input_dim: int, output_dim: int, tie_weights: bool = True,
               embeddings_initializer: Any = 'uniform', **kwargs):
    super().__init__(input_dim, output_dim, embeddings_initializer=embeddings_initializer,
                     **kwargs)
    self.tie_weights = tie_weights

  def build(self, input_shape=None):
    super().build(input_shape)
    if not self.tie_weights:
      self.reverse_embeddings = self.add_weight(
          'reverse_embeddings', shape=[self.output_dim, self.input_dim],
          initializer=tf_utils.clone_initializer(self.embeddings_initializer))

  def call(self, inputs, reverse: bool = False):
    if not reverse:
      return super().call(inputs)
    inputs = tf.cast(inputs, self.compute_dtype)
    # Einsums over the last axis (any leading shape): no transposed copy of the table, and the
    # table's gradient is one matmul rather than a broadcast batch matmul summed afterwards.
    if self.tie_weights:
      return bfloat16_sums.einsum('...d,vd->...v', inputs,
                                  tf.cast(self.embeddings, self.compute_dtype))
    return bfloat16_sums.einsum('...d,dv->...v', inputs,
                                tf.cast(self.reverse_embeddings, self.compute_dtype))

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config['tie_weights'] = self.tie_weights
    return config
