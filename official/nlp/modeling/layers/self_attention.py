"""Multi-head self-attention with Keras' kernel layout ([hidden, heads, head_dim])."""

from typing import Any, Dict, Optional

import tensorflow as tf
import tf_keras

from official.modeling import fused_ops
from official.modeling import tf_utils
from official.nlp.modeling.layers import dropout as dropout_lib

# Added to the scores of padded keys: its exp() underflows to exactly 0 in float32.
_MASK_ADDER = -1e9


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class MultiHeadSelfAttention(tf_keras.layers.Layer):
  """Self-attention over a sequence with a padding mask.

  Sub-layers (the variable names and object-checkpoint keys of Keras' `MultiHeadAttention`, which
  Model Garden uses): `_query_dense`/`_key_dense`/`_value_dense` named `query`/`key`/`value`, kernels
  [hidden, heads, head_dim] and biases [heads, head_dim]; `_output_dense` named `attention_output`,
  kernel [heads, head_dim, hidden] and bias [hidden]. Q, K and V come from one matmul, the scores of
  all heads from one batched matmul into [batch, heads, query, key]; mask, softmax (float32 whatever
  the compute dtype) and dropout run as one fused kernel (`fused_ops.masked_softmax_dropout`).

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
    self._dropout_layer = dropout_lib.Dropout(dropout)

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
    # Built here, inside this layer's name scope, so that their variables are named
    # `.../self_attention/query/kernel`; `call` computes with their variables directly.
    sequence_shape = tf.TensorShape([None, None, hidden])
    for layer, shape in ((self._query_dense, sequence_shape), (self._key_dense, sequence_shape),
                         (self._value_dense, sequence_shape),
                         (self._output_dense, [None, None, self.num_heads, self.key_dim])):
      with tf.name_scope(layer.name):
        layer.build(tf.TensorShape(shape))
    # Creates the dropout layer's random generator now (the fused softmax kernel only takes seeds
    # from it), so that a deterministic run's checkpoint includes it.
    self._dropout_layer.build(tf.TensorShape([None, self.num_heads, None, None]))
    super().build(input_shape)

  def _projection(self, layers, inputs):
    """[batch * seq, hidden] @ the layers' kernels side by side (+ biases): one matmul for all."""
    dtype = inputs.dtype
    hidden = int(inputs.shape[-1])
    width = self.num_heads * self.key_dim
    kernels = [tf.reshape(tf.cast(layer.kernel, dtype), [hidden, width]) for layer in layers]
    biases = [tf.reshape(tf.cast(layer.bias, dtype), [width]) for layer in layers]
    kernel = kernels[0] if len(kernels) == 1 else tf.concat(kernels, axis=1)
    bias = biases[0] if len(biases) == 1 else tf.concat(biases, axis=0)
    return tf_utils.bias_add(tf.matmul(tf.reshape(inputs, [-1, hidden]), kernel), bias)

  def _heads(self, projected, batch, length, count: int):
    """[batch * length, count * heads * dim] -> `count` tensors [batch, heads, length, dim]."""
    split = tf.reshape(projected, [batch, length, count, self.num_heads, self.key_dim])
    return tf.unstack(tf.transpose(split, [2, 0, 3, 1, 4]), num=count)

  def call(self, inputs, attention_mask=None, query_length: Optional[int] = None,
           return_attention_scores: bool = False, training=None):
    # Q, K and V come from one matmul against the three kernels side by side (the variables stay
    # separate, [hidden, heads, head_dim] each), and the heads are laid out [batch, heads, seq, dim]
    # once, so that scores and the weighted sum are plain batched matmuls. Faster on CPU than
    # three einsum projections and einsum attention; the same numbers up to float rounding.
    dtype = inputs.dtype
    batch, length = _dim(inputs, 0), _dim(inputs, 1)
    if query_length is None:
      query_len = length
      query, key, value = self._heads(
          self._projection([self._query_dense, self._key_dense, self._value_dense], inputs),
          batch, length, 3)
    else:
      query_len = query_length
      (query,) = self._heads(self._projection([self._query_dense], inputs[:, :query_length]),
                             batch, query_length, 1)
      key, value = self._heads(self._projection([self._key_dense, self._value_dense], inputs),
                               batch, length, 2)
    # The 1/sqrt(head size) scale is applied by the softmax kernel (in float32, at no extra pass).
    scale = self.key_dim ** -0.5
    scores = tf.matmul(query, key, transpose_b=True)
    mask_adder = _mask_adder(attention_mask, query_length)
    training = dropout_lib.resolve_training(training)
    if isinstance(training, bool):
      # Mask, float32 softmax and dropout as one XLA kernel each way (fused_ops).
      drop = training and self.dropout > 0
      seed = self._dropout_layer.dropout_seed() if drop else None
      dropped = fused_ops.masked_softmax_dropout(scores, mask_adder, seed,
                                                 self.dropout if drop else 0.0, dtype, scale)
      probs = (fused_ops.masked_softmax(scores, mask_adder, scale) if return_attention_scores
               else None)
    else:  # a symbolic training flag: plain ops
      probs = fused_ops.masked_softmax(scores, mask_adder, scale)
      dropped = self._dropout_layer(tf.cast(probs, dtype), training=training)
    context = tf.transpose(tf.matmul(dropped, value), [0, 2, 1, 3])  # [batch, query, heads, dim]
    width = self.num_heads * self.key_dim
    hidden = int(inputs.shape[-1])
    kernel = tf.reshape(tf.cast(self._output_dense.kernel, dtype), [width, hidden])
    output = tf_utils.bias_add(tf.matmul(tf.reshape(context, [-1, width]), kernel),
                               tf.cast(self._output_dense.bias, dtype))
    output = tf.reshape(output, [batch, query_len, hidden])
    if return_attention_scores:
      return output, probs
    return output

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.update(num_heads=self.num_heads, key_dim=self.key_dim, dropout=self.dropout,
                  kernel_initializer=tf_keras.initializers.serialize(self.kernel_initializer))
    return config


def _mask_adder(attention_mask, query_length: Optional[int]) -> Optional[tf.Tensor]:
  """float32 [batch, 1, 1 or query, seq]: 0 for keys to attend to, -1e9 for padding."""
  if attention_mask is None:
    return None
  mask = tf.cast(attention_mask, tf.float32)
  if mask.shape.rank == 2:
    mask = mask[:, None, None, :]
  else:
    if query_length is not None:
      mask = mask[:, :query_length]
    mask = mask[:, None, :, :]
  return (1.0 - mask) * _MASK_ADDER


def _dim(tensor: tf.Tensor, axis: int):
  """The static size of `axis` when known, else the dynamic one."""
  static = tensor.shape[axis]
  return static if static is not None else tf.shape(tensor)[axis]
