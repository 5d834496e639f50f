"""`AlbertEncoder`: BERT with factorized embeddings and one transformer block shared by every layer.

ALBERT (Lan et al., 2019) keeps BERT's computation but (1) looks tokens up in a narrow table
[vocab, embedding_width] that a dense layer projects to hidden_size, and (2) applies the same
`TransformerEncoderBlock` `num_layers` times. Built as a Keras functional model (as in Model
Garden), so every variable exists after the constructor.
"""

import numbers
from typing import Any, Dict, Mapping, Optional, Sequence, Union

import tensorflow as tf
import tf_keras

from official.modeling import checkpoint_compat
from official.modeling import tf_utils
from official.nlp.modeling import layers
from official.nlp.modeling.layers import cast_to_float32
from official.nlp.modeling.networks import albert_encoder_config
from official.nlp.modeling.networks import encoder_family

_INPUT_NAMES = ('input_word_ids', 'input_mask', 'input_type_ids')


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class AlbertEncoder(tf_keras.Model):
  """The ALBERT encoder (Model Garden's constructor, outputs and checkpoint layout).

  Embeddings = word [vocab, embedding_width] + position + type (one-hot), LayerNorm, dropout, then
  `embedding_projection` to hidden_size when `embedding_width != hidden_size`; then one post-LN
  `TransformerEncoderBlock` named `transformer` applied `num_layers` times; the pooler is a tanh
  dense layer on the first token. Sub-layer (and variable) names: `word_embeddings`,
  `position_embedding`, `type_embeddings`, `embeddings/layer_norm`, `embedding_projection`,
  `transformer`, `pooler_transform`; in object checkpoints they are `layer_with_weights-0` ...
  `-6` (`-5` and `-6` are the block and the pooler when there is no projection), plus Model
  Garden's attributes `_embedding_layer` and `_position_embedding_layer`. The layer graph is
  Model Garden's (`layers` and `get_weights()` in its order), except that the block takes the
  [batch, seq] mask rather than a `SelfAttentionMask` layer's [batch, seq, seq] one.

  Mixed precision: the sequence outputs are float32 and `pooled_output` is in the compute dtype
  (float16 under `mixed_float16`), as in Model Garden.

  Args:
    vocab_size: word-embedding rows.
    embedding_width: word-embedding width (None: hidden_size, no projection).
    hidden_size: width of the transformer block.
    num_layers: how many times the shared block is applied.
    num_attention_heads: attention heads.
    max_sequence_length: rows of the position table.
    type_vocab_size: segment ids.
    intermediate_size: feed-forward width.
    activation: feed-forward activation (a name of `tf_utils.get_activation`: 'gelu' is the tanh
      approximation ALBERT uses; or a callable).
    dropout_rate: dropout of embeddings, attention output and feed-forward.
    attention_dropout_rate: dropout of attention probabilities.
    initializer: kernel and table initializer (default: truncated normal, stddev 0.02).
    dict_outputs: return a dict (else `[sequence_output, pooled_output]`).
    **kwargs: Keras model arguments (`name`, ...).

  Call args:
    inputs: `[input_word_ids, input_mask, input_type_ids]`, int [batch, seq] each, or a dict with
      those keys (other keys are ignored).

  Returns:
    With `dict_outputs`: `sequence_output` [batch, seq, hidden], `pooled_output` [batch, hidden]
    and `encoder_outputs` (the output of each of the `num_layers` applications). Otherwise
    `[sequence_output, pooled_output]`.

  Example:
    >>> encoder = AlbertEncoder(vocab_size=100, embedding_width=8, hidden_size=16, num_layers=3,
    ...                         num_attention_heads=2, intermediate_size=32, dict_outputs=True)
    >>> ids = tf.ones([2, 5], tf.int32)
    >>> encoder([ids, ids, 0 * ids])['sequence_output'].shape
    TensorShape([2, 5, 16])
  """

  def __init__(self, vocab_size: int, embedding_width: Optional[int] = 128,
               hidden_size: int = 768, num_layers: int = 12, num_attention_heads: int = 12,
               max_sequence_length: int = 512, type_vocab_size: int = 16,
               intermediate_size: int = 3072, activation: Any = 'gelu',
               dropout_rate: float = 0.1, attention_dropout_rate: float = 0.1,
               initializer: Any = None, dict_outputs: bool = False, **kwargs):
    _check_sizes(vocab_size=vocab_size, hidden_size=hidden_size, num_layers=num_layers,
                 num_attention_heads=num_attention_heads,
                 max_sequence_length=max_sequence_length, type_vocab_size=type_vocab_size,
                 intermediate_size=intermediate_size)
    if num_attention_heads > hidden_size:
      raise ValueError(f'AlbertEncoder num_attention_heads must be at most hidden_size '
                       f'{hidden_size}, found {num_attention_heads}')
    embedding_width = embedding_width or hidden_size
    activation = tf_utils.get_activation(activation)
    if initializer is None:
      initializer = tf_keras.initializers.TruncatedNormal(stddev=0.02)
    initializer = tf_keras.initializers.get(initializer)
    clone = lambda: tf_utils.clone_initializer(initializer)

    # Model Garden's graph (its layers in its order), with our layers; as in BertEncoder, the
    # block takes the [batch, seq] mask (no SelfAttentionMask layer).
    word_ids, mask, type_ids = (tf_keras.Input(shape=(None,), dtype=tf.int32, name=name)
                                for name in _INPUT_NAMES)
    word_embedding_layer = layers.OnDeviceEmbedding(
        vocab_size, embedding_width, initializer=clone(), name='word_embeddings')
    word_embeddings = word_embedding_layer(word_ids)
    position_embedding_layer = layers.PositionEmbedding(
        max_sequence_length, initializer=clone(), name='position_embedding')
    # The position rows [1, seq, width] broadcast in the add (not materialized per batch).
    position_embeddings = position_embedding_layer(word_embeddings, broadcast=False)
    type_embeddings = layers.OnDeviceEmbedding(
        type_vocab_size, embedding_width, initializer=clone(), use_one_hot=True,
        name='type_embeddings')(type_ids)
    embeddings = tf_keras.layers.Add()([word_embeddings, position_embeddings, type_embeddings])
    x = tf_keras.layers.LayerNormalization(epsilon=1e-12, dtype=tf.float32,
                                           name='embeddings/layer_norm')(embeddings)
    x = layers.Dropout(dropout_rate, name='embedding_dropout')(x)
    if embedding_width != hidden_size:
      x = tf_keras.layers.Dense(hidden_size, kernel_initializer=clone(),
                                name='embedding_projection')(x)
    shared_block = layers.TransformerEncoderBlock(
        num_attention_heads=num_attention_heads, inner_dim=intermediate_size,
        inner_activation=activation, output_dropout=dropout_rate,
        attention_dropout=attention_dropout_rate, kernel_initializer=clone(), name='transformer')
    encoder_outputs = []
    for _ in range(num_layers):
      x = shared_block([x, mask])
      encoder_outputs.append(x)
    pooled = tf_keras.layers.Dense(hidden_size, activation='tanh', kernel_initializer=clone(),
                                   name='pooler_transform')(x[:, 0, :])
    if cast_to_float32.mixed_policy():
      # Sequence outputs in float32 as Model Garden's (its block ends in a float32 LayerNorm).
      encoder_outputs = layers.CastToFloat32(name='float32_outputs')(encoder_outputs)
    if dict_outputs:
      outputs = {'sequence_output': encoder_outputs[-1], 'pooled_output': pooled,
                 'encoder_outputs': list(encoder_outputs)}
    else:
      outputs = [encoder_outputs[-1], pooled]
    super().__init__(inputs=[word_ids, mask, type_ids], outputs=outputs, **kwargs)

    # Untracked (no checkpoint entries): Model Garden's config holds no trackable either.
    object.__setattr__(self, '_albert_config', dict(
        vocab_size=vocab_size, embedding_width=embedding_width, hidden_size=hidden_size,
        num_layers=num_layers, num_attention_heads=num_attention_heads,
        max_sequence_length=max_sequence_length, type_vocab_size=type_vocab_size,
        intermediate_size=intermediate_size,
        activation=tf_utils.serialize_activation(activation), dropout_rate=dropout_rate,
        attention_dropout_rate=attention_dropout_rate,
        initializer=tf_keras.initializers.serialize(initializer)))
    object.__setattr__(self, '_dict_outputs', bool(dict_outputs))
    # Model Garden's two tracked attributes (also keys of its checkpoints).
    self._embedding_layer = word_embedding_layer
    self._position_embedding_layer = position_embedding_layer

  def call(self, inputs: Union[Mapping[str, tf.Tensor], Sequence[tf.Tensor]], training=None,
           mask=None):
    # Keras' input check has named a missing key or a wrong count by now; the dict's other keys
    # (e.g. the pretrainer's `masked_lm_positions`) are dropped here.
    if isinstance(inputs, Mapping):
      inputs = [inputs[name] for name in _INPUT_NAMES]
    return super().call(inputs, training=training, mask=mask)

  def get_embedding_table(self) -> tf.Variable:
    """The word-embedding variable [vocab_size, embedding_width]."""
    return self._embedding_layer.embeddings

  def get_embedding_layer(self) -> tf_keras.layers.Layer:
    """The word-embedding layer (`word_embeddings`)."""
    return self._embedding_layer

  @property
  def transformer_layer(self) -> layers.TransformerEncoderBlock:
    """The one `TransformerEncoderBlock`, applied `num_layers` times."""
    return self.get_layer('transformer')

  @property
  def pooler_layer(self) -> tf_keras.layers.Layer:
    """The pooler: a tanh dense layer on the first token (`pooler_transform`)."""
    return self.get_layer('pooler_transform')

  def _trackable_children(self, save_type='checkpoint', **kwargs):
    children = super()._trackable_children(save_type, **kwargs)
    if save_type != 'checkpoint':
      return children
    return checkpoint_compat.functional_checkpoint_children(children)

  def get_config(self) -> Dict[str, Any]:
    # Model Garden's keys; `dict_outputs` only when set (Model Garden's config drops it).
    config = dict(self._albert_config)
    if self._dict_outputs:
      config['dict_outputs'] = True
    return config

  @classmethod
  def from_config(cls, config: Dict[str, Any], custom_objects=None):
    return cls(**config)


def _check_sizes(**sizes: int) -> None:
  """Raises ValueError naming the first size that is not a positive integer."""
  for name, value in sizes.items():
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
      raise ValueError(f'AlbertEncoder {name} must be a positive integer, found {value!r}')


# ---- the `albert` encoder family ----------------------------------------------------------------
def _build_albert(config: albert_encoder_config.AlbertEncoderConfig) -> AlbertEncoder:
  return AlbertEncoder(**albert_encoder_config.encoder_kwargs(config))


ALBERT_FAMILY = encoder_family.register_encoder_family(encoder_family.EncoderFamily(
    name='albert', config_cls=albert_encoder_config.AlbertEncoderConfig, build=_build_albert,
    encoder_classes=(AlbertEncoder,),
    count_flops='official.nlp.tools.model_flops:albert_flops'))
