"""The attention paths of `TransformerEncoderBlock`: one class per kind of attention layer.

The block has one forward body (attention -> dropout -> residual -> norm -> feed-forward ->
residual -> norm); what its options change is the attention layer and how that layer is fed.
Each path builds its layer (named `self_attention`, the block's `_attention_layer`) and computes
the attention branch of a call:

- `FusedSelfAttentionPath`: our `MultiHeadSelfAttention` (fused kernels, rotary embeddings,
  sliding windows, document ids) on [batch, seq, hidden]; BERT's and ModernBERT's blocks.
- `KerasAttentionPath`: Keras' `MultiHeadAttention`, for Model Garden's other options (`key_dim`,
  `value_dim`, `output_last_dim`, `use_query_residual=False`, `attention_axes`,
  `diff_q_kv_att_layer_norm`), a separate key/value input, inputs of rank other than 3.
- `EfficientAttentionPath`: `EfficientAttention` (grouped key/value heads, block-diagonal,
  sigmoid or Linformer attention), called like Keras' layer.

`attention_path` picks one from the block's arguments and input shapes when the block is built.

Example:
  >>> block = layers.TransformerEncoderBlock(num_attention_heads=2, inner_dim=8, key_dim=4)
  >>> attention_path(block, tf.TensorShape([2, 5, 16]))
  KerasAttentionPath(reason='key_dim')
"""

import dataclasses
from typing import ClassVar, Optional, Tuple, Union

import tensorflow as tf
import tf_keras

from official.modeling import tf_utils
from official.nlp.modeling.layers import efficient_attention
from official.nlp.modeling.layers import self_attention

# (residual or None, attention output before dropout, attention probabilities or None)
Branch = Tuple[Optional[tf.Tensor], tf.Tensor, Optional[tf.Tensor]]

# The block's arguments only Keras' attention layers compute; the efficient ones are separate.
_KERAS_OPTIONS = (
    ('attention_axes', lambda block: block.attention_axes is not None),
    ('use_query_residual=False', lambda block: not block.use_query_residual),
    ('key_dim', lambda block: block.key_dim is not None),
    ('value_dim', lambda block: block.value_dim is not None),
    ('output_last_dim', lambda block: block.output_last_dim is not None),
    ('diff_q_kv_att_layer_norm', lambda block: block.diff_q_kv_att_layer_norm))


def _uses_efficient_attention(options) -> bool:
  return (options['num_kv_heads'] is not None or options['src_block_size'] is not None
          or options['use_sigmoid_attn'] or options['linformer_dim'] is not None)


def _initializer(block: tf_keras.layers.Layer):
  return tf_utils.clone_initializer(block.attention_initializer or block.kernel_initializer)


@dataclasses.dataclass(frozen=True)
class FusedSelfAttentionPath:
  """Self-attention on [batch, seq, hidden] with our fused kernels (`MultiHeadSelfAttention`).

  `fused` tells the block to build its norms and dropout layers in `build`: their variables and
  random generators exist before the first call (checkpoints restore into them, and the fused
  attention kernel takes seeds from a dropout layer it does not call). `output_range` attends
  from the first positions only; the pre-LN norm is applied to the whole input (the keys need it
  too).

  Args:
    reason: '' (no option needs a Keras path); the field every path has.
  """
  fused: ClassVar[bool] = True
  reason: str = ''

  def make_layer(self, block: tf_keras.layers.Layer, query_shape: tf.TensorShape,
                 key_value_shape: Optional[tf.TensorShape] = None) -> tf_keras.layers.Layer:
    del key_value_shape  # self-attention only
    hidden = int(query_shape[-1])
    heads = block.num_attention_heads
    if not 0 < heads <= hidden:
      raise ValueError(f'num_attention_heads must be between 1 and the hidden size {hidden}, '
                       f'found {heads}')
    # A hidden size the heads do not divide is allowed (as in Model Garden): each head is
    # hidden // heads wide and the attention output projects back to `hidden`.
    return self_attention.MultiHeadSelfAttention(
        heads, hidden // heads, block.attention_dropout, kernel_initializer=_initializer(block),
        use_bias=block.use_bias, rotary_theta=block.rotary_theta,
        attention_window=block.attention_window, name='self_attention')

  def attend(self, block: tf_keras.layers.Layer, inputs, key_value, attention_mask,
             output_range: Optional[int], return_scores: bool, training, position_ids=None,
             document_ids=None, query_positions=None) -> Branch:
    """The attention branch of `block` on `inputs`: (residual, attention, probabilities).

    `query_positions` (int [batch, q]): attend from these positions only; the residual is their
    rows."""
    if key_value is not None:
      raise ValueError(f'{block.name} was built for self-attention; a separate key/value input '
                       'needs the layer to be first called with [query, key_value, mask]')
    # pylint: disable=protected-access
    residual = self_attention.query_rows(inputs, output_range, query_positions)
    if block.norm_first:
      inputs = block._norm(block._attention_layer_norm, inputs)
    attention = block._attention_layer(
        inputs, attention_mask, query_length=output_range, return_attention_scores=return_scores,
        training=training, position_ids=position_ids, document_ids=document_ids,
        query_positions=query_positions)
    if return_scores:
      attention, scores = attention
      return residual, attention, scores
    return residual, attention, None


@dataclasses.dataclass(frozen=True)
class KerasAttentionPath:
  """Query over key/value with Keras' `MultiHeadAttention` (Model Garden's block, any option).

  The query (and a 3-D mask) is cut to `output_range` first; in pre-LN the query and the
  key/value have their own norms (`_attention_layer_norm`, `_attention_layer_norm_kv`, the same
  layer unless `diff_q_kv_att_layer_norm`). No residual with `use_query_residual=False`.

  Args:
    reason: the options or inputs that need this path (in error messages).
  """
  fused: ClassVar[bool] = False
  reason: str = ''

  def make_layer(self, block: tf_keras.layers.Layer, query_shape: tf.TensorShape,
                 key_value_shape: Optional[tf.TensorShape] = None) -> tf_keras.layers.Layer:
    del key_value_shape  # Keras' layer builds from its first call
    return tf_keras.layers.MultiHeadAttention(
        num_heads=block.num_attention_heads, key_dim=self._key_dim(block, query_shape),
        value_dim=block.value_dim, dropout=block.attention_dropout, use_bias=block.use_bias,
        kernel_initializer=_initializer(block), attention_axes=block.attention_axes,
        output_shape=block.output_last_dim, name='self_attention')

  @staticmethod
  def _key_dim(block: tf_keras.layers.Layer, query_shape: tf.TensorShape) -> int:
    return block.key_dim or max(int(query_shape[-1]) // block.num_attention_heads, 1)

  def attend(self, block: tf_keras.layers.Layer, inputs, key_value, attention_mask,
             output_range: Optional[int], return_scores: bool, training, position_ids=None,
             document_ids=None, query_positions=None) -> Branch:
    """The attention branch of `block`: (residual or None, attention, probabilities)."""
    del return_scores  # Keras' layer returns them at no extra cost; the block drops them
    if position_ids is not None or document_ids is not None or query_positions is not None:
      raise ValueError(f'{block.name}: position_ids, document_ids and query_positions need our '
                       f'self-attention (on [batch, seq, hidden] inputs); found {self.reason}')
    query = inputs
    if key_value is None:
      key_value = query
    if attention_mask is not None:
      attention_mask = tf.convert_to_tensor(attention_mask)
    if output_range:
      query = query[:, :output_range]
      if attention_mask is not None and attention_mask.shape.rank == 3:
        attention_mask = attention_mask[:, :output_range]
    if attention_mask is not None and attention_mask.shape.rank == 2:
      attention_mask = attention_mask[:, None, :]  # [batch, keys] -> every query
    residual = query
    # pylint: disable=protected-access
    if block.norm_first:
      query = block._norm(block._attention_layer_norm, query)
      key_value = block._norm(block._attention_layer_norm_kv, key_value)
    attention, scores = block._attention_layer(
        query, key_value, attention_mask=attention_mask, return_attention_scores=True,
        training=training)
    return (residual if block.use_query_residual else None), attention, scores


@dataclasses.dataclass(frozen=True)
class EfficientAttentionPath(KerasAttentionPath):
  """`KerasAttentionPath` with `EfficientAttention` (the block's `num_kv_heads`,
  `src_block_size`/`tgt_block_size`, `use_sigmoid_attn`/`sigmoid_attn_bias`, `linformer_dim`/
  `linformer_shared_kv_projection`), which takes the same call arguments.

  Args:
    reason: the options or inputs that need this path (in error messages).
  """

  def make_layer(self, block: tf_keras.layers.Layer, query_shape: tf.TensorShape,
                 key_value_shape: Optional[tf.TensorShape] = None) -> tf_keras.layers.Layer:
    del key_value_shape
    return efficient_attention.EfficientAttention(
        num_heads=block.num_attention_heads, key_dim=self._key_dim(block, query_shape),
        value_dim=block.value_dim, dropout=block.attention_dropout, use_bias=block.use_bias,
        kernel_initializer=_initializer(block), output_shape=block.output_last_dim,
        name='self_attention', **block._attention_options)  # pylint: disable=protected-access


AttentionPath = Union[FusedSelfAttentionPath, KerasAttentionPath]  # (or its subclass)


def attention_path(block: tf_keras.layers.Layer, query_shape: tf.TensorShape,
                   key_value_shape: Optional[tf.TensorShape] = None) -> AttentionPath:
  """The attention path of `block` (a `TransformerEncoderBlock`) for inputs of these shapes.

  The fused path unless an option, the inputs or the block's class need Keras' layers: the
  efficient-attention options take `EfficientAttentionPath`, the others `KerasAttentionPath`.

  Args:
    block: the block being built (its arguments are read, nothing is changed).
    query_shape: the shape of the block's input (the queries).
    key_value_shape: the shape of a separate key/value input, or None for self-attention.

  Returns:
    A path object; its `reason` names what needs a Keras path ('' for the fused path).

  Raises:
    ValueError: `rotary_theta` or `attention_window` (fused path only) with a Keras path.
  """
  options = block._attention_options  # pylint: disable=protected-access
  efficient = _uses_efficient_attention(options)
  reasons = [name for name, used in _KERAS_OPTIONS if used(block)]
  if efficient:
    reasons.append('the efficient-attention options')
  reasons += [reason for reason in (
      block._keras_attention_reason,  # pylint: disable=protected-access
      'a separate key/value input' if key_value_shape is not None else '',
      f'inputs of rank {query_shape.rank}' if query_shape.rank != 3 else '') if reason]
  if not reasons:
    return FusedSelfAttentionPath()
  reason = ', '.join(reasons)
  if block.rotary_theta is not None or block.attention_window is not None:
    raise ValueError(f'{block.name}: rotary_theta and attention_window need self-attention '
                     f'on [batch, seq, hidden] inputs; found {reason}')
  return EfficientAttentionPath(reason) if efficient else KerasAttentionPath(reason)
