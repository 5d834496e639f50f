"""Multi-head self-attention with Model Garden's kernel layout ([hidden, heads, head_dim])."""

from typing import Any, Dict, Optional

import tensorflow as tf
import tf_keras

from official.modeling import tf_utils


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class MultiHeadSelfAttention(tf_keras.layers.Layer):
  """Self-attention over a sequence with a padding mask.

  Weights: `query`, `key`, `value` kernels [hidden, heads, head_dim] with biases [heads, head_dim], and
  `attention_output` kernel [heads, head_dim, hidden] with bias [hidden]. Scores and softmax are computed
  in float32 under mixed precision.

  Args:
    num_heads: attention heads.
    key_dim: size of each head.
    dropout: dropout on the attention probabilities.
    kernel_initializer: initializer of the kernels.

  Call args:
    inputs: [batch, seq, hidden].
    attention_mask: optional [batch, seq] (1 = token, 0 = padding) or [batch, q, seq].
    query_length: attend from the first `query_length` positions only (`output_range`).

  Returns:
    [batch, query_length or seq, hidden].

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
    self._dropout = tf_keras.layers.Dropout(dropout)

  def build(self, input_shape):
    hidden = int(input_shape[-1])
    shape = [hidden, self.num_heads, self.key_dim]
    self._qkv = {}
    for name in ('query', 'key', 'value'):
      kernel = self.add_weight(f'{name}/kernel', shape=shape,
                               initializer=tf_utils.clone_initializer(self.kernel_initializer))
      bias = self.add_weight(f'{name}/bias', shape=[self.num_heads, self.key_dim],
                             initializer='zeros')
      self._qkv[name] = (kernel, bias)
    self.output_kernel = self.add_weight(
        'attention_output/kernel', shape=[self.num_heads, self.key_dim, hidden],
        initializer=tf_utils.clone_initializer(self.kernel_initializer))
    self.output_bias = self.add_weight('attention_output/bias', shape=[hidden],
                                       initializer='zeros')
    super().build(input_shape)

  def _project(self, x, name):
    kernel, bias = self._qkv[name]
    return tf.einsum('bsh,hnd->bsnd', x, tf.cast(kernel, x.dtype)) + tf.cast(bias, x.dtype)

  def call(self, inputs, attention_mask=None, query_length: Optional[int] = None,
           training=None):
    queries = inputs if query_length is None else inputs[:, :query_length]
    query = self._project(queries, 'query') * tf.cast(self.key_dim ** -0.5, inputs.dtype)
    key = self._project(inputs, 'key')
    value = self._project(inputs, 'value')
    scores = tf.cast(tf.einsum('bqnd,bknd->bnqk', query, key), tf.float32)
    if attention_mask is not None:
      mask = tf.cast(attention_mask, tf.float32)
      if mask.shape.rank == 2:
        mask = mask[:, None, None, :]
      else:
        mask = mask[:, None, :, :]
        if query_length is not None:
          mask = mask[:, :, :query_length]
      scores += (1.0 - mask) * -1e9
    probs = tf.cast(tf.nn.softmax(scores, axis=-1), inputs.dtype)
    probs = self._dropout(probs, training=training)
    context = tf.einsum('bnqk,bknd->bqnd', probs, value)
    return (tf.einsum('bqnd,ndh->bqh', context, tf.cast(self.output_kernel, inputs.dtype)) +
            tf.cast(self.output_bias, inputs.dtype))

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.update(num_heads=self.num_heads, key_dim=self.key_dim, dropout=self.dropout,
                  kernel_initializer=tf_keras.initializers.serialize(self.kernel_initializer))
    return config
