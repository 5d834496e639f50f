"""`BertEncoder`: embeddings + a stack of transformer blocks + a pooler (Model Garden's constructor)."""

from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

import tensorflow as tf
import tf_keras

from official.modeling import tf_utils
from official.nlp.modeling import layers

_INPUT_NAMES = ('input_word_ids', 'input_mask', 'input_type_ids')


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class BertEncoder(tf_keras.Model):
  """The BERT encoder.

  Embeddings = word + position + type (one-hot matmul), then LayerNorm and dropout, then an optional
  `embedding_projection` when `embedding_width != hidden_size`; then `num_layers` transformer blocks;
  the pooler is a tanh dense layer on the first token. Sub-layer names (variable names):
  `word_embeddings`, `position_embedding`, `type_embeddings`, `embeddings/layer_norm`,
  `embedding_projection`, `transformer/layer_%d`, `final_layer_norm` (pre-LN only), `pooler_transform`;
  held as Model Garden's attributes `_embedding_layer`, `_position_embedding_layer`,
  `_type_embedding_layer`, `_embedding_norm_layer`, `_embedding_projection`, `_transformer_layers`,
  `_pooler_layer` (the object-checkpoint keys). The variables are created on the first call (or, for
  the word embeddings, by `get_embedding_table()`).

  Mixed precision: matmuls run in the policy's compute dtype; LayerNorms and the attention softmax
  in float32; variables stay float32. XLA: every shape is static given the input shapes.

  Args:
    vocab_size: word-embedding rows.
    hidden_size: width of the transformer layers.
    num_layers: transformer layers.
    num_attention_heads: attention heads.
    max_sequence_length: rows of the position table.
    type_vocab_size: segment ids.
    inner_dim: feed-forward width.
    inner_activation: feed-forward activation ('gelu' = tanh approximation).
    output_dropout: dropout of embeddings, attention output and feed-forward.
    attention_dropout: dropout of attention probabilities.
    initializer: kernel and table initializer.
    output_range: the last layer computes only the first `output_range` positions.
    embedding_width: embedding width (factorized embeddings); None = hidden_size.
    embedding_layer: a word-embedding layer (with an `embeddings` variable) to use instead of
      building one; it is not part of `get_config`.
    norm_first: pre-LN transformer blocks, plus a LayerNorm `final_layer_norm` on the last
      layer's output (so that the pooler and heads see normalized states).
    dict_outputs: return a dict (else `[sequence_output, pooled_output]`).
    return_all_encoder_outputs: with list outputs, return every layer's output first.
    return_attention_scores: with dict outputs, add `attention_scores`, every layer's attention
      probabilities [batch, heads, seq, seq] (float32).
    return_word_embeddings: with dict outputs, add `word_embeddings` [batch, seq, embedding_width]
      (the looked-up rows, before position/type embeddings).

  Call args:
    inputs: a dict with `input_word_ids`, `input_mask`, `input_type_ids` (int [batch, seq]; other
      keys are ignored) or a list of the three.

  Returns:
    With `dict_outputs`: `sequence_output` [batch, seq, hidden] (or [batch, output_range, hidden]),
    `pooled_output` [batch, hidden], `encoder_outputs` (list of every layer's output), and the
    optional `attention_scores`, `word_embeddings`. Otherwise `[sequence_output, pooled_output]`,
    or `[encoder_outputs, pooled_output]` with `return_all_encoder_outputs`. Sequence outputs are
    in the compute dtype of the dtype policy (e.g. bfloat16 under `mixed_bfloat16`).

  Example:
    >>> encoder = BertEncoder(vocab_size=100, hidden_size=16, num_layers=2, num_attention_heads=2,
    ...                       inner_dim=32, dict_outputs=True)
    >>> ids = tf.ones([2, 8], tf.int32)
    >>> encoder(dict(input_word_ids=ids, input_mask=ids, input_type_ids=0 * ids))['pooled_output'].shape
    TensorShape([2, 16])
  """

  def __init__(self, vocab_size: int, hidden_size: int = 768, num_layers: int = 12,
               num_attention_heads: int = 12, max_sequence_length: int = 512,
               type_vocab_size: int = 16, inner_dim: int = 3072, inner_activation: Any = 'gelu',
               output_dropout: float = 0.1, attention_dropout: float = 0.1,
               initializer: Any = None, output_range: Optional[int] = None,
               embedding_width: Optional[int] = None,
               embedding_layer: Optional[tf_keras.layers.Layer] = None, norm_first: bool = False,
               dict_outputs: bool = False, return_all_encoder_outputs: bool = False,
               return_attention_scores: bool = False, return_word_embeddings: bool = False,
               **kwargs):
    super().__init__(**kwargs)
    if hidden_size % num_attention_heads:
      raise ValueError(f'BertEncoder hidden_size {hidden_size} must be a multiple of '
                       f'num_attention_heads, found {num_attention_heads}')
    if initializer is None:
      initializer = tf_keras.initializers.TruncatedNormal(stddev=0.02)
    initializer = tf_keras.initializers.get(initializer)
    embedding_width = embedding_width or hidden_size
    self._config = dict(
        vocab_size=vocab_size, hidden_size=hidden_size, num_layers=num_layers,
        num_attention_heads=num_attention_heads, max_sequence_length=max_sequence_length,
        type_vocab_size=type_vocab_size, inner_dim=inner_dim,
        inner_activation=tf_utils.serialize_activation(inner_activation),
        output_dropout=output_dropout, attention_dropout=attention_dropout,
        initializer=tf_keras.initializers.serialize(initializer), output_range=output_range,
        embedding_width=embedding_width, norm_first=norm_first, dict_outputs=dict_outputs,
        return_all_encoder_outputs=return_all_encoder_outputs,
        return_attention_scores=return_attention_scores,
        return_word_embeddings=return_word_embeddings)
    clone = lambda: tf_utils.clone_initializer(initializer)
    self._embedding_layer = embedding_layer or layers.OnDeviceEmbedding(
        vocab_size, embedding_width, initializer=clone(), name='word_embeddings')
    self._position_embedding_layer = layers.PositionEmbedding(
        max_sequence_length, initializer=clone(), name='position_embedding')
    self._type_embedding_layer = layers.OnDeviceEmbedding(
        type_vocab_size, embedding_width, initializer=clone(), use_one_hot=True,
        name='type_embeddings')
    self._embedding_norm_layer = tf_keras.layers.LayerNormalization(
        epsilon=1e-12, dtype=tf.float32, name='embeddings/layer_norm')
    self._embedding_dropout = layers.Dropout(output_dropout, name='embedding_dropout')
    self._embedding_projection = None
    if embedding_width != hidden_size:
      self._embedding_projection = tf_keras.layers.Dense(
          hidden_size, kernel_initializer=clone(), name='embedding_projection')
    self._transformer_layers = [
        layers.TransformerEncoderBlock(
            num_attention_heads=num_attention_heads, inner_dim=inner_dim,
            inner_activation=inner_activation, output_dropout=output_dropout,
            attention_dropout=attention_dropout, norm_first=norm_first,
            kernel_initializer=clone(),
            output_range=output_range if i == num_layers - 1 else None,
            name=f'transformer/layer_{i}')
        for i in range(num_layers)]
    self._final_layer_norm = None
    if norm_first:
      self._final_layer_norm = tf_keras.layers.LayerNormalization(
          epsilon=1e-12, dtype=tf.float32, name='final_layer_norm')
    self._pooler_layer = tf_keras.layers.Dense(hidden_size, activation='tanh',
                                               kernel_initializer=clone(),
                                               name='pooler_transform')

  @staticmethod
  def _unpack(inputs: Union[Mapping[str, tf.Tensor], Sequence[tf.Tensor]]):
    if isinstance(inputs, Mapping):
      missing = [name for name in _INPUT_NAMES if name not in inputs]
      if missing:
        raise ValueError(f'BertEncoder inputs lack {missing}; expected {list(_INPUT_NAMES)}')
      return [inputs[name] for name in _INPUT_NAMES]
    return list(inputs)

  def call(self, inputs, training=None):
    word_ids, mask, type_ids = self._unpack(inputs)
    return_scores = self._config['return_attention_scores']
    word_embeddings = self._embedding_layer(word_ids)
    embeddings = (word_embeddings + self._position_embedding_layer(word_embeddings) +
                  self._type_embedding_layer(type_ids))
    x = tf.cast(self._embedding_norm_layer(tf.cast(embeddings, tf.float32)), embeddings.dtype)
    x = self._embedding_dropout(x, training=training)
    if self._embedding_projection is not None:
      x = self._embedding_projection(x)
    encoder_outputs, attention_scores = [], []
    for layer in self._transformer_layers:
      x = layer(x, mask, return_attention_scores=return_scores, training=training)
      if return_scores:
        x, scores = x
        attention_scores.append(scores)
      encoder_outputs.append(x)
    if self._final_layer_norm is not None:
      x = tf.cast(self._final_layer_norm(tf.cast(x, tf.float32)), x.dtype)
      encoder_outputs[-1] = x
    pooled = self._pooler_layer(x[:, 0, :])
    if self._config['dict_outputs']:
      outputs = {'sequence_output': x, 'pooled_output': pooled,
                 'encoder_outputs': encoder_outputs}
      if return_scores:
        outputs['attention_scores'] = attention_scores
      if self._config['return_word_embeddings']:
        outputs['word_embeddings'] = word_embeddings
      return outputs
    if self._config['return_all_encoder_outputs']:
      return [encoder_outputs, pooled]
    return [x, pooled]

  def get_embedding_table(self) -> tf.Variable:
    """The word-embedding variable [vocab_size, embedding_width] (built on first use)."""
    if not self._embedding_layer.built:
      # Built by a dummy lookup under the encoder's scope so that the variable is named
      # `<encoder>/word_embeddings/embeddings` as when built by the first call.
      with tf.name_scope(self.name):
        self._embedding_layer(tf.zeros([1, 1], tf.int32))
    return self._embedding_layer.embeddings

  def get_embedding_layer(self) -> tf_keras.layers.Layer:
    return self._embedding_layer

  @property
  def transformer_layers(self) -> List[layers.TransformerEncoderBlock]:
    return self._transformer_layers

  @property
  def pooler_layer(self) -> tf_keras.layers.Layer:
    return self._pooler_layer

  def get_build_config(self):
    # Built by calling on int ids; Keras' generic rebuild from shapes feeds floats.
    return None

  def get_config(self) -> Dict[str, Any]:
    # Keras tracks `self._config` as a `_DictWrapper`; return plain (JSON-serializable) values.
    return _plain(dict(self._config, name=self.name))

  @classmethod
  def from_config(cls, config: Dict[str, Any], custom_objects=None):
    return cls(**config)


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class BertEncoderV2(BertEncoder):
  """Model Garden's `BertEncoderV2`: a `BertEncoder` that always returns its dict outputs.

  Takes `BertEncoder`'s arguments except `dict_outputs` (always True) and
  `return_all_encoder_outputs` (the dict always holds `encoder_outputs`).

  Example:
    >>> encoder = BertEncoderV2(vocab_size=100, hidden_size=16, num_layers=1, num_attention_heads=2,
    ...                         inner_dim=32)
  """

  def __init__(self, vocab_size: int, **kwargs):
    kwargs['dict_outputs'] = True
    super().__init__(vocab_size, **kwargs)


def _plain(value: Any) -> Any:
  """`value` with every mapping turned into a dict and every sequence into a list."""
  if isinstance(value, dict):  # Keras' `_DictWrapper` proxies a dict (not `typing.Mapping`)
    return {key: _plain(item) for key, item in value.items()}
  if isinstance(value, (list, tuple)):
    return [_plain(item) for item in value]
  return value
