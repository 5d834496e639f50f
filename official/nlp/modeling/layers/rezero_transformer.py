"""A transformer block with ReZero residuals (Bachlechner et al. 2020, arXiv:2003.04887)."""

from typing import Any, Dict, Optional

import tensorflow as tf
import tf_keras

from official.modeling import tf_utils
from official.nlp.modeling.layers import attention
from official.nlp.modeling.layers import dropout as dropout_lib
from official.nlp.modeling.layers import efficient_attention


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class ReZeroTransformer(tf_keras.layers.Layer):
  """A transformer block whose branches are scaled by learned scalars that start at zero.

  `x = q + alpha * dropout(attn(q, kv))`, then `y = x + alpha_ffn * dropout(ffn(x))`, where
  `alpha` (`rezero_alpha`) and `alpha_ffn` (`rezero_alpha_ffn`, or `alpha` itself with
  `share_rezero`) are float32 scalars initialized to 0, so the block starts as the identity
  (`reset_rezero` sets them back to 0). `use_layer_norm` adds a LayerNorm after each sum. The
  output is float32.

  Sub-layers (Model Garden's names): `_attention_layer` (`self_attention`, Keras'
  `MultiHeadAttention`; `multi_query_attention` with `num_kv_heads`, `block_sparse_attention`
  with `src_block_size`, both `EfficientAttention`), `_attention_dropout`,
  `_attention_layer_norm` (`self_attention_layer_norm`), `_intermediate_dense` (`intermediate`),
  `_output_dense` (`output`), `_output_dropout`, `_output_layer_norm` (`output_layer_norm`),
  `_rezero_a`, `_rezero_a_ffn`.

  Args:
    num_attention_heads: attention heads; they must divide the width.
    inner_dim: feed-forward width (alias `intermediate_size`).
    inner_activation: its activation ('gelu' = tanh approximation; alias
      `intermediate_activation`).
    dropout_rate: dropout after the attention and the feed-forward layer (alias
      `output_dropout`).
    attention_dropout_rate: dropout of the attention probabilities (alias `attention_dropout`).
    output_range: attend from (and output) the first `output_range` positions only; `call`'s
      argument overrides it.
    use_layer_norm: LayerNorms (float32, epsilon 1e-12) after the two residual sums.
    share_rezero: one scalar for both branches.
    num_kv_heads: grouped key/value heads (1 = multi-query attention).
    src_block_size, tgt_block_size: block-diagonal attention (query block i attends to key
      block i).
    linformer_dim, linformer_shared_kv_projection, use_sigmoid_attn, sigmoid_attn_bias: accepted
      for Model Garden's signature; ReZero blocks support neither Linformer nor sigmoid attention
      (ValueError).
    kernel_initializer, bias_initializer, kernel_regularizer, bias_regularizer,
      activity_regularizer, kernel_constraint, bias_constraint: of the dense and attention layers
      (only `kernel_initializer` with `num_kv_heads` or block attention).

  Call args:
    inputs: [batch, seq, width], `[inputs, attention_mask]` or `[query, key_value,
      attention_mask]`; the mask is [batch, seq, key_seq] (1 = attend).
    output_range: see above.

  Returns:
    [batch, output_range or seq, width], float32.

  Example:
    >>> block = ReZeroTransformer(num_attention_heads=2, inner_dim=32, inner_activation='relu')
    >>> x = tf.random.normal([2, 5, 8])
    >>> bool(tf.reduce_all(block(x) == x))   # alpha = 0: the identity
    True
  """

  def __init__(self, num_attention_heads: int, inner_dim: int = 768,
               inner_activation: Any = 'gelu', dropout_rate: float = 0.0,
               attention_dropout_rate: float = 0.0, output_range: Optional[int] = None,
               use_layer_norm: bool = False, share_rezero: bool = True,
               num_kv_heads: Optional[int] = None, src_block_size: Optional[int] = None,
               tgt_block_size: Optional[int] = None, linformer_dim: Optional[int] = None,
               linformer_shared_kv_projection: bool = True, use_sigmoid_attn: bool = False,
               sigmoid_attn_bias: Optional[float] = None, **kwargs):
    # TransformerEncoderBlock's names of the same arguments win, as in Model Garden.
    attention_dropout_rate = kwargs.pop('attention_dropout', attention_dropout_rate)
    dropout_rate = kwargs.pop('output_dropout', dropout_rate)
    inner_dim = kwargs.pop('intermediate_size', inner_dim)
    inner_activation = kwargs.pop('intermediate_activation', inner_activation)
    dense_options = attention.pop_dense_options(kwargs)
    super().__init__(**kwargs)
    if linformer_dim is not None or use_sigmoid_attn:
      raise ValueError('ReZeroTransformer supports neither Linformer (linformer_dim) nor sigmoid '
                       f'attention (use_sigmoid_attn); found linformer_dim={linformer_dim}, '
                       f'use_sigmoid_attn={use_sigmoid_attn}')
    if num_kv_heads is not None and src_block_size is not None:
      raise ValueError('ReZeroTransformer takes num_kv_heads or src_block_size, not both; found '
                       f'num_kv_heads={num_kv_heads}, src_block_size={src_block_size}')
    if num_kv_heads is not None or src_block_size is not None:
      unsupported = dense_options.non_default(ignore=('kernel_initializer',))
      if unsupported:
        raise ValueError(f'ReZeroTransformer with num_kv_heads or src_block_size takes no '
                         f'{unsupported} (its attention layer has only kernel_initializer)')
    self._dense_options = dense_options
    self._num_heads = num_attention_heads
    self._inner_dim = inner_dim
    self._inner_activation = tf_utils.serialize_activation(inner_activation)
    self._dropout_rate = dropout_rate
    self._attention_dropout_rate = attention_dropout_rate
    self._output_range = output_range
    self._use_layer_norm = use_layer_norm
    self._share_rezero = share_rezero
    self._num_kv_heads = num_kv_heads
    self._src_block_size = src_block_size
    self._tgt_block_size = tgt_block_size
    self._linformer_shared_kv_projection = linformer_shared_kv_projection
    self._sigmoid_attn_bias = sigmoid_attn_bias

  def build(self, input_shape):
    shapes = input_shape
    if not (isinstance(input_shape, (list, tuple)) and input_shape
            and not isinstance(input_shape[0], (int, type(None)))):
      shapes = [input_shape]
    shapes = [tf.TensorShape(shape) for shape in shapes]
    if shapes[0].rank != 3:
      raise ValueError(f'{self.name} expects inputs [batch, sequence, width], found shape '
                       f'{shapes[0]}')
    batch, length, width = shapes[0].as_list()
    if len(shapes) == 2 and not tf.TensorShape([batch, length, length]).is_compatible_with(
        shapes[1]):
      raise ValueError(f'{self.name}: the attention mask must be [batch, seq, seq] = '
                       f'{[batch, length, length]}, found {shapes[1]}')
    if width % self._num_heads:
      raise ValueError(f'{self.name}: the input width {width} is not a multiple of '
                       f'num_attention_heads {self._num_heads}')
    options = self._dense_options
    head_size = width // self._num_heads
    if self._num_kv_heads is not None or self._src_block_size is not None:
      self._attention_layer = efficient_attention.EfficientAttention(
          num_heads=self._num_heads, key_dim=head_size, num_kv_heads=self._num_kv_heads,
          dropout=self._attention_dropout_rate, src_block_size=self._src_block_size,
          tgt_block_size=self._tgt_block_size,
          kernel_initializer=tf_utils.clone_initializer(options.kernel_initializer),
          name=('block_sparse_attention' if self._src_block_size is not None
                else 'multi_query_attention'))
    else:
      self._attention_layer = attention.MultiHeadAttention(
          num_heads=self._num_heads, key_dim=head_size, dropout=self._attention_dropout_rate,
          name='self_attention', **options.layer_kwargs())
    self._attention_dropout = dropout_lib.Dropout(self._dropout_rate)
    self._intermediate_dense = tf_keras.layers.Dense(self._inner_dim, name='intermediate',
                                                     **options.layer_kwargs())
    self._activation = tf_utils.get_activation(self._inner_activation)
    self._output_dense = tf_keras.layers.Dense(width, name='output', **options.layer_kwargs())
    self._output_dropout = dropout_lib.Dropout(self._dropout_rate)
    if self._use_layer_norm:
      norm = lambda name: tf_keras.layers.LayerNormalization(epsilon=1e-12, dtype=tf.float32,
                                                             name=name)
      self._attention_layer_norm = norm('self_attention_layer_norm')
      self._output_layer_norm = norm('output_layer_norm')
    # float32 even under mixed precision (no autocast): the residual sums are float32.
    alpha = lambda name: self.add_weight(name, shape=[], initializer='zeros', dtype=tf.float32,
                                         trainable=True, experimental_autocast=False)
    self._rezero_a = alpha('rezero_alpha')
    self._rezero_a_ffn = self._rezero_a if self._share_rezero else alpha('rezero_alpha_ffn')
    super().build(input_shape)

  def reset_rezero(self):
    """Sets the ReZero scalars back to 0 (the block becomes the identity again)."""
    self._rezero_a.assign(0.0)
    if not self._share_rezero:
      self._rezero_a_ffn.assign(0.0)

  def call(self, inputs, output_range: Optional[int] = None, training=None):
    inputs, key_value, attention_mask = attention.split_block_inputs(self, inputs)
    if key_value is None:
      key_value = inputs
    if output_range is None:
      output_range = self._output_range
    query = inputs
    if output_range:
      query = inputs[:, :output_range]
      if attention_mask is not None:
        attention_mask = attention_mask[:, :output_range]
    attended = self._attention_layer(query=query, value=key_value, attention_mask=attention_mask,
                                     training=training)
    attended = self._attention_dropout(attended, training=training)
    x = tf.cast(query, tf.float32) + self._rezero_a * tf.cast(attended, tf.float32)
    if self._use_layer_norm:
      x = self._attention_layer_norm(x)
    hidden = self._activation(self._intermediate_dense(x))
    output = self._output_dropout(self._output_dense(hidden), training=training)
    y = x + self._rezero_a_ffn * tf.cast(output, tf.float32)
    if self._use_layer_norm:
      y = self._output_layer_norm(y)
    return y

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.update(
        num_attention_heads=self._num_heads, inner_dim=self._inner_dim,
        inner_activation=self._inner_activation, dropout_rate=self._dropout_rate,
        attention_dropout_rate=self._attention_dropout_rate, output_range=self._output_range,
        use_layer_norm=self._use_layer_norm, share_rezero=self._share_rezero,
        num_kv_heads=self._num_kv_heads, src_block_size=self._src_block_size,
        tgt_block_size=self._tgt_block_size, linformer_dim=None,
        linformer_shared_kv_projection=self._linformer_shared_kv_projection,
        use_sigmoid_attn=False, sigmoid_attn_bias=self._sigmoid_attn_bias,
        **self._dense_options.get_config())
    return config
