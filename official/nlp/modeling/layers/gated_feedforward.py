"""A stack of (gated) feed-forward blocks: GLU variants (Shazeer 2020, arXiv:2002.05202)."""

from typing import Any, Dict

import tensorflow as tf
import tf_keras

from official.modeling import tf_utils
from official.nlp.modeling.layers import attention
from official.nlp.modeling.layers import dropout as dropout_lib

_DROPOUT_POSITIONS = ('before_residual', 'after_residual')


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class GatedFeedforward(tf_keras.layers.Layer):
  """`num_blocks` feed-forward blocks, each with a residual connection and a LayerNorm.

  Block i on x: h = act(x W_i + b_i), times the gate (x V_i + c_i) when `use_gate` (GEGLU with
  'gelu'); y = h U_i + d_i; then `dropout_position='before_residual'`: LN(dropout(y) + x), or
  `'after_residual'`: dropout(LN(y + x)). With `apply_output_layer_norm=False` a block returns y
  itself, with neither residual nor LayerNorm (the caller adds the residual, as
  `TransformerScaffold` does in pre-LN).

  Sub-layers (Model Garden's names): lists `_intermediate_dense` (`intermediate_%d`),
  `_gate_dense` (`gate_%d`), `_output_dense` (`output_%d`), `_output_dropout`,
  `_output_layer_norm` (`output_layer_norm_%d`, float32, epsilon 1e-12).

  Args:
    inner_dim: width of the inner layer (alias `intermediate_size`, which wins when both are
      given, as in Model Garden).
    inner_activation: its activation ('gelu' is the tanh approximation; alias
      `intermediate_activation`).
    dropout: dropout rate of each block's output.
    use_gate: multiply the activation by a linear gate.
    apply_output_layer_norm: add the residual and normalize (see above).
    num_blocks: blocks stacked.
    dropout_position: 'before_residual' or 'after_residual'.
    kernel_initializer, bias_initializer, kernel_regularizer, bias_regularizer,
      activity_regularizer, kernel_constraint, bias_constraint: of the dense layers.

  Call args: inputs [..., width]. Returns [..., width] (float32 after the LayerNorm).

  Example:
    >>> layer = GatedFeedforward(inner_dim=32, inner_activation='relu')
    >>> layer(tf.ones([2, 5, 8])).shape
    TensorShape([2, 5, 8])
  """

  def __init__(self, inner_dim: int = 768, inner_activation: Any = 'gelu', dropout: float = 0.0,
               use_gate: bool = True, apply_output_layer_norm: bool = True, num_blocks: int = 1,
               dropout_position: str = 'before_residual', **kwargs):
    inner_dim = kwargs.pop('intermediate_size', inner_dim)
    inner_activation = kwargs.pop('intermediate_activation', inner_activation)
    dense_options = attention.pop_dense_options(kwargs)
    super().__init__(**kwargs)
    self._dense_options = dense_options
    if dropout_position not in _DROPOUT_POSITIONS:
      raise ValueError(f'dropout_position must be one of {_DROPOUT_POSITIONS}, found '
                       f'{dropout_position!r}')
    if num_blocks < 1:
      raise ValueError(f'num_blocks must be at least 1, found {num_blocks}')
    self.inner_dim = inner_dim
    self.inner_activation = tf_utils.serialize_activation(inner_activation)
    self.dropout = dropout
    self.use_gate = use_gate
    self.apply_output_layer_norm = apply_output_layer_norm
    self.num_blocks = num_blocks
    self.dropout_position = dropout_position

  def build(self, input_shape):
    width = int(tf.TensorShape(input_shape)[-1])
    dense = lambda units, name: tf_keras.layers.Dense(
        units, name=name, **self._dense_options.layer_kwargs())
    blocks = range(self.num_blocks)
    self._intermediate_dense = [dense(self.inner_dim, f'intermediate_{i}') for i in blocks]
    self._gate_dense = ([dense(self.inner_dim, f'gate_{i}') for i in blocks] if self.use_gate
                        else [])
    self._output_dense = [dense(width, f'output_{i}') for i in blocks]
    self._output_dropout = [dropout_lib.Dropout(self.dropout) for _ in blocks]
    self._output_layer_norm = (
        [tf_keras.layers.LayerNormalization(epsilon=1e-12, dtype=tf.float32,
                                            name=f'output_layer_norm_{i}') for i in blocks]
        if self.apply_output_layer_norm else [])
    self._activation = tf_utils.get_activation(self.inner_activation)
    super().build(input_shape)

  def call(self, inputs, training=None):
    x = inputs
    for i in range(self.num_blocks):
      hidden = self._activation(self._intermediate_dense[i](x))
      if self.use_gate:
        hidden *= self._gate_dense[i](x)
      y = self._output_dense[i](hidden)
      if self.dropout_position == 'before_residual':
        y = self._output_dropout[i](y, training=training)
      if self.apply_output_layer_norm:
        # The residual may be float32 (a previous block's LayerNorm) under mixed precision.
        y = self._output_layer_norm[i](tf.cast(y, x.dtype) + x)
      if self.dropout_position == 'after_residual':
        y = self._output_dropout[i](y, training=training)
      x = y
    return x

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.update(inner_dim=self.inner_dim, inner_activation=self.inner_activation,
                  dropout=self.dropout, use_gate=self.use_gate,
                  apply_output_layer_norm=self.apply_output_layer_norm,
                  num_blocks=self.num_blocks, dropout_position=self.dropout_position,
                  **self._dense_options.get_config())
    return config
