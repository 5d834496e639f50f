"""Multi-head self-attention with Keras' kernel layout ([hidden, heads, head_dim])."""

from typing import Any, Callable, Dict, Optional

import tensorflow as tf
import tf_keras

from official.modeling import fused_ops
from official.modeling import tf_utils
from official.nlp.modeling.layers import dropout as dropout_lib
from official.nlp.modeling.layers import rotary_embedding

# Added to the scores of padded keys: its exp() underflows to exactly 0 in float32.
_MASK_ADDER = -1e9


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class MultiHeadSelfAttention(tf_keras.layers.Layer):
  """Self-attention over a sequence with a padding mask.

  Sub-layers (the variable names and object-checkpoint keys of Keras' `MultiHeadAttention`, which
  Model Garden uses): `_query_dense`/`_key_dense`/`_value_dense` named `query`/`key`/`value`,
  kernels [hidden, heads, head_dim] and biases [heads, head_dim]; `_output_dense` named
  `attention_output`, kernel [heads, head_dim, hidden] and bias [hidden]. Q, K and V come from one
  matmul, the scores of all heads from one batched matmul into [batch, heads, query, key]; mask,
  softmax (float32 whatever the compute dtype) and dropout run as one fused kernel
  (`fused_ops.masked_softmax_dropout`).

  Args:
    num_heads: attention heads.
    key_dim: size of each head.
    dropout: dropout on the attention probabilities.
    kernel_initializer: initializer of the kernels (biases start at zero).
    use_bias: biases in the four projections (False: no bias variables).
    rotary_theta: rotary position embeddings (`rotary_embedding`, HF's rotate-half layout) with
      this base, applied to the queries and keys after their projection (None: none).
    attention_window: local attention: query i attends to keys j with |i - j| <=
      attention_window // 2 only (HF ModernBERT's `local_attention`, e.g. 128), on top of the
      attention mask (None: global attention). With a static sequence length of more than
      3 * (attention_window // 2) it is computed block by block (`blocked_local_attention`):
      cost and memory grow linearly with the length instead of quadratically.

  Call args:
    inputs: [batch, seq, hidden].
    attention_mask: optional [batch, seq] (1 = token, 0 = padding) or [batch, seq, seq] (its rows
      taken like the queries; e.g. padding and document boundaries of packed rows).
    query_length: attend from the first `query_length` positions only (`output_range`).
    query_positions: int [batch, queries]: attend from these positions only, in this order (e.g.
      a pretraining loss's [CLS] and masked positions); the keys are every position. Not with
      `query_length`.
    return_attention_scores: also return the float32 probabilities [batch, heads, query, seq].
    position_ids: int [batch, seq] positions of the rotary embeddings (default 0..seq - 1; packed
      rows restart them per document); only with `rotary_theta`.
    document_ids: int [batch, seq]: query i attends to key j only where
      `document_ids[i] == document_ids[j]` (packed rows: one id per document), on top of the
      attention mask and the window.

  Returns:
    [batch, queries (query_length, query_positions' width or seq), hidden] (and the
    probabilities when asked).

  Example:
    >>> layer = MultiHeadSelfAttention(num_heads=2, key_dim=8)
    >>> layer(tf.zeros([2, 5, 16]), tf.ones([2, 5])).shape
    TensorShape([2, 5, 16])
  """

  def __init__(self, num_heads: int, key_dim: int, dropout: float = 0.0,
               kernel_initializer: Any = 'glorot_uniform', use_bias: bool = True,
               rotary_theta: Optional[float] = None, attention_window: Optional[int] = None,
               **kwargs):
    super().__init__(**kwargs)
    if rotary_theta is not None and key_dim % 2:
      raise ValueError(f'rotary_theta needs an even head size, found key_dim={key_dim}')
    if attention_window is not None and attention_window < 1:
      raise ValueError(f'attention_window must be a positive int or None, found {attention_window}')
    self.num_heads = num_heads
    self.key_dim = key_dim
    self.dropout = dropout
    self.kernel_initializer = tf_keras.initializers.get(kernel_initializer)
    self.use_bias = use_bias
    self.rotary_theta = float(rotary_theta) if rotary_theta is not None else None
    self.attention_window = attention_window
    self._dropout_layer = dropout_lib.Dropout(dropout)

  def _einsum_dense(self, equation: str, output_shape, bias_axes: str, name: str):
    return tf_keras.layers.EinsumDense(
        equation, output_shape=output_shape, bias_axes=bias_axes if self.use_bias else None,
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
    kernel = kernels[0] if len(kernels) == 1 else tf.concat(kernels, axis=1)
    projected = tf.matmul(tf.reshape(inputs, [-1, hidden]), kernel)
    if not self.use_bias:
      return projected
    biases = [tf.reshape(tf.cast(layer.bias, dtype), [width]) for layer in layers]
    bias = biases[0] if len(biases) == 1 else tf.concat(biases, axis=0)
    return tf_utils.bias_add(projected, bias)

  def _heads(self, projected, batch, length, count: int):
    """[batch * length, count * heads * dim] -> `count` tensors [batch, heads, length, dim]."""
    split = tf.reshape(projected, [batch, length, count, self.num_heads, self.key_dim])
    return tf.unstack(tf.transpose(split, [2, 0, 3, 1, 4]), num=count)

  def call(self, inputs, attention_mask=None, query_length: Optional[int] = None,
           return_attention_scores: bool = False, training=None, position_ids=None,
           document_ids=None, query_positions=None):
    # Q, K and V come from one matmul against the three kernels side by side (the variables stay
    # separate, [hidden, heads, head_dim] each), and the heads are laid out [batch, heads, seq, dim]
    # once, so that scores and the weighted sum are plain batched matmuls. Faster on CPU than
    # three einsum projections and einsum attention; the same numbers up to float rounding.
    dtype = inputs.dtype
    batch, length = _dim(inputs, 0), _dim(inputs, 1)
    if query_length is not None and query_positions is not None:
      raise ValueError(f'{self.name}: give query_length or query_positions, not both')
    queries = _Queries(query_length, query_positions)
    if queries.all:
      query_len = length
      query, key, value = self._heads(
          self._projection([self._query_dense, self._key_dense, self._value_dense], inputs),
          batch, length, 3)
    else:
      query_len = queries.count(length)
      (query,) = self._heads(self._projection([self._query_dense], queries.rows(inputs)),
                             batch, query_len, 1)
      key, value = self._heads(self._projection([self._key_dense, self._value_dense], inputs),
                               batch, length, 2)
    if self.rotary_theta is not None:
      query, key = self._rotate(query, key, position_ids, length, queries)
    elif position_ids is not None:
      raise ValueError(f'{self.name}: position_ids were given but rotary_theta is None (no '
                       'position-dependent attention)')
    # The 1/sqrt(head size) scale is applied by the softmax kernel (in float32, at no extra pass).
    training = dropout_lib.resolve_training(training)
    block = self._local_block_size(length, queries, return_attention_scores, attention_mask)
    if block:
      context = blocked_local_attention(
          query, key, value, block, self.attention_window // 2,
          lambda scores, adder: self._softmax_dropout(scores, adder, training, dtype, False)[0],
          attention_mask, document_ids)
      probs = None
    else:
      scores = tf.matmul(query, key, transpose_b=True)
      mask_adder = _mask_adder(attention_mask, queries)
      allowed = None
      if self.attention_window is not None:
        if queries.positions is None:
          allowed = local_attention_mask(length, self.attention_window, query_length)[None]
        else:  # [batch, queries, seq]
          distance = tf.abs(queries.positions[:, :, None] - tf.range(length)[None, None, :])
          allowed = tf.cast(distance <= self.attention_window // 2, tf.float32)
      if document_ids is not None:
        same = _same_document(document_ids, queries)
        allowed = same if allowed is None else allowed * same
      if allowed is not None:
        extra = (1.0 - allowed[:, None]) * _MASK_ADDER  # [batch or 1, 1, query, seq]
        mask_adder = extra if mask_adder is None else mask_adder + extra
      dropped, probs = self._softmax_dropout(scores, mask_adder, training, dtype,
                                             return_attention_scores)
      context = tf.matmul(dropped, value)
    context = tf.transpose(context, [0, 2, 1, 3])  # [batch, query, heads, dim]
    width = self.num_heads * self.key_dim
    hidden = int(inputs.shape[-1])
    kernel = tf.reshape(tf.cast(self._output_dense.kernel, dtype), [width, hidden])
    output = tf.matmul(tf.reshape(context, [-1, width]), kernel)
    if self.use_bias:
      output = tf_utils.bias_add(output, tf.cast(self._output_dense.bias, dtype))
    output = tf.reshape(output, [batch, query_len, hidden])
    if return_attention_scores:
      return output, probs
    return output

  def _local_block_size(self, length, queries: '_Queries', return_attention_scores,
                        attention_mask) -> Optional[int]:
    """The block size of the blocked sliding-window path, or None for the full score matrix.

    Blocked when the window is set, the length is static and longer than three blocks (below
    that the full matrix is smaller), every position is a query, and neither a [batch, seq, seq]
    mask nor the probabilities (which are [query, seq]) are given or asked for.
    """
    mask_rank = None if attention_mask is None else tf.convert_to_tensor(attention_mask).shape.rank
    if (self.attention_window is None or not queries.all or return_attention_scores
        or not isinstance(length, int) or mask_rank not in (None, 2)):
      return None
    block = max(self.attention_window // 2, 1)
    return block if length > 3 * block else None

  def _softmax_dropout(self, scores, mask_adder, training, dtype, want_probs: bool):
    """(dropout(softmax(scores * scale + mask_adder)) in `dtype`, float32 probabilities or None).

    Mask, float32 softmax and dropout run as one XLA kernel each way (`fused_ops`); a symbolic
    `training` flag chooses between the two kernels with `tf.cond` (the same bits as a Python
    flag).
    """
    if not isinstance(training, bool):
      return tf.cond(tf.cast(training, tf.bool),
                     lambda: self._softmax_dropout(scores, mask_adder, True, dtype, want_probs),
                     lambda: self._softmax_dropout(scores, mask_adder, False, dtype, want_probs))
    scale = self.key_dim ** -0.5
    drop = training and self.dropout > 0
    seed = self._dropout_layer.dropout_seed() if drop else None
    dropped = fused_ops.masked_softmax_dropout(scores, mask_adder, seed,
                                               self.dropout if drop else 0.0, dtype, scale)
    probs = fused_ops.masked_softmax(scores, mask_adder, scale) if want_probs else None
    return dropped, probs

  def _rotate(self, query, key, position_ids, length, queries: '_Queries'):
    """Queries and keys [batch, heads, len, dim] rotated by their positions (RoPE)."""
    if position_ids is None:
      position_ids = tf.range(length)[None, :]
    position_ids = tf.convert_to_tensor(position_ids)
    if position_ids.shape.rank != 2:
      raise ValueError(f'{self.name}: position_ids must be [batch, seq], found shape '
                       f'{position_ids.shape}')
    cos_sin = lambda ids: [t[:, None] for t in rotary_embedding.rotary_cos_sin(  # the heads axis
        ids, self.key_dim, self.rotary_theta, query.dtype)]
    cos, sin = cos_sin(position_ids)
    # `rotary_embedding.apply_rotary`'s values (float32 inside), one XLA kernel each way.
    key = fused_ops.rotary(key, cos, sin)
    if queries.positions is None:
      query_len = _dim(query, 2)
      query = fused_ops.rotary(query, cos[:, :, :query_len], sin[:, :, :query_len])
    else:  # the position ids of the query positions
      ids = tf.broadcast_to(position_ids, [tf.shape(queries.positions)[0], length])
      query = fused_ops.rotary(query, *cos_sin(queries.rows(ids)))
    return query, key

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.update(num_heads=self.num_heads, key_dim=self.key_dim, dropout=self.dropout,
                  kernel_initializer=tf_keras.initializers.serialize(self.kernel_initializer),
                  use_bias=self.use_bias, rotary_theta=self.rotary_theta,
                  attention_window=self.attention_window)
    return config


def local_attention_mask(length, window: int, query_length=None) -> tf.Tensor:
  """float32 [query_length or length, length]: 1 where |i - j| <= window // 2, else 0.

  The band of sliding-window (local) attention as HF ModernBERT defines it: `window` is the total
  width, e.g. 128 lets each token see 64 positions on either side. Built from two ranges (static
  shapes when the lengths are), so it compiles with XLA; multiply it into a padding or
  per-document mask to combine them.

  Args:
    length: the number of keys (int or scalar tensor).
    window: the total window width.
    query_length: the number of queries, the first positions (default `length`).

  Example:
    >>> local_attention_mask(4, 2).numpy()
    array([[1., 1., 0., 0.],
           [1., 1., 1., 0.],
           [0., 1., 1., 1.],
           [0., 0., 1., 1.]], dtype=float32)
  """
  queries = tf.range(length if query_length is None else query_length)
  distance = tf.abs(queries[:, None] - tf.range(length)[None, :])
  return tf.cast(distance <= window // 2, tf.float32)


def blocked_local_attention(query: tf.Tensor, key: tf.Tensor, value: tf.Tensor, block: int,
                            half_window: int, softmax: Callable[[tf.Tensor, tf.Tensor], tf.Tensor],
                            attention_mask: Optional[tf.Tensor] = None,
                            document_ids: Optional[tf.Tensor] = None) -> tf.Tensor:
  """Sliding-window attention computed block by block: linear in the sequence length.

  The sequence is cut into blocks of `block` queries; block k attends to the keys of blocks
  k - 1, k and k + 1 (3 * block keys), which hold every key within `half_window <= block` of its
  queries; a static band mask keeps |i - j| <= half_window. Scores are
  [batch, heads, blocks, block, 3 * block] instead of [batch, heads, seq, seq]. The same result
  as the full score matrix with the band mask (up to float rounding).

  Args:
    query, key, value: [batch, heads, seq, dim] (static seq).
    block: queries per block (>= half_window).
    half_window: query i sees keys j with |i - j| <= half_window.
    softmax: `(scores [..., keys], float32 mask adder broadcastable to them) -> probabilities`
      in the compute dtype (scaled, masked, dropped out).
    attention_mask: optional [batch, seq] (1 = token) padding mask; a [batch, seq, seq] mask is
      refused (its blocks would cost the quadratic memory this path avoids).
    document_ids: optional int [batch, seq]; keys of other documents are masked.

  Returns:
    The context [batch, heads, seq, dim].

  Example:
    >>> q = tf.random.normal([1, 2, 10, 4])
    >>> blocked_local_attention(q, q, q, 2, 2, lambda s, a: tf.nn.softmax(s + a)).shape
    TensorShape([1, 2, 10, 4])
  """
  if half_window > block:
    raise ValueError(f'blocked_local_attention: half_window {half_window} exceeds block {block}')
  length = int(query.shape[2])
  blocks = -(-length // block)
  padded = blocks * block
  batch = tf.shape(query)[0]

  def pad_sequence(x, before, after, value=0):
    paddings = [[0, 0]] * x.shape.rank
    paddings[2 if x.shape.rank == 4 else 1] = [before, after]
    return tf.pad(x, paddings, constant_values=value)

  def windows(x):
    """[batch, (heads,) seq, ...] -> [batch, (heads,) blocks, 3 * block, ...]: each block's keys."""
    axis = 2 if x.shape.rank == 4 else 1
    x = pad_sequence(x, block, padded - length + block, -1 if x.dtype.is_integer else 0)
    shape = tf.concat([tf.shape(x)[:axis], [blocks + 2, block], tf.shape(x)[axis + 1:]], 0)
    x = tf.reshape(x, shape)
    parts = [x[:, :, i:i + blocks] if axis == 2 else x[:, i:i + blocks] for i in range(3)]
    return tf.concat(parts, axis=axis + 1)

  queries = tf.reshape(pad_sequence(query, 0, padded - length),
                       tf.concat([tf.shape(query)[:2], [blocks, block, query.shape[-1]]], 0))
  scores = tf.matmul(queries, windows(key), transpose_b=True)  # [b, h, blocks, block, 3 block]
  # The band: query r of a block (index kB + r) and key t of its window (index kB - B + t).
  offsets = tf.range(block)[:, None] + block - tf.range(3 * block)[None, :]
  allowed = tf.cast(tf.abs(offsets) <= half_window, tf.float32)[None, None]  # [1, 1, B, 3B]
  if attention_mask is not None:
    attention_mask = tf.convert_to_tensor(attention_mask)
    if attention_mask.shape.rank != 2:
      raise ValueError('blocked_local_attention takes a [batch, seq] attention mask, found shape '
                       f'{attention_mask.shape}; give packed documents as document_ids')
  keys_valid = tf.ones([batch, length], tf.float32) if attention_mask is None else tf.cast(
      attention_mask, tf.float32)
  allowed = allowed * windows(keys_valid)[:, :, None, :]  # padding and keys beyond the ends
  if document_ids is not None:
    document_ids = tf.cast(document_ids, tf.int32)
    query_documents = tf.reshape(pad_sequence(document_ids, 0, padded - length, -2),
                                 [batch, blocks, block])
    same = tf.equal(query_documents[..., None], windows(document_ids)[:, :, None, :])
    allowed = allowed * tf.cast(same, tf.float32)
  probs = softmax(scores, (1.0 - allowed[:, None]) * _MASK_ADDER)
  context = tf.matmul(probs, windows(value))  # [b, h, blocks, block, dim]
  context = tf.reshape(context, tf.concat([tf.shape(query)[:2], [padded, query.shape[-1]]], 0))
  return context[:, :, :length]


def query_rows(x: tf.Tensor, query_length: Optional[int] = None,
               query_positions=None) -> tf.Tensor:
  """The rows of `x` [batch, seq, ...] at the queries: every position, the first `query_length`,
  or int [batch, q] `query_positions` (in their order).

  Example:
    >>> query_rows(tf.reshape(tf.range(6), [1, 3, 2]), query_positions=[[2, 0]]).numpy().tolist()
    [[[4, 5], [0, 1]]]
  """
  if query_positions is not None:
    return tf.gather(x, tf.cast(query_positions, tf.int32), batch_dims=1)
  return x if query_length is None else x[:, :query_length]


class _Queries:
  """Which positions attend: every one, the first `length`, or int [batch, q] `positions`."""

  def __init__(self, length: Optional[int] = None, positions=None):
    self.length = length
    self.positions = None if positions is None else tf.cast(positions, tf.int32)
    if self.positions is not None and self.positions.shape.rank != 2:
      raise ValueError(f'query_positions must be [batch, queries], found shape '
                       f'{self.positions.shape}')
    self.all = length is None and positions is None

  def count(self, length):
    """The number of queries (static when known) of a sequence of `length`."""
    if self.positions is not None:
      return _dim(self.positions, 1)
    return length if self.length is None else self.length

  def rows(self, x: tf.Tensor) -> tf.Tensor:
    """The query positions' rows of `x` [batch, seq, ...] (`query_rows`)."""
    return query_rows(x, self.length, self.positions)


def _same_document(document_ids, queries: _Queries) -> tf.Tensor:
  """float32 [batch, query, seq]: 1 where the query's and the key's documents are the same."""
  document_ids = tf.convert_to_tensor(document_ids)
  return tf.cast(tf.equal(queries.rows(document_ids)[:, :, None], document_ids[:, None, :]),
                 tf.float32)


def _mask_adder(attention_mask, queries: _Queries) -> Optional[tf.Tensor]:
  """float32 [batch, 1, 1 or query, seq]: 0 for keys to attend to, -1e9 for padding."""
  if attention_mask is None:
    return None
  mask = tf.cast(attention_mask, tf.float32)
  if mask.shape.rank == 2:
    mask = mask[:, None, None, :]
  else:
    mask = queries.rows(mask)[:, None, :, :]
  return (1.0 - mask) * _MASK_ADDER


def _dim(tensor: tf.Tensor, axis: int):
  """The static size of `axis` when known, else the dynamic one."""
  static = tensor.shape[axis]
  return static if static is not None else tf.shape(tensor)[axis]
