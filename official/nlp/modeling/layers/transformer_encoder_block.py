"""The BERT transformer block: self-attention and feed-forward, post-LN (BERT) or pre-LN."""

from typing import Any, Dict, Optional, Sequence

import tensorflow as tf
import tf_keras

from official.modeling import fused_ops
from official.modeling import tf_utils
from official.nlp.modeling.layers import efficient_attention
from official.nlp.modeling.layers import self_attention
from official.nlp.modeling.layers import dropout as dropout_lib

# Activations computed by `fused_ops.gelu` (value: its `approximate`).
_FUSED_GELU = {'gelu': True, 'exact_gelu': False}


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class RMSNorm(tf_keras.layers.Layer):
  """Root-mean-square normalization: x / sqrt(mean(x^2) + epsilon) * scale, in float32.

  Args:
    epsilon: added to the mean square.

  Example:
    >>> RMSNorm()(tf.constant([[3.0, 4.0]])).numpy()   # rms 3.5355
    array([[0.8485281, 1.1313709]], dtype=float32)
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


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class TransformerEncoderBlock(tf_keras.layers.Layer):
  """One transformer encoder layer.

  Post-LN (`norm_first=False`, original BERT): `x = LN(x + attn(x)); y = LN(x + ffn(x))`.
  Pre-LN (`norm_first=True`): `x = x + attn(LN(x)); y = x + ffn(LN(x))`.
  Sub-layers (variable-name scopes): `self_attention`, `self_attention_layer_norm`, `intermediate`,
  `output`, `output_layer_norm`; held as Model Garden's attributes `_attention_layer`,
  `_attention_layer_norm`, `_intermediate_dense`, `_output_dense`, `_output_layer_norm` (the
  object-checkpoint keys). LayerNorms compute in float32 under mixed precision. The element-wise
  work runs as fused XLA kernels (`official.modeling.fused_ops`): GELU, and in post-LN with a known
  `training` flag dropout + residual add + LayerNorm; the matmuls are 2-D with the bias add fused.

  Model Garden's other options (`key_dim`, `value_dim`, `output_last_dim`, `use_bias=False`,
  `use_query_residual=False`, `attention_axes`, `diff_q_kv_att_layer_norm`, separate query and
  key/value inputs, inputs of rank other than 3) are computed by a plain Keras path
  (`tf_keras.layers.MultiHeadAttention`, Dense and LayerNorm layers, no fused kernels) with the
  same sub-layer names; BERT's configuration always takes the fused path.

  Args:
    num_attention_heads: attention heads, each hidden_size // num_attention_heads wide (or
      `key_dim`).
    inner_dim: width of the feed-forward layer.
    inner_activation: its activation ('gelu' is the tanh approximation).
    output_dropout: dropout after the feed-forward layer.
    attention_dropout: dropout on the attention probabilities and on the attention output (as
      in Model Garden).
    norm_first: pre-LN when True.
    norm_epsilon: LayerNorm epsilon.
    kernel_initializer: initializer of every kernel.
    output_range: compute only the first `output_range` positions (the output is shorter).
    use_bias: biases in the attention and feed-forward layers.
    inner_dropout: dropout after the feed-forward activation.
    attention_initializer: initializer of the attention kernels (default: `kernel_initializer`).
    attention_axes: axes attention runs over (inputs of rank > 3), as in Keras' layer.
    use_query_residual: add the query to the attention output (the residual connection).
    key_dim: size of each query/key head (default hidden // num_attention_heads).
    value_dim: size of each value head (default `key_dim`).
    output_last_dim: width of the attention output and of the block's output (default: the
      query's width; differing widths need `use_query_residual=False`).
    diff_q_kv_att_layer_norm: pre-LN with a separate LayerNorm for the key/value input
      (`self_attention_layer_norm_kv`), for query and key/value of different widths.
    return_attention_scores: return `(output, attention probabilities)` from every call.
    use_rms_norm: RMSNorm (`RMSNorm`, no centering, no bias) instead of LayerNorm.
    num_kv_heads, src_block_size, tgt_block_size, use_sigmoid_attn, sigmoid_attn_bias,
      linformer_dim, linformer_shared_kv_projection: grouped key/value heads, block-diagonal,
      sigmoid and Linformer attention (`efficient_attention.EfficientAttention`).

  Call args:
    inputs: [batch, seq, hidden]; or Model Garden's lists `[inputs, attention_mask]` and
      `[query, key_value, attention_mask]`.
    attention_mask: [batch, seq] (1 = token) or [batch, query, seq].
    return_attention_scores: also return the attention probabilities [batch, heads, q, seq]
      (default: the constructor's).
    output_range: overrides the constructor's `output_range` for this call.

  Returns:
    [batch, output_range or seq, hidden] (and the probabilities when asked).

  Example:
    >>> block = TransformerEncoderBlock(num_attention_heads=2, inner_dim=32, inner_activation='gelu')
    >>> block(tf.zeros([2, 5, 16]), tf.ones([2, 5])).shape
    TensorShape([2, 5, 16])
  """

  def __init__(self, num_attention_heads: int, inner_dim: int, inner_activation: Any = 'gelu',
               output_dropout: float = 0.0, attention_dropout: float = 0.0,
               norm_first: bool = False, norm_epsilon: float = 1e-12,
               kernel_initializer: Any = 'glorot_uniform', output_range: Optional[int] = None,
               use_bias: bool = True, inner_dropout: float = 0.0,
               attention_initializer: Any = None,
               attention_axes: Optional[Sequence[int]] = None, use_query_residual: bool = True,
               key_dim: Optional[int] = None, value_dim: Optional[int] = None,
               output_last_dim: Optional[int] = None, diff_q_kv_att_layer_norm: bool = False,
               return_attention_scores: bool = False, use_rms_norm: bool = False,
               num_kv_heads: Optional[int] = None, src_block_size: Optional[int] = None,
               tgt_block_size: Optional[int] = None, use_sigmoid_attn: bool = False,
               sigmoid_attn_bias: Optional[float] = None, linformer_dim: Optional[int] = None,
               linformer_shared_kv_projection: bool = True, **kwargs):
    super().__init__(**kwargs)
    if diff_q_kv_att_layer_norm and not norm_first:
      raise ValueError('diff_q_kv_att_layer_norm=True needs norm_first=True (a separate '
                       'key/value LayerNorm exists only before the attention)')
    self.num_attention_heads = num_attention_heads
    self.inner_dim = inner_dim
    self.inner_activation = tf_utils.serialize_activation(inner_activation)
    self.output_dropout = output_dropout
    self.attention_dropout = attention_dropout
    self.norm_first = norm_first
    self.norm_epsilon = norm_epsilon
    self.kernel_initializer = tf_keras.initializers.get(kernel_initializer)
    self.output_range = output_range
    self.use_bias = use_bias
    self.inner_dropout = inner_dropout
    self.attention_initializer = (tf_keras.initializers.get(attention_initializer)
                                  if attention_initializer is not None else None)
    self.attention_axes = list(attention_axes) if attention_axes is not None else None
    self.use_query_residual = use_query_residual
    self.key_dim = key_dim
    self.value_dim = value_dim
    self.output_last_dim = output_last_dim
    self.diff_q_kv_att_layer_norm = diff_q_kv_att_layer_norm
    self.return_attention_scores = return_attention_scores
    self.use_rms_norm = use_rms_norm
    self._attention_options = dict(
        num_kv_heads=num_kv_heads, src_block_size=src_block_size, tgt_block_size=tgt_block_size,
        use_sigmoid_attn=use_sigmoid_attn, sigmoid_attn_bias=sigmoid_attn_bias,
        linformer_dim=linformer_dim,
        linformer_shared_kv_projection=linformer_shared_kv_projection)
    efficient = (num_kv_heads is not None or src_block_size is not None or use_sigmoid_attn
                 or linformer_dim is not None)
    # Options only the plain Keras path computes (BERT's configuration has none of them).
    self._general = bool(not use_bias or attention_axes is not None or not use_query_residual
                         or key_dim is not None or value_dim is not None
                         or output_last_dim is not None or diff_q_kv_att_layer_norm
                         or use_rms_norm or efficient)
    self._efficient_attention = efficient

  def build(self, input_shape):
    if isinstance(input_shape, (list, tuple)) and input_shape and not isinstance(
        input_shape[0], (int, type(None))):
      # Model Garden's list inputs: [x, mask] or [query, key_value, mask].
      shapes = [tf.TensorShape(shape) for shape in input_shape]
      input_shape = shapes[0]
      if len(shapes) == 3:
        self._general = True
        key_value_shape = shapes[1]
      else:
        key_value_shape = input_shape
    else:
      input_shape = tf.TensorShape(input_shape)
      key_value_shape = input_shape
    if input_shape.rank != 3:
      self._general = True
    if self._general:
      self._build_general(input_shape, key_value_shape)
      return
    hidden = int(input_shape[-1])
    if not 0 < self.num_attention_heads <= hidden:
      raise ValueError(f'num_attention_heads must be between 1 and the hidden size {hidden}, '
                       f'found {self.num_attention_heads}')
    # A hidden size the heads do not divide is allowed (as in Model Garden): each head is
    # hidden // heads wide and the attention output projects back to `hidden`.
    init = lambda: tf_utils.clone_initializer(self.kernel_initializer)
    # Attribute names follow Model Garden's block, so object-checkpoint keys match too.
    self._attention_layer = self_attention.MultiHeadSelfAttention(
        self.num_attention_heads, hidden // self.num_attention_heads, self.attention_dropout,
        kernel_initializer=tf_utils.clone_initializer(
            self.attention_initializer or self.kernel_initializer), name='self_attention')
    self._attention_layer_norm = tf_keras.layers.LayerNormalization(
        epsilon=self.norm_epsilon, dtype=tf.float32, name='self_attention_layer_norm')
    # The activation is applied by `_feed_forward` (GELU as a fused kernel).
    self._intermediate_dense = tf_keras.layers.Dense(
        self.inner_dim, kernel_initializer=init(), name='intermediate')
    self._output_dense = tf_keras.layers.Dense(hidden, kernel_initializer=init(), name='output')
    self._output_layer_norm = tf_keras.layers.LayerNormalization(
        epsilon=self.norm_epsilon, dtype=tf.float32, name='output_layer_norm')
    # As Model Garden: the attention output is dropped at `attention_dropout`'s rate.
    self._attention_dropout = dropout_lib.Dropout(self.attention_dropout)
    self._inner_dropout_layer = dropout_lib.Dropout(self.inner_dropout)
    self._output_dropout = dropout_lib.Dropout(self.output_dropout)
    # Built here, in their own name scopes (variables `.../intermediate/kernel` etc.), because
    # `call` computes with their variables directly.
    sequence_shape = tf.TensorShape([None] * (len(input_shape) - 1) + [hidden])
    for layer, shape in ((self._attention_layer_norm, sequence_shape),
                         (self._intermediate_dense, [None, hidden]),
                         (self._output_dense, [None, self.inner_dim]),
                         (self._output_layer_norm, sequence_shape)):
      with tf.name_scope(layer.name):
        layer.build(tf.TensorShape(shape))
    # The fused kernels take seeds from the dropout layers without calling them: building them
    # creates their random generators now, so a deterministic run's checkpoint includes them.
    for layer in (self._attention_dropout, self._output_dropout):
      layer.build(sequence_shape)
    if self.inner_dropout:
      self._inner_dropout_layer.build(tf.TensorShape([None, self.inner_dim]))
    super().build(input_shape)

  @staticmethod
  def _norm(layer, x):
    # LayerNorm runs in float32 (its dtype policy); the result goes back to the compute dtype.
    return tf.cast(layer(x), x.dtype)

  def _build_general(self, query_shape: tf.TensorShape, key_value_shape: tf.TensorShape):
    """The sub-layers of the plain Keras path (Model Garden's names and options)."""
    hidden = int(query_shape[-1])
    key_dim = self.key_dim or max(hidden // self.num_attention_heads, 1)
    init = lambda: tf_utils.clone_initializer(self.kernel_initializer)
    attention_initializer = tf_utils.clone_initializer(
        self.attention_initializer or self.kernel_initializer)
    if self._efficient_attention:
      self._attention_layer = efficient_attention.EfficientAttention(
          num_heads=self.num_attention_heads, key_dim=key_dim, value_dim=self.value_dim,
          dropout=self.attention_dropout, use_bias=self.use_bias,
          kernel_initializer=attention_initializer, output_shape=self.output_last_dim,
          name='self_attention', **self._attention_options)
    else:
      self._attention_layer = tf_keras.layers.MultiHeadAttention(
          num_heads=self.num_attention_heads, key_dim=key_dim, value_dim=self.value_dim,
          dropout=self.attention_dropout, use_bias=self.use_bias,
          kernel_initializer=attention_initializer, attention_axes=self.attention_axes,
          output_shape=self.output_last_dim, name='self_attention')
    if self.use_rms_norm:
      norm = lambda name: RMSNorm(epsilon=self.norm_epsilon, name=name)
    else:
      norm = lambda name: tf_keras.layers.LayerNormalization(
          epsilon=self.norm_epsilon, dtype=tf.float32, name=name)
    self._attention_layer_norm = norm('self_attention_layer_norm')
    self._attention_layer_norm_kv = self._attention_layer_norm
    if self.diff_q_kv_att_layer_norm:
      self._attention_layer_norm_kv = norm('self_attention_layer_norm_kv')
    output_width = self.output_last_dim or hidden
    self._intermediate_dense = tf_keras.layers.Dense(
        self.inner_dim, use_bias=self.use_bias, kernel_initializer=init(), name='intermediate')
    self._output_dense = tf_keras.layers.Dense(
        output_width, use_bias=self.use_bias, kernel_initializer=init(), name='output')
    self._output_layer_norm = norm('output_layer_norm')
    self._attention_dropout = dropout_lib.Dropout(self.attention_dropout)
    self._inner_dropout_layer = dropout_lib.Dropout(self.inner_dropout)
    self._output_dropout = dropout_lib.Dropout(self.output_dropout)
    super().build(query_shape)

  def _general_call(self, query, key_value, attention_mask, output_range, return_scores,
                    training):
    """Model Garden's block with plain Keras layers (any option, rank or query/key-value pair)."""
    if key_value is None:
      key_value = query
    if output_range:
      query = query[:, :output_range]
      if attention_mask is not None and attention_mask.shape.rank == 3:
        attention_mask = attention_mask[:, :output_range]
    if attention_mask is not None and attention_mask.shape.rank == 2:
      attention_mask = attention_mask[:, None, :]  # [batch, keys] -> every query
    residual = query
    if self.norm_first:
      query = self._norm(self._attention_layer_norm, query)
      key_value = self._norm(self._attention_layer_norm_kv, key_value)
    attention, scores = self._attention_layer(
        query, key_value, attention_mask=attention_mask, return_attention_scores=True,
        training=training)
    attention = self._attention_dropout(attention, training=training)
    if self.use_query_residual:
      attention = residual + attention
    if self.norm_first:
      x = attention
      ffn_input = self._norm(self._output_layer_norm, x)
    else:
      x = self._norm(self._attention_layer_norm, attention)
      ffn_input = x
    inner = tf_utils.get_activation(self.inner_activation)(self._intermediate_dense(ffn_input))
    inner = self._inner_dropout_layer(inner, training=training)
    ffn = self._output_dropout(self._output_dense(inner), training=training)
    output = x + ffn if self.norm_first else self._norm(self._output_layer_norm, x + ffn)
    return (output, scores) if return_scores else output

  def _feed_forward(self, x, training=None):
    """dense -> activation -> dense on [..., hidden], as 2-D matmuls with the bias add fused."""
    dtype = x.dtype
    rows = tf.reshape(x, [-1, int(x.shape[-1])])
    for layer, activate in ((self._intermediate_dense, True), (self._output_dense, False)):
      rows = tf_utils.bias_add(tf.matmul(rows, tf.cast(layer.kernel, dtype)),
                               tf.cast(layer.bias, dtype))
      if activate:
        rows = self._activation(rows)
        if self.inner_dropout:
          rows = self._inner_dropout_layer(rows, training=training)
    return tf.reshape(rows, tf.shape(x))

  def _activation(self, x):
    if self.inner_activation in _FUSED_GELU:
      return fused_ops.gelu(x, approximate=_FUSED_GELU[self.inner_activation])
    return tf_utils.get_activation(self.inner_activation)(x)

  def _dropout_add_norm(self, residual, branch, dropout, norm, training: bool):
    """norm(residual + dropout(branch)) as one fused kernel (post-LN)."""
    drop = training and dropout.rate > 0
    seed = dropout.dropout_seed() if drop else None
    return fused_ops.dropout_add_layer_norm(residual, branch, norm.gamma, norm.beta, seed,
                                            dropout.rate if drop else 0.0, norm.epsilon)

  def call(self, inputs, attention_mask=None, return_attention_scores: Optional[bool] = None,
           training=None, output_range: Optional[int] = None):
    key_value = None
    if isinstance(inputs, (list, tuple)):  # Model Garden's [x, mask] / [query, key_value, mask]
      if len(inputs) == 3:
        inputs, key_value, attention_mask = inputs
      elif len(inputs) == 2:
        inputs, attention_mask = inputs
      else:
        (inputs,) = inputs
    if return_attention_scores is None:
      return_attention_scores = self.return_attention_scores
    if output_range is None:
      output_range = self.output_range
    training = dropout_lib.resolve_training(training)
    if self._general:
      return self._general_call(inputs, key_value, attention_mask, output_range,
                                return_attention_scores, training)
    if key_value is not None:
      raise ValueError(f'{self.name} was built for self-attention; a separate key/value input '
                       'needs the layer to be first called with [query, key_value, mask]')
    x = inputs
    residual = x if output_range is None else x[:, :output_range]
    attention_input = self._norm(self._attention_layer_norm, x) if self.norm_first else x
    attention = self._attention_layer(
        attention_input, attention_mask, query_length=output_range,
        return_attention_scores=return_attention_scores, training=training)
    if return_attention_scores:
      attention, scores = attention
    if not self.norm_first and isinstance(training, bool):
      # BERT's post-LN: dropout, residual add and LayerNorm as one fused kernel each way.
      x = self._dropout_add_norm(residual, attention, self._attention_dropout,
                                 self._attention_layer_norm, training)
      output = self._dropout_add_norm(x, self._feed_forward(x, training), self._output_dropout,
                                      self._output_layer_norm, training)
    else:
      attention = self._attention_dropout(attention, training=training)
      if self.norm_first:
        x = residual + attention
        ffn_input = self._norm(self._output_layer_norm, x)
      else:
        x = self._norm(self._attention_layer_norm, residual + attention)
        ffn_input = x
      ffn = self._output_dropout(self._feed_forward(ffn_input, training), training=training)
      output = x + ffn if self.norm_first else self._norm(self._output_layer_norm, x + ffn)
    if return_attention_scores:
      return output, scores
    return output

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.update(num_attention_heads=self.num_attention_heads, inner_dim=self.inner_dim,
                  inner_activation=self.inner_activation, output_dropout=self.output_dropout,
                  attention_dropout=self.attention_dropout, norm_first=self.norm_first,
                  norm_epsilon=self.norm_epsilon, output_range=self.output_range,
                  kernel_initializer=tf_keras.initializers.serialize(self.kernel_initializer),
                  use_bias=self.use_bias, inner_dropout=self.inner_dropout,
                  attention_initializer=(
                      tf_keras.initializers.serialize(self.attention_initializer)
                      if self.attention_initializer is not None else None),
                  attention_axes=self.attention_axes,
                  use_query_residual=self.use_query_residual, key_dim=self.key_dim,
                  value_dim=self.value_dim, output_last_dim=self.output_last_dim,
                  diff_q_kv_att_layer_norm=self.diff_q_kv_att_layer_norm,
                  return_attention_scores=self.return_attention_scores,
                  use_rms_norm=self.use_rms_norm, **self._attention_options)
    return config
