"""Sequence packing for accelerators: several short examples share one row, and the transformer
blocks attend only from every `stride`-th position.

`PackBertEmbeddings` folds `pack_sequences` consecutive examples of a batch into one row and builds
the attention mask that keeps each example to itself. The strided blocks are our
`TransformerEncoderBlock`, `ReZeroTransformer` and `TransformerScaffold` with the queries (and the
residual and mask rows) taken at positions `0, stride, 2 * stride, ...` while keys and values stay
the whole sequence, e.g. to compute only the [CLS] position of each packed example in the last
layer. Same sub-layers and variables as the blocks they extend.

Example:
  >>> packed = PackBertEmbeddings(pack_sequences=2)(tf.ones([4, 8, 16]), tf.ones([4, 8]))
  >>> packed['packed_embeddings'].shape, packed['combined_attention_mask'].shape
  (TensorShape([2, 16, 16]), TensorShape([2, 16, 16]))
  >>> block = StridedTransformerEncoderBlock(num_attention_heads=2, inner_dim=32)
  >>> block([packed['packed_embeddings'], packed['combined_attention_mask']], stride=8).shape
  TensorShape([2, 2, 16])
"""

from typing import Any, Dict, Optional, Union

import tensorflow as tf
import tf_keras

from official.nlp.modeling.layers import attention
from official.nlp.modeling.layers import rezero_transformer
from official.nlp.modeling.layers import self_attention_mask
from official.nlp.modeling.layers import transformer_encoder_block
from official.nlp.modeling.layers import transformer_scaffold

Stride = Union[int, tf.Tensor]


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class PackBertEmbeddings(tf_keras.layers.Layer):
  """Packs groups of `pack_sequences` consecutive examples into one row each.

  Examples 0..p-1 of the batch become row 0 (example k at positions k*seq..(k+1)*seq-1), and so
  on. The combined mask lets a position attend to a token of the same example only (padding,
  `input_mask == 0`, is attended by nothing).

  Args:
    pack_sequences: examples per packed row; it must divide the batch size.

  Call args:
    input_embeddings: [batch, seq, width].
    input_mask: [batch, seq] (1 = token, 0 = padding).

  Returns:
    A dict: `packed_embeddings` [batch / p, p * seq, width] and `combined_attention_mask`
    float32 [batch / p, p * seq, p * seq] (1 = may attend).

  Example:
    >>> PackBertEmbeddings(2)(tf.ones([2, 3, 4]), tf.ones([2, 3]))['packed_embeddings'].shape
    TensorShape([1, 6, 4])
  """

  def __init__(self, pack_sequences: int, **kwargs):
    super().__init__(**kwargs)
    if pack_sequences < 1:
      raise ValueError(f'PackBertEmbeddings pack_sequences must be >= 1, found {pack_sequences}')
    self.pack_sequences = pack_sequences

  def call(self, input_embeddings: tf.Tensor, input_mask: tf.Tensor) -> Dict[str, tf.Tensor]:
    if input_embeddings.shape.rank != 3:
      raise ValueError(f'{self.name}: input_embeddings must be [batch, seq, width], found shape '
                       f'{input_embeddings.shape}')
    pack = self.pack_sequences
    static_batch = input_embeddings.shape[0]
    if static_batch is not None and static_batch % pack:
      raise ValueError(f'{self.name}: the batch size {static_batch} is not a multiple of '
                       f'pack_sequences {pack}')
    shape = tf.shape(input_embeddings)
    rows, packed_length = shape[0] // pack, pack * shape[1]
    packed = tf.reshape(input_embeddings,
                        tf.stack([rows, packed_length, shape[2]]))
    mask = tf.reshape(input_mask, tf.stack([rows, packed_length]))
    # 1 + the example's index within its row at every token, 0 at padding.
    example = 1 + tf.range(packed_length) // shape[1]
    example = tf.where(tf.equal(mask, 0), 0, example[None, :])
    same_example = tf.equal(example[:, :, None], example[:, None, :])
    attend = self_attention_mask.get_mask(packed, mask, dtype=tf.bool)
    return dict(packed_embeddings=packed,
                combined_attention_mask=tf.cast(attend & same_example, tf.float32))

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.update(pack_sequences=self.pack_sequences)
    return config


def _strided(x: tf.Tensor, stride: Stride) -> tf.Tensor:
  return x[:, ::stride]


def _strided_mask(mask: Optional[tf.Tensor], stride: Stride) -> Optional[tf.Tensor]:
  # A [batch, query, key] mask loses the rows of the dropped queries; a [batch, key] padding
  # mask applies to every query as is.
  if mask is None or mask.shape.rank == 2:
    return mask
  return mask[:, ::stride]


def _reject(layer: tf_keras.layers.Layer, output_range: Optional[int],
            src_block_size: Optional[int]) -> None:
  if output_range is not None:
    raise ValueError(f'{type(layer).__name__} takes no output_range (the stride chooses the '
                     f'queries), found output_range={output_range}')
  if src_block_size is not None:
    raise ValueError(f'{type(layer).__name__} does not support block-sparse attention, found '
                     f'src_block_size={src_block_size}')


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class StridedTransformerEncoderBlock(transformer_encoder_block.TransformerEncoderBlock):
  """`TransformerEncoderBlock` attending from every `stride`-th position to all positions.

  Takes the block's arguments except `output_range` and `src_block_size` (ValueError). Computed by
  the block's Keras attention path (`KerasAttentionPath`, or `EfficientAttentionPath` with the
  efficient-attention options), with the block's sub-layer names.

  Call args:
    inputs: [batch, seq, hidden], `[inputs, attention_mask]` or `[inputs, key_value,
      attention_mask]`; the mask is [batch, seq, key_seq] or [batch, key_seq].
    stride: the query step (int or scalar int tensor).

  Returns:
    [batch, ceil(seq / stride), hidden].

  Example:
    >>> block = StridedTransformerEncoderBlock(num_attention_heads=2, inner_dim=8)
    >>> block([tf.zeros([2, 4, 8]), tf.ones([2, 4, 4])], stride=2).shape
    TensorShape([2, 2, 8])
  """

  # Our fused self-attention attends from a prefix of the keys only; Keras' layers take any query.
  _keras_attention_reason = 'strided queries'

  def __init__(self, *args, **kwargs):
    super().__init__(*args, **kwargs)
    _reject(self, self.output_range, self._attention_options['src_block_size'])

  def call(self, inputs, stride: Stride, training=None):
    x, key_value, mask = attention.split_block_inputs(self, inputs)
    return super().call([_strided(x, stride), x if key_value is None else key_value,
                         _strided_mask(mask, stride)], training=training)


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class StridedReZeroTransformer(rezero_transformer.ReZeroTransformer):
  """`ReZeroTransformer` attending from every `stride`-th position to all positions.

  Takes the block's arguments except `output_range` and `src_block_size` (ValueError).

  Call args:
    inputs: [batch, seq, width], `[inputs, attention_mask]` or `[inputs, key_value,
      attention_mask]`; the mask is [batch, seq, key_seq].
    stride: the query step (int or scalar int tensor).

  Returns:
    [batch, ceil(seq / stride), width], float32.

  Example:
    >>> block = StridedReZeroTransformer(num_attention_heads=2, inner_dim=8)
    >>> block([tf.zeros([2, 4, 8]), tf.ones([2, 4, 4])], stride=2).shape
    TensorShape([2, 2, 8])
  """

  def __init__(self, *args, **kwargs):
    super().__init__(*args, **kwargs)
    _reject(self, self._output_range, self._src_block_size)

  def call(self, inputs, stride: Stride, training=None):
    x, key_value, mask = attention.split_block_inputs(self, inputs)
    return super().call([_strided(x, stride), x if key_value is None else key_value,
                         _strided_mask(mask, stride)], training=training)


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class StridedTransformerScaffold(transformer_scaffold.TransformerScaffold):
  """`TransformerScaffold` attending from every `stride`-th position to all positions.

  The keys and values are the block's unnormalized input (also in pre-LN), as in Model Garden.

  Call args:
    inputs: [batch, seq, width], `[inputs, attention_mask]` or `[inputs, key_value,
      attention_mask]`; the mask is [batch, seq, key_seq].
    stride: the query step (int or scalar int tensor).

  Returns:
    [batch, ceil(seq / stride), width].

  Example:
    >>> block = StridedTransformerScaffold(num_attention_heads=2, inner_dim=8)
    >>> block([tf.zeros([2, 4, 8]), tf.ones([2, 4, 4])], stride=2).shape
    TensorShape([2, 2, 8])
  """

  def call(self, inputs, stride: Stride, training=None):
    x, key_value, mask = attention.split_block_inputs(self, inputs)
    return super().call([_strided(x, stride), x if key_value is None else key_value,
                         _strided_mask(mask, stride)], training=training)
