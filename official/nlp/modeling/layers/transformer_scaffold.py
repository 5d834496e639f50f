"""A transformer block whose attention and feed-forward layers are given by the caller.

Also the helpers that let a layer's config name a layer class or hold a layer
(`class_to_config`, `class_from_config`), shared with `TransformerDecoderBlock` and
`networks.EncoderScaffold`.
"""

from typing import Any, Dict, Optional

import tensorflow as tf
import tf_keras

from official.modeling import tf_utils
from official.nlp.modeling.layers import attention
from official.nlp.modeling.layers import dropout as dropout_lib


def class_to_config(value: Any) -> Any:
  """A config-friendly form of a layer class or layer instance.

  A layer instance -> its Keras serialization (a dict); a class -> its registered name when
  `class_from_config` maps that name back to it (Keras' built-in layers, registered classes);
  anything else (an unregistered class, None) unchanged.

  Example:
    >>> class_to_config(tf_keras.layers.MultiHeadAttention)
    'MultiHeadAttention'
  """
  if isinstance(value, tf_keras.layers.Layer):
    return tf_keras.layers.serialize(value)
  if isinstance(value, type):
    name = tf_keras.utils.get_registered_name(value)
    if _registered_class(name) is value:
      return name
  return value


def class_from_config(value: Any, custom_objects: Optional[Dict[str, Any]] = None) -> Any:
  """The inverse of `class_to_config`: a serialized layer -> a new layer, a name -> the class.

  Raises:
    ValueError: a name that is neither registered nor one of Keras' layers.

  Example:
    >>> class_from_config('MultiHeadAttention') is tf_keras.layers.MultiHeadAttention
    True
  """
  if isinstance(value, dict):
    return tf_keras.layers.deserialize(value, custom_objects=custom_objects)
  if isinstance(value, str):
    found = _registered_class(value, custom_objects)
    if found is None:
      raise ValueError(f'unknown layer class {value!r}: neither registered with '
                       '`tf_keras.utils.register_keras_serializable` nor a Keras layer')
    return found
  return value


def _registered_class(name: str, custom_objects: Optional[Dict[str, Any]] = None):
  return tf_keras.utils.get_registered_object(name, custom_objects=custom_objects,
                                              module_objects=vars(tf_keras.layers))


def _residual_add(residual, branch):
  """residual + branch in the residual's dtype (a LayerNorm's float32 under mixed precision)."""
  return residual + tf.cast(branch, residual.dtype)


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class TransformerScaffold(tf_keras.layers.Layer):
  """A transformer block with a pluggable attention layer and feed-forward layer.

  Post-LN (`norm_first=False`): `x = LN(x + dropout(attn(x))); y = LN(x + ffn(x))`; pre-LN:
  `x = x + dropout(attn(LN(x))); y = x + ffn(LN(x))`. The default feed-forward layer is dense
  (`inner_dim`, `inner_activation`) -> dense (width) -> dropout. A custom `feedforward_cls`
  replaces that and, in post-LN, also the residual and `output_layer_norm` (it gets the attention
  output and returns the block's output, as `GatedFeedforward` does); in pre-LN the scaffold
  normalizes its input and adds the residual.

  `attention_cls`/`feedforward_cls` are a class (instantiated in `build` with `attention_cfg`/
  `feedforward_cfg`, or by default with `num_heads`, `key_dim` = width / heads, `dropout` =
  `attention_dropout_rate`, name `self_attention`, resp. `inner_dim`/`intermediate_size`,
  `inner_activation`/`intermediate_activation`, `dropout` = `dropout_rate`, name `feedforward`,
  both plus the dense options), a layer instance (used as is), or the forms `class_to_config`
  gives (a registered name, a serialized layer). The attention layer is called as
  `attention(query=, value=, attention_mask=)`.

  Sub-layers (Model Garden's names): `_attention_layer`, `_attention_dropout`,
  `_attention_layer_norm` (`self_attention_layer_norm`), `_feedforward_block` (or
  `_intermediate_dense` `intermediate`, `_output_dense` `output`), `_output_dropout`,
  `_output_layer_norm` (`output_layer_norm`); LayerNorms in float32.

  Args:
    num_attention_heads: heads of the default attention layer.
    inner_dim: width of the default feed-forward layer (alias `intermediate_size`).
    inner_activation: its activation ('gelu' = tanh approximation; alias
      `intermediate_activation`).
    attention_cls, attention_cfg, feedforward_cls, feedforward_cfg: see above.
    dropout_rate: dropout after the attention and after the feed-forward layer.
    attention_dropout_rate: dropout of the default attention layer's probabilities.
    norm_first: pre-LN.
    norm_epsilon: LayerNorm epsilon.
    kernel_initializer, bias_initializer, kernel_regularizer, bias_regularizer,
      activity_regularizer, kernel_constraint, bias_constraint: of the dense layers (and of the
      default attention layer).

  Call args:
    inputs: [batch, seq, width], or `[inputs, attention_mask]`, or `[query, key_value,
      attention_mask]`; the mask is [batch, seq, key_seq] (1 = attend).

  Returns:
    [batch, seq, width].

  Example:
    >>> block = TransformerScaffold(num_attention_heads=2, inner_dim=32)
    >>> block([tf.ones([2, 5, 8]), tf.ones([2, 5, 5])]).shape
    TensorShape([2, 5, 8])
  """

  def __init__(self, num_attention_heads: int, inner_dim: int = 768,
               inner_activation: Any = 'gelu', attention_cls: Any = attention.MultiHeadAttention,
               attention_cfg: Optional[Dict[str, Any]] = None, feedforward_cls: Any = None,
               feedforward_cfg: Optional[Dict[str, Any]] = None, dropout_rate: float = 0.0,
               attention_dropout_rate: float = 0.0, norm_first: bool = False,
               norm_epsilon: float = 1e-12, **kwargs):
    inner_dim = kwargs.pop('intermediate_size', inner_dim)
    inner_activation = kwargs.pop('intermediate_activation', inner_activation)
    dense_options = attention.pop_dense_options(kwargs)
    super().__init__(**kwargs)
    self._dense_options = dense_options
    self._num_heads = num_attention_heads
    self._inner_dim = inner_dim
    self._inner_activation = tf_utils.serialize_activation(inner_activation)
    self._attention_cls = class_from_config(attention_cls)
    self._feedforward_cls = class_from_config(feedforward_cls)
    # The caller's argument dicts, kept as given (not wrapped by Keras' attribute tracking).
    object.__setattr__(self, '_attention_cfg', attention_cfg)
    object.__setattr__(self, '_feedforward_cfg', feedforward_cfg)
    self._dropout_rate = dropout_rate
    self._attention_dropout_rate = attention_dropout_rate
    self._norm_first = norm_first
    self._norm_epsilon = norm_epsilon
    if self._attention_cls is None:
      raise ValueError('attention_cls must be a layer class or instance, found None')

  def build(self, input_shape):
    if isinstance(input_shape, (list, tuple)) and input_shape and not isinstance(
        input_shape[0], (int, type(None))):
      input_shape = input_shape[0]
    input_shape = tf.TensorShape(input_shape)
    if input_shape.rank != 3:
      raise ValueError(f'{self.name} expects inputs [batch, sequence, width], found shape '
                       f'{input_shape}')
    width = int(input_shape[-1])
    options = self._dense_options
    self._attention_layer = self._instance(
        self._attention_cls, self._attention_cfg,
        lambda: dict(num_heads=self._num_heads, key_dim=self._head_size(width),
                     dropout=self._attention_dropout_rate, name='self_attention',
                     **options.layer_kwargs()))
    self._feedforward_block = None
    if self._feedforward_cls is not None:
      self._feedforward_block = self._instance(
          self._feedforward_cls, self._feedforward_cfg,
          lambda: dict(inner_dim=self._inner_dim, inner_activation=self._inner_activation,
                       intermediate_size=self._inner_dim,
                       intermediate_activation=self._inner_activation,
                       dropout=self._dropout_rate, name='feedforward', **options.layer_kwargs()))
    self._attention_dropout = dropout_lib.Dropout(self._dropout_rate)
    norm = lambda name: tf_keras.layers.LayerNormalization(
        epsilon=self._norm_epsilon, dtype=tf.float32, name=name)
    self._attention_layer_norm = norm('self_attention_layer_norm')
    if self._feedforward_block is None:
      self._intermediate_dense = tf_keras.layers.Dense(
          self._inner_dim, name='intermediate', **options.layer_kwargs())
      self._activation = tf_utils.get_activation(self._inner_activation)
      self._output_dense = tf_keras.layers.Dense(width, name='output', **options.layer_kwargs())
    self._output_dropout = dropout_lib.Dropout(self._dropout_rate)
    self._output_layer_norm = norm('output_layer_norm')
    super().build(input_shape)

  def _head_size(self, width: int) -> int:
    if width % self._num_heads:
      raise ValueError(f'{self.name}: the input width {width} is not a multiple of '
                       f'num_attention_heads {self._num_heads}')
    return width // self._num_heads

  @staticmethod
  def _instance(cls_or_layer, config, default_config):
    if isinstance(cls_or_layer, tf_keras.layers.Layer):
      return cls_or_layer
    return cls_or_layer(**(config if config is not None else default_config()))

  def call(self, inputs, training=None):
    inputs, key_value, attention_mask = attention.split_block_inputs(self, inputs)
    residual = inputs
    query = self._attention_layer_norm(inputs) if self._norm_first else inputs
    attended = self._attention_layer(
        query=query, value=query if key_value is None else key_value,
        attention_mask=attention_mask, training=training)
    attended = self._attention_dropout(attended, training=training)
    if self._norm_first:
      x = _residual_add(residual, attended)
      ffn_input = self._output_layer_norm(x)
    else:
      x = self._attention_layer_norm(_residual_add(query, attended))
      ffn_input = x
    if self._feedforward_block is not None:
      output = self._feedforward_block(ffn_input, training=training)
      return _residual_add(x, output) if self._norm_first else output
    hidden = self._activation(self._intermediate_dense(ffn_input))
    output = self._output_dropout(self._output_dense(hidden), training=training)
    if self._norm_first:
      return _residual_add(x, output)
    return self._output_layer_norm(_residual_add(x, output))

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    built = self.built
    config.update(
        num_attention_heads=self._num_heads, inner_dim=self._inner_dim,
        inner_activation=self._inner_activation,
        attention_cls=class_to_config(self._attention_layer if built else self._attention_cls),
        attention_cfg=None if built else self._attention_cfg,
        feedforward_cls=class_to_config(self._feedforward_block if built
                                        else self._feedforward_cls),
        feedforward_cfg=None if built else self._feedforward_cfg,
        dropout_rate=self._dropout_rate, attention_dropout_rate=self._attention_dropout_rate,
        norm_first=self._norm_first, norm_epsilon=self._norm_epsilon,
        **self._dense_options.get_config())
    return config
