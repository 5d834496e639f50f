"""Model Garden's `layers.transformer`: the older `Transformer` encoder block and the decoder block.

`Transformer` is `TransformerEncoderBlock` under Model Garden's older argument names (the same
layer, variables and numbers). `TransformerDecoderBlock` is a decoder layer: causal
self-attention with a key/value cache, attention over the encoder's output, feed-forward.
"""

from typing import Any, Dict, List, Optional

import tensorflow as tf
import tf_keras

from official.modeling import tf_utils
from official.nlp.modeling.layers import attention
from official.nlp.modeling.layers import dropout as dropout_lib
from official.nlp.modeling.layers import transformer_encoder_block
from official.nlp.modeling.layers import transformer_scaffold

# TransformerEncoderBlock's config keys -> Transformer's.
_RENAMED = {'inner_dim': 'intermediate_size', 'inner_activation': 'intermediate_activation',
            'output_dropout': 'dropout_rate', 'attention_dropout': 'attention_dropout_rate',
            'inner_dropout': 'intermediate_dropout'}


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class Transformer(transformer_encoder_block.TransformerEncoderBlock):
  """`TransformerEncoderBlock` with Model Garden's older argument names (deprecated there too).

  Args:
    num_attention_heads: attention heads.
    intermediate_size: feed-forward width (the block's `inner_dim`).
    intermediate_activation: its activation (`inner_activation`; 'gelu' = tanh approximation).
    dropout_rate: dropout after the feed-forward layer (`output_dropout`).
    attention_dropout_rate: attention dropout (`attention_dropout`).
    output_range, kernel_initializer, use_bias, norm_first, norm_epsilon,
      attention_initializer: as in `TransformerEncoderBlock`.
    intermediate_dropout: dropout after the activation (`inner_dropout`).
    bias_initializer, kernel_regularizer, bias_regularizer, activity_regularizer,
      kernel_constraint, bias_constraint: accepted at Keras' defaults only ('zeros', None), which
      the block uses; other values raise ValueError.
    **kwargs: `TransformerEncoderBlock`'s other arguments and Keras' (`name`, `dtype`).

  Call args, returns: those of `TransformerEncoderBlock`.

  Example:
    >>> block = Transformer(num_attention_heads=2, intermediate_size=32,
    ...                     intermediate_activation='relu')
    >>> block([tf.ones([2, 5, 8]), tf.ones([2, 5, 5])]).shape
    TensorShape([2, 5, 8])
  """

  def __init__(self, num_attention_heads: int, intermediate_size: int,
               intermediate_activation: Any, dropout_rate: float = 0.0,
               attention_dropout_rate: float = 0.0, output_range: Optional[int] = None,
               kernel_initializer: Any = 'glorot_uniform', use_bias: bool = True,
               norm_first: bool = False, norm_epsilon: float = 1e-12,
               intermediate_dropout: float = 0.0, attention_initializer: Any = None, **kwargs):
    kwargs['kernel_initializer'] = kernel_initializer
    options = attention.pop_dense_options(kwargs)
    unsupported = options.non_default(ignore=('kernel_initializer',))
    if unsupported:
      found = {name: value for name, value in options.get_config().items() if name in unsupported}
      raise ValueError(f'Transformer takes {unsupported} only at their defaults '
                       f"(bias_initializer 'zeros', no regularizers or constraints); found {found}")
    super().__init__(
        num_attention_heads=num_attention_heads, inner_dim=intermediate_size,
        inner_activation=intermediate_activation, output_dropout=dropout_rate,
        attention_dropout=attention_dropout_rate, output_range=output_range,
        kernel_initializer=options.kernel_initializer, use_bias=use_bias, norm_first=norm_first,
        norm_epsilon=norm_epsilon, inner_dropout=intermediate_dropout,
        attention_initializer=attention_initializer, **kwargs)

  def get_config(self) -> Dict[str, Any]:
    return {_RENAMED.get(key, key): value for key, value in super().get_config().items()}


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class TransformerDecoderBlock(tf_keras.layers.Layer):
  """A transformer decoder layer: self-attention, attention over the encoder, feed-forward.

  Post-LN: `x = LN(x + self_attn(x)); x = LN(x + cross_attn(x, memory)); y = LN(x + ffn(x))`;
  pre-LN (`norm_first`): each branch reads LN(x) and adds to x unnormalized. Dropout
  (`dropout_rate`) follows each branch; `intermediate_dropout` the feed-forward activation.

  Sub-layers (Model Garden's names, the checkpoint keys): `self_attention` (`CachedAttention`, or
  `self_attention_cls`), `self_attention_layer_norm`, `encdec_attention` (`attention/encdec`,
  Keras' `MultiHeadAttention`, or `cross_attention_cls`), `encdec_attention_layer_norm`
  (`attention/encdec_output_layer_norm`), `intermediate_dense` (`intermediate`), `output_dense`
  (`output`), `output_layer_norm`; LayerNorms in float32. `self_attention_cls` is built with
  `num_heads, key_dim, dropout, use_bias, kernel_initializer, bias_initializer, name` plus the
  regularizer/constraint arguments and called as `(query=, value=, attention_mask=, cache=,
  decode_loop_step=)` returning `(output, cache)`; `cross_attention_cls` is built with the same
  plus `output_shape` and called as `(query=, value=, attention_mask=)`.

  Args:
    num_attention_heads: heads; they must divide the width.
    intermediate_size: feed-forward width.
    intermediate_activation: its activation ('gelu' is the tanh approximation here, as in our
      other layers; Model Garden's decoder resolves 'gelu' with Keras, the erf form: pass
      'exact_gelu' for that).
    dropout_rate: dropout after each branch.
    attention_dropout_rate: dropout of the attention probabilities.
    multi_channel_cross_attention: a cross-attention taking a fifth input,
      `context_attention_weights`; needs `cross_attention_cls` (Model Garden's
      `MultiChannelAttention` is not part of this package).
    kernel_initializer, bias_initializer, kernel_regularizer, bias_regularizer,
      activity_regularizer, kernel_constraint, bias_constraint: of every dense and attention
      layer.
    use_bias: biases in the attention layers.
    norm_first: pre-LN.
    norm_epsilon: LayerNorm epsilon.
    intermediate_dropout: dropout after the feed-forward activation.
    attention_initializer: kernel initializer of the attention layers (default
      `kernel_initializer`).
    self_attention_cls, cross_attention_cls: see above (classes, or registered names).

  Call args:
    inputs: `[targets, memory, attention_mask, self_attention_mask]` (+ the context attention
      weights with `multi_channel_cross_attention`): targets [batch, T, width], memory [batch, S,
      width'], attention_mask [batch, T, S], self_attention_mask [batch, T, T + cached].
    cache: the self-attention's key/value cache (see `CachedAttention`), or None.
    decode_loop_step: the position to write at in a pre-allocated cache.

  Returns:
    `(output [batch, T, width], cache)`.

  Example:
    >>> block = TransformerDecoderBlock(2, intermediate_size=32, intermediate_activation='relu')
    >>> x, mask = tf.ones([2, 4, 8]), tf.ones([2, 4, 4])
    >>> output, _ = block([x, x, mask, mask])
    >>> output.shape
    TensorShape([2, 4, 8])
  """

  def __init__(self, num_attention_heads: int, intermediate_size: int,
               intermediate_activation: Any, dropout_rate: float = 0.0,
               attention_dropout_rate: float = 0.0, multi_channel_cross_attention: bool = False,
               use_bias: bool = True, norm_first: bool = False, norm_epsilon: float = 1e-12,
               intermediate_dropout: float = 0.0, attention_initializer: Any = None,
               self_attention_cls: Any = None, cross_attention_cls: Any = None, **kwargs):
    dense_options = attention.pop_dense_options(kwargs)
    super().__init__(**kwargs)
    self._dense_options = dense_options
    self.num_attention_heads = num_attention_heads
    self.intermediate_size = intermediate_size
    self.intermediate_activation = tf_utils.serialize_activation(intermediate_activation)
    self.dropout_rate = dropout_rate
    self.attention_dropout_rate = attention_dropout_rate
    self.multi_channel_cross_attention = multi_channel_cross_attention
    self._use_bias = use_bias
    self._norm_first = norm_first
    self._norm_epsilon = norm_epsilon
    self._intermediate_dropout = intermediate_dropout
    self._attention_initializer = (tf_keras.initializers.get(attention_initializer)
                                   if attention_initializer is not None else None)
    self._self_attention_cls = (transformer_scaffold.class_from_config(self_attention_cls)
                                or attention.CachedAttention)
    self._cross_attention_cls = transformer_scaffold.class_from_config(cross_attention_cls)
    if self._cross_attention_cls is None:
      if multi_channel_cross_attention:
        raise ValueError('multi_channel_cross_attention=True needs cross_attention_cls (Model '
                         "Garden's MultiChannelAttention is not part of mlm-garden)")
      self._cross_attention_cls = attention.MultiHeadAttention

  def build(self, input_shape):
    target_shape = tf.TensorShape(input_shape[0])
    if target_shape.rank != 3:
      raise ValueError(f'{self.name} expects targets [batch, sequence, width], found shape '
                       f'{target_shape}')
    width = int(target_shape[-1])
    if width % self.num_attention_heads:
      raise ValueError(f'{self.name}: the width {width} is not a multiple of '
                       f'num_attention_heads {self.num_attention_heads}')
    self.attention_head_size = width // self.num_attention_heads
    options = self._dense_options
    attention_kwargs = dict(
        num_heads=self.num_attention_heads, key_dim=self.attention_head_size,
        dropout=self.attention_dropout_rate, use_bias=self._use_bias,
        **options.layer_kwargs(initializers=False),
        kernel_initializer=tf_utils.clone_initializer(
            self._attention_initializer or options.kernel_initializer),
        bias_initializer=tf_utils.clone_initializer(options.bias_initializer))
    norm = lambda name: tf_keras.layers.LayerNormalization(
        epsilon=self._norm_epsilon, dtype=tf.float32, name=name)
    self.self_attention = self._self_attention_cls(name='self_attention', **attention_kwargs)
    self.self_attention_dropout = dropout_lib.Dropout(self.dropout_rate)
    self.self_attention_layer_norm = norm('self_attention_layer_norm')
    self.encdec_attention = self._cross_attention_cls(
        output_shape=width, name='attention/encdec', **attention_kwargs)
    self.encdec_attention_dropout = dropout_lib.Dropout(self.dropout_rate)
    self.encdec_attention_layer_norm = norm('attention/encdec_output_layer_norm')
    self.intermediate_dense = tf_keras.layers.Dense(
        self.intermediate_size, name='intermediate', **options.layer_kwargs())
    self._activation = tf_utils.get_activation(self.intermediate_activation)
    self._intermediate_dropout_layer = dropout_lib.Dropout(self._intermediate_dropout)
    self.output_dense = tf_keras.layers.Dense(width, name='output', **options.layer_kwargs())
    self.output_dropout = dropout_lib.Dropout(self.dropout_rate)
    self.output_layer_norm = norm('output_layer_norm')
    super().build(input_shape)

  def common_layers_with_encoder(self) -> List[Any]:
    """The layers an encoder block also has (self-attention, feed-forward and their norms)."""
    return [self.self_attention, self.self_attention_layer_norm, self.intermediate_dense,
            self.output_dense, self.output_layer_norm]

  def call(self, inputs, cache: Optional[dict] = None, decode_loop_step=None, training=None):
    expected = 5 if self.multi_channel_cross_attention else 4
    if len(inputs) != expected:
      raise ValueError(f'{self.name} takes {expected} inputs [targets, memory, attention_mask, '
                       f'self_attention_mask{", context_attention_weights" * (expected == 5)}], '
                       f'found {len(inputs)}')
    targets, memory, attention_mask, self_attention_mask = inputs[:4]
    add = lambda residual, branch: residual + tf.cast(branch, residual.dtype)

    query = self.self_attention_layer_norm(targets) if self._norm_first else targets
    attended, cache = self.self_attention(query=query, value=query,
                                          attention_mask=self_attention_mask, cache=cache,
                                          decode_loop_step=decode_loop_step)
    attended = self.self_attention_dropout(attended, training=training)
    if self._norm_first:
      x = add(targets, attended)
      query = self.encdec_attention_layer_norm(x)
    else:
      x = query = self.self_attention_layer_norm(add(targets, attended))

    cross_inputs = dict(query=query, value=memory, attention_mask=attention_mask)
    if self.multi_channel_cross_attention:
      cross_inputs['context_attention_weights'] = inputs[4]
    attended = self.encdec_attention_dropout(self.encdec_attention(**cross_inputs),
                                             training=training)
    if self._norm_first:
      x = add(x, attended)
      ffn_input = self.output_layer_norm(x)
    else:
      x = ffn_input = self.encdec_attention_layer_norm(add(x, attended))

    hidden = self._activation(self.intermediate_dense(ffn_input))
    hidden = self._intermediate_dropout_layer(hidden, training=training)
    output = self.output_dropout(self.output_dense(hidden), training=training)
    if self._norm_first:
      return add(x, output), cache
    return self.output_layer_norm(add(x, output)), cache

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.update(
        num_attention_heads=self.num_attention_heads, intermediate_size=self.intermediate_size,
        intermediate_activation=self.intermediate_activation, dropout_rate=self.dropout_rate,
        attention_dropout_rate=self.attention_dropout_rate,
        multi_channel_cross_attention=self.multi_channel_cross_attention,
        use_bias=self._use_bias, norm_first=self._norm_first, norm_epsilon=self._norm_epsilon,
        intermediate_dropout=self._intermediate_dropout,
        attention_initializer=(tf_keras.initializers.serialize(self._attention_initializer)
                               if self._attention_initializer is not None else None),
        self_attention_cls=transformer_scaffold.class_to_config(self._self_attention_cls),
        cross_attention_cls=transformer_scaffold.class_to_config(self._cross_attention_cls),
        **self._dense_options.get_config())
    return config
