"""The transformer encoder block: BERT (post-LN), pre-LN, and ModernBERT's options."""

from typing import Any, Callable, Dict, Optional, Sequence

import tensorflow as tf
import tf_keras

from official.modeling import fused_ops
from official.modeling import tf_utils
from official.nlp.modeling.layers import block_sublayers
from official.nlp.modeling.layers import dropout as dropout_lib
from official.nlp.modeling.layers import encoder_block_attention
from official.nlp.modeling.layers import fused_layer_norm
from official.nlp.modeling.layers.rms_norm import RMSNorm  # also re-exported from here


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
def fused_gelu(x: tf.Tensor) -> tf.Tensor:
  """GELU, tanh approximation ('gelu'), as one fused kernel (`fused_ops.gelu`)."""
  return fused_ops.gelu(x, approximate=True)


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
def fused_exact_gelu(x: tf.Tensor) -> tf.Tensor:
  """GELU with the erf ('exact_gelu'), as one fused kernel (`fused_ops.gelu`)."""
  return fused_ops.gelu(x, approximate=False)


# Activations computed by a fused kernel, by name.
_FUSED_GELU = {'gelu': fused_gelu, 'exact_gelu': fused_exact_gelu}


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class TransformerEncoderBlock(tf_keras.layers.Layer):
  """One transformer encoder layer.

  Post-LN (`norm_first=False`, original BERT): `x = LN(x + attn(x)); y = LN(x + ffn(x))`.
  Pre-LN (`norm_first=True`): `x = x + attn(LN(x)); y = x + ffn(LN(x))`.
  Sub-layers (variable-name scopes): `self_attention`, `self_attention_layer_norm`, `intermediate`,
  `output`, `output_layer_norm`; held as Model Garden's attributes `_attention_layer`,
  `_attention_layer_norm` (also `_attention_layer_norm_kv`), `_intermediate_dense`,
  `_output_dense`, `_output_layer_norm` (the object-checkpoint keys), and the weightless
  `_attention_dropout`, `_intermediate_activation_layer` (an `Activation` layer whose function is
  `_inner_activation`; with `gated_inner` a `GatedActivation`), `_inner_dropout_layer`,
  `_output_dropout`; the attention's dropout is its `_dropout_layer`. The block computes with the
  layers these attributes hold, so a tool that replaces one (e.g. by a copy from its config)
  changes the computation. LayerNorms compute in float32 under mixed precision.

  One forward body (`call`): attention -> dropout -> residual -> norm -> feed-forward -> dropout
  -> residual -> norm (post-LN; pre-LN normalizes each branch's input instead), each step a call
  of the sub-layer that holds it. The sub-layers run fused kernels
  (`official.modeling.fused_ops`): the norms are `FusedLayerNormalization`, the dense layers
  `block_sublayers.MatmulDense` (2-D matmuls, float32-summed bias gradients), GELU and dropout
  XLA kernels. So a Keras model of `block.call` on symbolic inputs, which calls the same
  sub-layers one by one (e.g. a differential-privacy library's per-layer expansion), computes the
  same bits as the block, forward and backward; the one shortcut, GeGLU's two matmuls fed
  straight into `fused_ops.gated_gelu` without joining them, computes what `MatmulDense` and
  `GatedActivation` compute. The attention layer and how it is fed is the block's attention path
  (`encoder_block_attention`), chosen when the block is built: our fused self-attention
  (`FusedSelfAttentionPath`, BERT's and ModernBERT's configurations), Keras' `MultiHeadAttention`
  for Model Garden's other options (`key_dim`, `value_dim`, `output_last_dim`,
  `use_query_residual=False`, `attention_axes`, `diff_q_kv_att_layer_norm`, separate query and
  key/value inputs, inputs of rank other than 3; `KerasAttentionPath`), or `EfficientAttention`
  for the efficient-attention options (`EfficientAttentionPath`); all with the same sub-layer
  names. The ModernBERT options (`rotary_theta`, `attention_window`) need the fused path.

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
    norm_use_bias: the LayerNorms have an offset (`beta`); False: scale only (`center=False`,
      ModernBERT's `norm_bias=False`).
    num_kv_heads, src_block_size, tgt_block_size, use_sigmoid_attn, sigmoid_attn_bias,
      linformer_dim, linformer_shared_kv_projection: grouped key/value heads, block-diagonal,
      sigmoid and Linformer attention (`efficient_attention.EfficientAttention`).
    rotary_theta: rotary position embeddings with this base on the queries and keys
      (`MultiHeadSelfAttention`; ModernBERT: 160000 global, 10000 local layers); None: none.
    attention_window: sliding-window attention, each token sees |i - j| <= attention_window // 2
      (ModernBERT's local layers: 128), combined with the attention mask; None: global.
    gated_inner: a gated feed-forward layer (GLU; GeGLU with a GELU, ModernBERT's MLP):
      `intermediate` projects to 2 * inner_dim, split into input and gate halves (in that
      order), `activation(input) * gate` goes to `output`.

  Call args:
    inputs: [batch, seq, hidden]; or Model Garden's lists `[inputs, attention_mask]` and
      `[query, key_value, attention_mask]`.
    attention_mask: [batch, seq] (1 = token) or [batch, query, seq] (e.g. padding and the
      document boundaries of packed rows).
    return_attention_scores: also return the attention probabilities [batch, heads, q, seq]
      (default: the constructor's).
    output_range: overrides the constructor's `output_range` for this call.
    position_ids: int [batch, seq] positions of the rotary embeddings (default 0..seq - 1;
      packed rows restart them per document); only with `rotary_theta`.
    document_ids: int [batch, seq]: tokens attend only within their document (packed rows),
      on top of `attention_mask`.
    query_positions: int [batch, q]: compute the output at these positions only, in this order
      (e.g. a pretraining loss's [CLS] and masked positions: the last layer's work on the others
      is wasted); every position is a key. Our fused self-attention only; not with
      `output_range`.

  Returns:
    [batch, output_range or q or seq, hidden] (and the probabilities when asked).

  Example:
    >>> block = TransformerEncoderBlock(num_attention_heads=2, inner_dim=32,
    ...                                 inner_activation='gelu')
    >>> block(tf.zeros([2, 5, 16]), tf.ones([2, 5])).shape
    TensorShape([2, 5, 16])
  """

  # Set by `build` (`encoder_block_attention.attention_path`). A class attribute, so that Keras
  # does not track the instance's value (no checkpoint key).
  _attention_path: Optional[encoder_block_attention.AttentionPath] = None
  # Why a subclass needs Keras' attention layers whatever its options ('' for no reason), e.g.
  # queries that are not a prefix of the keys.
  _keras_attention_reason: str = ''

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
               linformer_shared_kv_projection: bool = True,
               rotary_theta: Optional[float] = None, attention_window: Optional[int] = None,
               gated_inner: bool = False, norm_use_bias: bool = True, **kwargs):
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
    self.rotary_theta = float(rotary_theta) if rotary_theta is not None else None
    self.attention_window = attention_window
    self.gated_inner = gated_inner
    self.norm_use_bias = norm_use_bias
    self._attention_options = dict(
        num_kv_heads=num_kv_heads, src_block_size=src_block_size, tgt_block_size=tgt_block_size,
        use_sigmoid_attn=use_sigmoid_attn, sigmoid_attn_bias=sigmoid_attn_bias,
        linformer_dim=linformer_dim,
        linformer_shared_kv_projection=linformer_shared_kv_projection)

  def build(self, input_shape):
    key_value_shape = None
    if isinstance(input_shape, (list, tuple)) and input_shape and not isinstance(
        input_shape[0], (int, type(None))):
      # Model Garden's list inputs: [x, mask] or [query, key_value, mask].
      shapes = [tf.TensorShape(shape) for shape in input_shape]
      input_shape = shapes[0]
      if len(shapes) == 3:
        key_value_shape = shapes[1]
    else:
      input_shape = tf.TensorShape(input_shape)
    path = encoder_block_attention.attention_path(self, input_shape, key_value_shape)
    self._attention_path = path
    # Attribute names follow Model Garden's block, so object-checkpoint keys match too.
    self._attention_layer = path.make_layer(self, input_shape, key_value_shape)
    width = self.output_last_dim or int(input_shape[-1])
    if path.fused:
      sequence_shape = tf.TensorShape([None] * (len(input_shape) - 1) + [width])
      self._build_sublayers(width, build_norms_for=sequence_shape)
      # Building the dropout layers creates their random generators now, so a checkpoint
      # written or restored before the first call includes them (deterministic runs).
      for layer in (self._attention_dropout, self._output_dropout):
        layer.build(sequence_shape)
      if self.inner_dropout:
        self._inner_dropout_layer.build(tf.TensorShape([None, self.inner_dim]))
    else:  # Keras' attention layers: they and the norms are built at the first call
      self._build_sublayers(width)
    super().build(input_shape)

  def _make_norm(self, name: str):
    if self.use_rms_norm:
      return RMSNorm(epsilon=self.norm_epsilon, name=name)
    return fused_layer_norm.FusedLayerNormalization(
        epsilon=self.norm_epsilon, center=self.norm_use_bias, dtype=tf.float32,
        output_in_input_dtype=True, name=name)

  def _build_sublayers(self, width: int, build_norms_for: Optional[tf.TensorShape] = None):
    """The norms, the feed-forward layers (on `width` features) and the dropout layers.

    The dense layers are built here, in their own name scopes (variables
    `.../intermediate/kernel` etc.), because `_feed_forward` may compute with their variables
    directly; so are the norms when `build_norms_for` is given.
    """
    init = lambda: tf_utils.clone_initializer(self.kernel_initializer)
    self._attention_layer_norm = self._make_norm('self_attention_layer_norm')
    # Model Garden's alias (the same layer; a separate one with diff_q_kv_att_layer_norm).
    self._attention_layer_norm_kv = self._attention_layer_norm
    if self.diff_q_kv_att_layer_norm:
      self._attention_layer_norm_kv = self._make_norm('self_attention_layer_norm_kv')
    inner_width = self.inner_dim * (2 if self.gated_inner else 1)
    self._intermediate_dense = block_sublayers.MatmulDense(
        inner_width, kernel_halves=self.gated_inner, use_bias=self.use_bias,
        kernel_initializer=init(), name='intermediate')
    # The activation (GELU as a fused kernel) as Model Garden's `Activation` layer; with
    # `gated_inner`, activation(input half) * gate half.
    if self.gated_inner:
      self._intermediate_activation_layer = block_sublayers.GatedActivation(
          self.inner_activation, name='intermediate_activation')
    else:
      self._intermediate_activation_layer = tf_keras.layers.Activation(
          self._inner_activation, name='intermediate_activation')
    self._output_dense = block_sublayers.MatmulDense(
        width, use_bias=self.use_bias, kernel_initializer=init(), name='output')
    self._output_layer_norm = self._make_norm('output_layer_norm')
    # As Model Garden: the attention output is dropped at `attention_dropout`'s rate.
    self._attention_dropout = dropout_lib.Dropout(self.attention_dropout)
    self._inner_dropout_layer = dropout_lib.Dropout(self.inner_dropout)
    self._output_dropout = dropout_lib.Dropout(self.output_dropout)
    built = [(self._intermediate_dense, [None, width]),
             (self._output_dense, [None, self.inner_dim])]
    if build_norms_for is not None:
      built += [(self._attention_layer_norm, build_norms_for),
                (self._output_layer_norm, build_norms_for)]
    for layer, shape in built:
      with tf.name_scope(layer.name):
        layer.build(tf.TensorShape(shape))

  @staticmethod
  def _norm(layer, x):
    """`layer(x)` in the dtype of `x` (the block's norms compute in float32 and return it so)."""
    out = layer(x)
    return out if out.dtype == x.dtype else tf.cast(out, x.dtype)

  def _feed_forward(self, x, training=None):
    """intermediate dense -> activation -> (inner dropout) -> output dense, as sub-layer calls.

    GeGLU with our kernels skips the joined [..., 2 * inner_dim] tensor between its two layers:
    the matmuls against the kernel's halves (`MatmulDense.halves`) go straight into
    `fused_ops.gated_gelu`, the computation of `MatmulDense` and `GatedActivation` without the
    concatenation and split (XLA:CPU is much slower on the joined gradient). On Keras symbolic
    inputs the layers are called.
    """
    dense = self._intermediate_dense
    halves = (isinstance(dense, block_sublayers.MatmulDense) and dense.kernel_halves
              and isinstance(self._intermediate_activation_layer,
                             block_sublayers.GatedActivation)
              and self._intermediate_activation_layer.activation in _FUSED_GELU
              and not _is_symbolic(x))
    if halves:
      _build_like(dense, [None, int(x.shape[-1])])
      inner, gate = dense.halves(tf.reshape(tf.cast(x, dense.compute_dtype),
                                            [-1, int(x.shape[-1])]))
      rows = fused_ops.gated_gelu(
          inner, gate, approximate=self._intermediate_activation_layer.activation == 'gelu')
    else:
      rows = self._intermediate_activation_layer(dense(x))
    if self.inner_dropout:
      rows = self._inner_dropout_layer(rows, training=training)
    output = self._output_dense(rows)
    if halves:  # [rows, width] -> [..., width]
      output = tf.reshape(output, tf.concat([tf.shape(x)[:-1], tf.shape(output)[-1:]], axis=0))
    return output

  @property
  def _inner_activation(self) -> Callable[[tf.Tensor], tf.Tensor]:
    """The feed-forward activation as a function (Model Garden's attribute name): 'gelu' and
    'exact_gelu' are the fused kernels of `fused_ops.gelu`."""
    if self.inner_activation in _FUSED_GELU:
      return _FUSED_GELU[self.inner_activation]
    return tf_utils.get_activation(self.inner_activation)

  def _residual(self, residual, branch, dropout, norm, training):
    """`norm(residual + dropout(branch))`; no norm in pre-LN (None), no residual with
    `use_query_residual=False` (None)."""
    x = dropout(branch, training=training)
    if residual is not None:
      x = residual + x
    return x if norm is None else self._norm(norm, x)

  def call(self, inputs, attention_mask=None, return_attention_scores: Optional[bool] = None,
           training=None, output_range: Optional[int] = None, position_ids=None,
           document_ids=None, query_positions=None):
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
    if output_range and query_positions is not None:
      raise ValueError(f'{self.name}: give output_range or query_positions, not both')
    # On Keras symbolic inputs (a tool rebuilding a layer graph from the block's `call`), the
    # block is its sub-layers called one by one, with the dropout mode left to run time.
    if not _is_symbolic(inputs):
      training = dropout_lib.resolve_training(training)
    # The attention branch (pre-LN: on normalized inputs) and the residual it adds to.
    residual, attention, scores = self._attention_path.attend(
        self, inputs, key_value, attention_mask, output_range, return_attention_scores, training,
        position_ids=position_ids, document_ids=document_ids, query_positions=query_positions)
    if self.norm_first:  # each branch reads normalized inputs; the residual stream is not
      attention_norm = output_norm = None
    else:
      attention_norm, output_norm = self._attention_layer_norm, self._output_layer_norm
    x = self._residual(residual, attention, self._attention_dropout, attention_norm, training)
    ffn_input = self._norm(self._output_layer_norm, x) if self.norm_first else x
    output = self._residual(x, self._feed_forward(ffn_input, training), self._output_dropout,
                            output_norm, training)
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
                  use_rms_norm=self.use_rms_norm, **self._attention_options,
                  rotary_theta=self.rotary_theta, attention_window=self.attention_window,
                  gated_inner=self.gated_inner, norm_use_bias=self.norm_use_bias)
    return config


def _is_symbolic(x) -> bool:
  """Whether `x` is a Keras symbolic tensor of a layer graph under construction (a `KerasTensor`,
  not a `tf.Tensor`: the graph tensors of TF1-style graph mode take the fused path)."""
  if isinstance(x, (tf.Tensor, tf.Variable)):
    return False
  try:
    return tf_keras.backend.is_keras_tensor(x)
  except ValueError:  # not a tensor (e.g. a numpy array)
    return False


def _build_like(layer: tf_keras.layers.Layer, shape) -> None:
  """Builds `layer` for inputs of `shape` in its own name scope, unless it is built (a sub-layer
  replaced by an unbuilt copy, e.g. from its config)."""
  if not layer.built:
    with tf.name_scope(layer.name):
      layer.build(tf.TensorShape(shape))
