"""Multi-head self-attention with Keras' kernel layout ([hidden, heads, head_dim])."""

from typing import Any, Dict, Optional

import tensorflow as tf
import tf_keras

from official.modeling import tf_utils

# Added to the scores of padded keys: its exp() underflows to exactly 0 in float32.
_MASK_ADDER = -1e9


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class MultiHeadSelfAttention(tf_keras.layers.Layer):
  """Self-attention over a sequence with a padding mask.

  Sub-layers (the variable names and object-checkpoint keys of Keras' `MultiHeadAttention`, which
  Model Garden uses): `_query_dense`/`_key_dense`/`_value_dense` named `query`/`key`/`value`, kernels
  [hidden, heads, head_dim] and biases [heads, head_dim]; `_output_dense` named `attention_output`,
  kernel [heads, head_dim, hidden] and bias [hidden]. The scores of all heads come from one einsum
  into [batch, heads, query, key]; mask and softmax are applied in float32 whatever the compute dtype.

  Args:
    num_heads: attention heads.
    key_dim: size of each head.
    dropout: dropout on the attention probabilities.
    kernel_initializer: initializer of the kernels (biases start at zero).

  Call args:
    inputs: [batch, seq, hidden].
    attention_mask: optional [batch, seq] (1 = token, 0 = padding) or [batch, seq, seq] (sliced like
      the queries when `query_length` is set).
    query_length: attend from the first `query_length` positions only (`output_range`).
    return_attention_scores: also return the float32 probabilities [batch, heads, query, seq].

  Returns:
    [batch, query_length or seq, hidden] (and the probabilities when asked).

  Example:
    >>> layer = MultiHeadSelfAttention(num_heads=2, key_dim=8)
    >>> layer(tf.zeros([2, 5, 16]), tf.ones([2, 5])).shape
    TensorShape([2, 5, 16])
  """

  def __init__(self, num_heads: int, key_dim: int, dropout: float = 0.0,
               kernel_initializer: Any = 'glorot_uniform', **kwargs):
    super().__init__(**kwargs)
    self.num_heads = num_heads
    self.key_dim = key_dim
    self.dropout = dropout
    self.kernel_initializer = tf_keras.initializers.get(kernel_initializer)
    self._dropout_layer = tf_keras.layers.Dropout(dropout)

  def _einsum_dense(self, equation: str, output_shape, bias_axes: str, name: str):
    return tf_keras.layers.EinsumDense(
        equation, output_shape=output_shape, bias_axes=bias_axes,
        kernel_initializer=tf_utils.clone_initializer(self.kernel_initializer), name=name)

  def build(self, input_shape):
    hidden = int(input_shape[-1])
    heads = [None, self.num_heads, self.key_dim]
    self._query_dense = self._einsum_dense('bsh,hnd->bsnd', heads, 'nd', 'query')
    self._key_dense = self._einsum_dense('bsh,hnd->bsnd', heads, 'nd', 'key')
    self._value_dense = self._einsum_dense('bsh,hnd->bsnd', heads, 'nd', 'value')
    self._output_dense = self._einsum_dense('bqnd,ndh->bqh', [None, hidden], 'h',
                                            'attention_output')
    # The sub-layers build on their first call, inside this layer's name scope, so that their
    # variables are named `.../self_attention/query/kernel`.
    super().build(input_shape)

  def call(self, inputs, attention_mask=None, query_length: Optional[int] = None,
           return_attention_scores: bool = False, training=None):
    queries = inputs if query_length is None else inputs[:, :query_length]
    # Scaling the [batch, query, heads, dim] queries is cheaper than scaling the scores.
    query = self._query_dense(queries) * tf.cast(self.key_dim ** -0.5, inputs.dtype)
    key = self._key_dense(inputs)
    value = self._value_dense(inputs)
    scores = tf.cast(tf.einsum('bqnd,bknd->bnqk', query, key), tf.float32)
    if attention_mask is not None:
      mask = tf.cast(attention_mask, tf.float32)
      if mask.shape.rank == 2:
        mask = mask[:, None, None, :]
      else:
        if query_length is not None:
          mask = mask[:, :query_length]
        mask = mask[:, None, :, :]
      scores += (1.0 - mask) * _MASK_ADDER
    probs = tf.nn.softmax(scores, axis=-1)
    dropped = self._dropout_layer(tf.cast(probs, inputs.dtype), training=training)
    context = tf.einsum('bnqk,bknd->bqnd', dropped, value)
    output = self._output_dense(context)
    if return_attention_scores:
      return output, probs
    return output

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.update(num_heads=self.num_heads, key_dim=self.key_dim, dropout=self.dropout,
                  kernel_initializer=tf_keras.initializers.serialize(self.kernel_initializer))
    return config
