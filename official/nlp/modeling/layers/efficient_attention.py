"""Multi-head attention variants of Model Garden's `TransformerEncoderBlock` options.

Grouped key/value heads (`num_kv_heads`: GQA, or MQA with 1), block-diagonal attention
(`src_block_size`/`tgt_block_size`), sigmoid instead of softmax (`use_sigmoid_attn`) and Linformer
low-rank keys/values (`linformer_dim`). BERT's own attention is `MultiHeadSelfAttention`.
"""

from typing import Any, Dict, Optional

import tensorflow as tf
import tf_keras

from official.modeling import bfloat16_sums
from official.modeling import tf_utils
from official.nlp.modeling.layers import einsum_dense

_MASK_ADDER = -1e9


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class EfficientAttention(tf_keras.layers.Layer):
  """Attention of `query` [batch, T, width] over `value` [batch, S, width'] with the options above.

  Sub-layers (Keras `MultiHeadAttention` names): `query` [width, heads, key_dim], `key`
  [width', kv_heads, key_dim], `value` [width', kv_heads, value_dim], `attention_output`
  [heads, value_dim, output width]; with Linformer `linformer_key` (and `linformer_value` unless
  shared), dense projections of the S positions to `linformer_dim`.

  Args:
    num_heads: query heads.
    key_dim: query/key head size.
    value_dim: value head size (default key_dim).
    num_kv_heads: key/value heads (must divide num_heads; default num_heads).
    dropout: dropout on the attention weights.
    use_bias: biases in the projections.
    output_shape: output width (default: the query's width).
    kernel_initializer: kernel initializer.
    src_block_size: query block size of block-diagonal attention (query block i attends to key
      block i only); T must be a multiple.
    tgt_block_size: key block size (default src_block_size).
    use_sigmoid_attn: weights sigmoid(score + sigmoid_attn_bias) instead of a softmax.
    sigmoid_attn_bias: the bias of the sigmoid (default 0).
    linformer_dim: project the S key/value positions to this many (static S needed).
    linformer_shared_kv_projection: one projection for keys and values.

  Call args: query, value, attention_mask ([batch, T, S] or [batch, S]; 1 = attend; not
  applicable with Linformer), return_attention_scores, training.

  Returns: [batch, T, output width] (and the weights: [batch, heads, T, S], [batch, heads,
  T / src_block_size, src_block_size, tgt_block_size] block-diagonal, or [batch, heads, T,
  linformer_dim]).

  Example:
    >>> layer = EfficientAttention(num_heads=4, key_dim=8, num_kv_heads=1)
    >>> layer(tf.zeros([2, 6, 16]), tf.zeros([2, 6, 16])).shape
    TensorShape([2, 6, 16])
  """

  def __init__(self, num_heads: int, key_dim: int, value_dim: Optional[int] = None,
               num_kv_heads: Optional[int] = None, dropout: float = 0.0, use_bias: bool = True,
               output_shape: Optional[int] = None, kernel_initializer: Any = 'glorot_uniform',
               src_block_size: Optional[int] = None, tgt_block_size: Optional[int] = None,
               use_sigmoid_attn: bool = False, sigmoid_attn_bias: Optional[float] = None,
               linformer_dim: Optional[int] = None, linformer_shared_kv_projection: bool = True,
               **kwargs):
    super().__init__(**kwargs)
    num_kv_heads = num_kv_heads or num_heads
    if num_heads % num_kv_heads:
      raise ValueError(f'num_kv_heads {num_kv_heads} must divide num_heads {num_heads}')
    self.num_heads = num_heads
    self.key_dim = key_dim
    self.value_dim = value_dim or key_dim
    self.num_kv_heads = num_kv_heads
    self.dropout = dropout
    self.use_bias = use_bias
    self.output_width = output_shape
    self.kernel_initializer = tf_keras.initializers.get(kernel_initializer)
    self.src_block_size = src_block_size
    self.tgt_block_size = tgt_block_size or src_block_size
    self.use_sigmoid_attn = use_sigmoid_attn
    self.sigmoid_attn_bias = sigmoid_attn_bias
    self.linformer_dim = linformer_dim
    self.linformer_shared_kv_projection = linformer_shared_kv_projection
    self._dropout_layer = tf_keras.layers.Dropout(dropout)

  def _dense(self, equation: str, output_shape, bias_axes: str, name: str):
    return einsum_dense.Float32SumEinsumDense(
        equation, output_shape=output_shape, bias_axes=bias_axes if self.use_bias else None,
        kernel_initializer=tf_utils.clone_initializer(self.kernel_initializer), name=name)

  def build(self, input_shape):
    width = self.output_width or int(input_shape[-1])
    self._query_dense = self._dense('btw,whd->bthd', [None, self.num_heads, self.key_dim], 'hd',
                                    'query')
    self._key_dense = self._dense('bsw,wgd->bsgd', [None, self.num_kv_heads, self.key_dim], 'gd',
                                  'key')
    self._value_dense = self._dense('bsw,wgd->bsgd', [None, self.num_kv_heads, self.value_dim],
                                    'gd', 'value')
    self._output_dense = self._dense('bthd,hdw->btw', [None, width], 'w', 'attention_output')
    if self.linformer_dim:
      self._linformer_key = tf_keras.layers.Dense(self.linformer_dim, use_bias=False,
                                                  name='linformer_key')
      self._linformer_value = self._linformer_key
      if not self.linformer_shared_kv_projection:
        self._linformer_value = tf_keras.layers.Dense(self.linformer_dim, use_bias=False,
                                                      name='linformer_value')
    super().build(input_shape)

  def _weights(self, scores, mask):
    """Attention weights of float32 `scores`, `mask` (1 = attend) broadcastable to them."""
    if self.use_sigmoid_attn:
      weights = tf.sigmoid(scores + (self.sigmoid_attn_bias or 0.0))
      return weights if mask is None else weights * mask
    if mask is not None:
      scores += (1.0 - mask) * _MASK_ADDER
    return tf.nn.softmax(scores, axis=-1)

  def call(self, query, value, attention_mask=None, return_attention_scores: bool = False,
           training=None):
    dtype = query.dtype
    q = self._query_dense(query) * tf.cast(self.key_dim ** -0.5, dtype)  # [b, T, H, dk]
    k = self._key_dense(value)  # [b, S, G, dk]
    v = self._value_dense(value)  # [b, S, G, dv]
    if self.linformer_dim:
      # Project the S positions: [b, S, G, d] -> [b, L, G, d].
      project = lambda x, layer: tf.transpose(layer(tf.transpose(x, [0, 2, 3, 1])), [0, 3, 1, 2])
      k, v = project(k, self._linformer_key), project(v, self._linformer_value)
      attention_mask = None  # positions are mixed: a key mask no longer applies
    repeat = self.num_heads // self.num_kv_heads
    if repeat > 1:  # grouped heads: every kv head serves `repeat` query heads
      k, v = tf.repeat(k, repeat, axis=2), tf.repeat(v, repeat, axis=2)
    mask = None
    if attention_mask is not None:
      mask = tf.cast(attention_mask, tf.float32)
      if mask.shape.rank == 2:
        mask = mask[:, None, :]  # [b, 1 or T, S]
    if self.src_block_size:
      weights, context = self._block_attention(q, k, v, mask, training)
    else:
      scores = tf.cast(bfloat16_sums.einsum('bthd,bshd->bhts', q, k), tf.float32)
      weights = self._weights(scores, None if mask is None else mask[:, None])
      dropped = self._dropout_layer(tf.cast(weights, dtype), training=training)
      context = bfloat16_sums.einsum('bhts,bshd->bthd', dropped, v)
    output = self._output_dense(context)
    return (output, weights) if return_attention_scores else output

  def _block_attention(self, q, k, v, mask, training):
    """Query block i attends to key block i: weights [b, H, blocks, src, tgt]."""
    src, tgt = self.src_block_size, self.tgt_block_size
    blocks = tf.shape(q)[1] // src
    static_blocks = q.shape[1] // src if q.shape[1] is not None else None
    split = lambda x, size: tf.reshape(x, tf.concat([tf.shape(x)[:1], [blocks, size],
                                                     tf.shape(x)[2:]], 0))
    qb, kb, vb = split(q, src), split(k, tgt), split(v, tgt)  # [b, n, size, H, d]
    scores = tf.cast(bfloat16_sums.einsum('bnqhd,bnkhd->bhnqk', qb, kb), tf.float32)
    block_mask = None
    if mask is not None:
      full = tf.broadcast_to(mask, [tf.shape(q)[0], tf.shape(q)[1], tf.shape(k)[1]])
      full = tf.reshape(full, [tf.shape(q)[0], blocks, src, blocks, tgt])
      # The diagonal blocks: [b, src, tgt, n, n] -> diag -> [b, n, src, tgt].
      diagonal = tf.linalg.diag_part(tf.transpose(full, [0, 2, 4, 1, 3]))
      block_mask = tf.transpose(diagonal, [0, 3, 1, 2])[:, None]
    weights = self._weights(scores, block_mask)
    weights = tf.ensure_shape(weights, [None, self.num_heads, static_blocks, src, tgt])
    dropped = self._dropout_layer(tf.cast(weights, q.dtype), training=training)
    context = bfloat16_sums.einsum('bhnqk,bnkhd->bnqhd', dropped, vb)
    shape = tf.concat([tf.shape(q)[:2], [self.num_heads, self.value_dim]], 0)
    return weights, tf.reshape(context, shape)

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.update(num_heads=self.num_heads, key_dim=self.key_dim, value_dim=self.value_dim,
                  num_kv_heads=self.num_kv_heads, dropout=self.dropout, use_bias=self.use_bias,
                  output_shape=self.output_width,
                  kernel_initializer=tf_keras.initializers.serialize(self.kernel_initializer),
                  src_block_size=self.src_block_size, tgt_block_size=self.tgt_block_size,
                  use_sigmoid_attn=self.use_sigmoid_attn,
                  sigmoid_attn_bias=self.sigmoid_attn_bias, linformer_dim=self.linformer_dim,
                  linformer_shared_kv_projection=self.linformer_shared_kv_projection)
    return config
