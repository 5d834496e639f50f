"""`BertEncoder`: embeddings + a stack of transformer blocks + a pooler (Model Garden's constructor)."""

import logging
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

import tensorflow as tf
import tf_keras

from official.modeling import checkpoint_compat
from official.modeling import tf_utils
from official.nlp.modeling import layers
from official.nlp.modeling.networks import bert_encoder_config
from official.nlp.modeling.networks import modernbert_encoder

_INPUT_NAMES = ('input_word_ids', 'input_mask', 'input_type_ids')
# Extra inputs of an encoder `with_dense_inputs` (Model Garden's BertEncoderV2 option).
_DENSE_INPUT_NAMES = ('dense_inputs', 'dense_mask', 'dense_type_ids')
# Keys of a packed row's position ids in the input dict (an encoder with `packed_documents`): the
# data loaders' name (`use_position_id`), then ModernBertEncoder's.
_POSITION_ID_NAMES = ('position_ids', 'input_position_ids')
# Keys of encoder config dicts (`EncoderConfig`, `BertEncoderConfig`, BERT config.json) that
# `get_config()` never has: `from_config` builds from those through `bert_encoder_config`.
_ENCODER_CONFIG_KEYS = frozenset({
    'type', 'bert', 'intermediate_size', 'hidden_activation', 'dropout_rate',
    'attention_dropout_rate', 'max_position_embeddings', 'initializer_range', 'embedding_size',
    'num_hidden_layers', 'hidden_act', 'hidden_dropout_prob', 'attention_probs_dropout_prob'})


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
  `_pooler_layer` (the object-checkpoint keys). As in Model Garden, the variables exist once the
  encoder is constructed, so a checkpoint restores (and its shapes are checked) at once.

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
    with_dense_inputs: the inputs also hold `dense_inputs` [batch, dense_seq, embedding_width]
      (float), `dense_mask` and `dense_type_ids` [batch, dense_seq]: features appended after the
      word embeddings (the outputs cover seq + dense_seq positions). Dense features in the input
      dict are used either way; this adds them to `inputs` and to the build.
    packed_documents: the input dict may hold `position_ids` (or `input_position_ids`) int
      [batch, seq] of packed rows, restarting at 0 at each document (`create_pretraining_data
      --pack`, read with `use_position_id: true`): the position embeddings are looked up at them
      and each token attends only within its document (`document_ids_from_positions`, as
      `ModernBertEncoder`). Without them, positions are 0..seq-1 (one document a row). Off by
      default (Model Garden's encoder, which ignores position ids); no variable changes.

  Call args:
    inputs: a dict with `input_word_ids`, `input_mask`, `input_type_ids` (int [batch, seq]; other
      keys are ignored) or a list of the three. `input_word_embeddings` [batch, seq,
      embedding_width] may replace `input_word_ids` (the lookup is skipped). Keras symbolic
      tensors (`tf_keras.Input`) work too, e.g. `encoder(encoder.inputs)`.

  Returns:
    With `dict_outputs`: `sequence_output` [batch, seq, hidden] (or [batch, output_range, hidden]),
    `pooled_output` [batch, hidden], `encoder_outputs` (list of every layer's output), and the
    optional `attention_scores`, `word_embeddings`. Otherwise `[sequence_output, pooled_output]`,
    or `[encoder_outputs, pooled_output]` with `return_all_encoder_outputs`, plus the list of
    attention scores third with `return_attention_scores`. As in Model Garden, whose blocks end in
    a float32 LayerNorm, the sequence outputs (`sequence_output`, `encoder_outputs`) are float32
    under a mixed policy and `pooled_output` is in the compute dtype (e.g. float16 under
    `mixed_float16`); inside the stack the blocks pass the compute dtype to each other.

  Attributes:
    inputs: a dict of `tf_keras.Input(shape=(None,), dtype=tf.int32)` named `input_word_ids`,
      `input_mask`, `input_type_ids` (Model Garden's), so that
      `tf_keras.Model(encoder.inputs, encoder(encoder.inputs))` makes a functional model.

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
               with_dense_inputs: bool = False, packed_documents: bool = False, **kwargs):
    legacy = _legacy_arguments(kwargs)
    inner_dim = legacy.get('inner_dim', inner_dim)
    inner_activation = legacy.get('inner_activation', inner_activation)
    output_dropout = legacy.get('output_dropout', output_dropout)
    attention_dropout = legacy.get('attention_dropout', attention_dropout)
    super().__init__(**kwargs)
    if not 0 < num_attention_heads <= hidden_size:
      # Model Garden allows a hidden size that heads do not divide: each head is
      # hidden_size // num_attention_heads wide and the attention output projects back.
      raise ValueError(f'BertEncoder num_attention_heads must be between 1 and hidden_size '
                       f'{hidden_size}, found {num_attention_heads}')
    if packed_documents and with_dense_inputs:
      raise ValueError('BertEncoder packed_documents and with_dense_inputs cannot be combined '
                       '(position ids cover the word positions only); found both True')
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
        return_word_embeddings=return_word_embeddings, with_dense_inputs=with_dense_inputs,
        packed_documents=packed_documents)
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
    # As in Model Garden's BertEncoder, the attribute exists only when the projection does.
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
    # Symbolic inputs (Model Garden's `inputs`). Set without Keras' attribute tracking, so they
    # add nothing to checkpoints; the save spec lets `save()` work before the first call.
    object.__setattr__(self, 'inputs',
                       symbolic_inputs(embedding_width if with_dense_inputs else None))
    self._set_save_spec(self.inputs)
    # Model Garden's encoder has its variables once constructed, so that a checkpoint restores
    # (and checks shapes) at once rather than deferred to the first call.
    self.build()

  @staticmethod
  def _unpack(inputs: Union[Mapping[str, tf.Tensor], Sequence[tf.Tensor]]):
    """(word ids or None, mask, type ids, word embeddings or None) of the call's inputs."""
    if isinstance(inputs, Mapping):
      required = list(_INPUT_NAMES)
      if 'input_word_embeddings' in inputs:
        required.remove('input_word_ids')
      missing = [name for name in required if name not in inputs]
      if missing:
        raise ValueError(f'BertEncoder inputs lack {missing}; expected {list(_INPUT_NAMES)} '
                         f'(or input_word_embeddings instead of input_word_ids), found '
                         f'{sorted(inputs)}')
      return (inputs.get('input_word_ids'), inputs['input_mask'], inputs['input_type_ids'],
              inputs.get('input_word_embeddings'))
    if not isinstance(inputs, (list, tuple)) or len(inputs) != 3:
      raise ValueError(f'BertEncoder inputs must be a dict with {list(_INPUT_NAMES)} or a list '
                       f'of those three tensors, found {inputs!r}')
    return (*inputs, None)

  @staticmethod
  def _dense_inputs(inputs) -> Optional[Sequence[tf.Tensor]]:
    """(dense_inputs, dense_mask, dense_type_ids) when the input dict has `dense_inputs`, else None.

    As in Model Garden, dense features given in the dict are used whether or not the encoder was
    built `with_dense_inputs` (which only adds them to `inputs` and to the build).
    """
    if not isinstance(inputs, Mapping) or 'dense_inputs' not in inputs:
      return None
    missing = [name for name in _DENSE_INPUT_NAMES if name not in inputs]
    if missing:
      raise ValueError(f'BertEncoder inputs have dense_inputs but lack {missing}; expected '
                       f'{list(_DENSE_INPUT_NAMES)} together')
    return [inputs[name] for name in _DENSE_INPUT_NAMES]

  def _position_ids(self, inputs) -> Optional[tf.Tensor]:
    """int32 [batch, seq] position ids of packed rows, or None (positions 0..seq-1)."""
    if not self._config['packed_documents'] or not isinstance(inputs, Mapping):
      return None
    for name in _POSITION_ID_NAMES:
      if inputs.get(name) is not None:
        if self._dense_inputs(inputs) is not None:
          raise ValueError(f'BertEncoder packed_documents: {name} with dense_inputs is not '
                           'supported; expected one or the other')
        return tf.cast(inputs[name], tf.int32)
    return None

  def call(self, inputs, training=None):
    word_ids, mask, type_ids, word_embeddings = self._unpack(inputs)
    return_scores = self._config['return_attention_scores']
    if word_embeddings is None:
      word_embeddings = self._embedding_layer(word_ids)
    else:
      word_embeddings = tf.cast(word_embeddings, self.compute_dtype)
    dense = self._dense_inputs(inputs)
    if dense is not None:
      # Dense features [batch, dense_seq, embedding_width] follow the word embeddings; positions
      # and type embeddings then cover both parts.
      dense_inputs, dense_mask, dense_type_ids = dense
      word_embeddings = tf.concat([word_embeddings, tf.cast(dense_inputs, word_embeddings.dtype)],
                                  axis=1)
      mask = tf.concat([mask, tf.cast(dense_mask, mask.dtype)], axis=1)
      type_ids = tf.concat([type_ids, tf.cast(dense_type_ids, type_ids.dtype)], axis=1)
    position_ids = self._position_ids(inputs)
    document_ids = None
    if position_ids is None:
      # The position rows [1, seq, width] broadcast in the add (not materialized per batch).
      positions = self._position_embedding_layer(word_embeddings, broadcast=False)
    else:  # packed rows: each document's positions from 0, attention within the document
      positions = tf.cast(tf.gather(self._position_embedding_layer.embeddings, position_ids),
                          word_embeddings.dtype)
      document_ids = modernbert_encoder.document_ids_from_positions(position_ids)
    embeddings = word_embeddings + positions + self._type_embedding_layer(type_ids)
    x = tf.cast(self._embedding_norm_layer(tf.cast(embeddings, tf.float32)), embeddings.dtype)
    x = self._embedding_dropout(x, training=training)
    projection = getattr(self, '_embedding_projection', None)
    if projection is not None:
      x = projection(x)
    encoder_outputs, attention_scores = [], []
    for layer in self._transformer_layers:
      x = layer(x, mask, return_attention_scores=return_scores, training=training,
                document_ids=document_ids)
      if return_scores:
        x, scores = x
        attention_scores.append(scores)
      encoder_outputs.append(x)
    if self._final_layer_norm is not None:
      x = self._final_layer_norm(tf.cast(x, tf.float32))
      encoder_outputs[-1] = x
    pooled = self._pooler_layer(x[:, 0, :])
    # Sequence outputs in float32 like Model Garden's (its blocks end in a float32 LayerNorm);
    # a no-op without mixed precision, unused ones are pruned from a traced training step.
    x = tf.cast(x, tf.float32)
    encoder_outputs = [tf.cast(output, tf.float32) for output in encoder_outputs]
    if self._config['dict_outputs']:
      outputs = {'sequence_output': x, 'pooled_output': pooled,
                 'encoder_outputs': encoder_outputs}
      if return_scores:
        outputs['attention_scores'] = attention_scores
      if self._config['return_word_embeddings']:
        outputs['word_embeddings'] = word_embeddings
      return outputs
    outputs = [encoder_outputs if self._config['return_all_encoder_outputs'] else x, pooled]
    if return_scores:
      outputs.append(attention_scores)
    return outputs

  def build(self, input_shape=None):
    """Creates every variable (the constructor does; Keras' `build(shapes)` then does nothing).

    Runs the layers once on a [1, 2] batch of zeros outside the encoder's name scope, so that the
    variables are named as Model Garden's functional encoder names them
    (`word_embeddings/embeddings:0`, `transformer/layer_0/...`).
    """
    if self.built:
      return
    with tf.init_scope():
      zeros = tf.zeros([1, 2], tf.int32)
      inputs = dict(input_word_ids=zeros, input_mask=zeros + 1, input_type_ids=zeros)
      if self._config['with_dense_inputs']:
        inputs.update(dense_inputs=tf.zeros([1, 1, self._config['embedding_width']]),
                      dense_mask=zeros[:, :1] + 1, dense_type_ids=zeros[:, :1])
      self.call(inputs, training=False)
    self.built = True

  def get_embedding_table(self) -> tf.Variable:
    """The word-embedding variable [vocab_size, embedding_width]."""
    return self._embedding_layer.embeddings

  def get_embedding_layer(self) -> tf_keras.layers.Layer:
    return self._embedding_layer

  @property
  def transformer_layers(self) -> List[layers.TransformerEncoderBlock]:
    return self._transformer_layers

  @property
  def pooler_layer(self) -> tf_keras.layers.Layer:
    return self._pooler_layer

  def _trackable_children(self, save_type='checkpoint', **kwargs):
    # Checkpoint keys as Model Garden's functional BertEncoder: `layer_with_weights-<i>` in its
    # graph order, listed before the attribute names (which still restore older checkpoints).
    children = super()._trackable_children(save_type, **kwargs)
    if save_type != 'checkpoint':
      return children
    aliases = checkpoint_compat.functional_layer_aliases(
        [self._embedding_layer, self._position_embedding_layer, self._type_embedding_layer,
         self._embedding_norm_layer, getattr(self, '_embedding_projection', None),
         *self._transformer_layers,
         self._pooler_layer, self._final_layer_norm])
    aliases.update(children)
    return aliases

  def get_build_config(self):
    # `build` needs no shapes; reloading a saved encoder calls it when it was built.
    return {'built': True} if self.built else None

  def build_from_config(self, config):
    if config:
      self.build()

  def get_config(self) -> Dict[str, Any]:
    # Keras tracks `self._config` as a `_DictWrapper`; return plain (JSON-serializable) values.
    return _plain(dict(self._config, name=self.name))

  @classmethod
  def from_config(cls, config: Dict[str, Any], custom_objects=None):
    """Builds an encoder from `get_config()`'s dict, or from an encoder config dict.

    Besides Keras' own config, accepts what `bert_encoder_config.bert_config_from_dict` does: an
    `EncoderConfig` dict (`{'type': 'bert', 'bert': {...}}`), its `bert` part, or a BERT
    `config.json` dict (`num_hidden_layers`, ...); those build the encoder
    `encoders.build_encoder` would (dict outputs).

    Example:
      >>> BertEncoder.from_config({'type': 'bert', 'bert': {'num_layers': 2, 'hidden_size': 64,
      ...                                                   'num_attention_heads': 2}})
    """
    if _ENCODER_CONFIG_KEYS & set(config):
      return cls(**bert_encoder_config.encoder_kwargs(
          bert_encoder_config.bert_config_from_dict(config)))
    return cls(**config)


# Model Garden's older `BertEncoder` argument names -> today's (None: accepted and ignored).
_LEGACY_ARGUMENTS = {'intermediate_size': 'inner_dim', 'activation': 'inner_activation',
                     'dropout_rate': 'output_dropout',
                     'attention_dropout_rate': 'attention_dropout', 'sequence_length': None}
_warned_legacy = set()


def _legacy_arguments(kwargs: Dict[str, Any]) -> Dict[str, Any]:
  """Pops Model Garden's legacy `BertEncoder` keywords from `kwargs`; returns them under today's
  names (`sequence_length`, which Model Garden ignores, is dropped). Each name is logged once.

  Example:
    >>> _legacy_arguments({'intermediate_size': 64, 'name': 'x'})   # kwargs keeps 'name'
    {'inner_dim': 64}
  """
  renamed = {}
  for old, new in _LEGACY_ARGUMENTS.items():
    if old not in kwargs:
      continue
    value = kwargs.pop(old)
    if old not in _warned_legacy:
      _warned_legacy.add(old)
      logging.warning('BertEncoder(%s=...): a legacy argument; %s', old,
                      f'use {new}=' if new else 'it has no effect (the position table holds '
                      'max_sequence_length positions)')
    if new:
      renamed[new] = value
  return renamed


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

  def _trackable_children(self, save_type='checkpoint', **kwargs):
    # Model Garden's BertEncoderV2 is a subclassed layer: its checkpoint keys are the attribute
    # names (`_transformer_layers/0/...`), not the functional model's `layer_with_weights-<i>`.
    return tf_keras.Model._trackable_children(self, save_type, **kwargs)  # pylint: disable=protected-access


def symbolic_inputs(dense_width: Optional[int] = None) -> Dict[str, tf_keras.Input]:
  """Fresh `tf_keras.Input`s int32 [batch, seq] named like the encoder's inputs.

  Args:
    dense_width: also `dense_inputs` float32 [batch, dense_seq, dense_width], `dense_mask` and
      `dense_type_ids` int32 [batch, dense_seq] (an encoder `with_dense_inputs`).

  Example:
    >>> sorted(symbolic_inputs())
    ['input_mask', 'input_type_ids', 'input_word_ids']
  """
  inputs = {name: tf_keras.Input(shape=(None,), dtype=tf.int32, name=name) for name in _INPUT_NAMES}
  if dense_width:
    inputs['dense_inputs'] = tf_keras.Input(shape=(None, dense_width), dtype=tf.float32,
                                            name='dense_inputs')
    for name in _DENSE_INPUT_NAMES[1:]:
      inputs[name] = tf_keras.Input(shape=(None,), dtype=tf.int32, name=name)
  return inputs


def _plain(value: Any) -> Any:
  """`value` with every mapping turned into a dict and every sequence into a list."""
  if isinstance(value, dict):  # Keras' `_DictWrapper` proxies a dict (not `typing.Mapping`)
    return {key: _plain(item) for key, item in value.items()}
  if isinstance(value, (list, tuple)):
    return [_plain(item) for item in value]
  return value
