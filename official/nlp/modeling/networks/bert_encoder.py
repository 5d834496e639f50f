"""`BertEncoder` (Model Garden's functional model) and `BertEncoderV2` (its subclassed twin).

Both are embeddings + a stack of transformer blocks + a pooler, built from the same sub-layers
(`_EncoderLayers`) and the same forward pass: `BertEncoder` runs it once on `tf_keras.Input`s and
is the functional model of the result (Model Garden's inputs, layers and weight order, so that
`get_weights()`, `layer_with_weights-<i>` checkpoint keys and walks of the layer graph match
Model Garden's); `BertEncoderV2` runs it in `call`, as Model Garden's subclassed layer does.
"""

import dataclasses
import logging
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

import tensorflow as tf
import tf_keras

from official.modeling import checkpoint_compat
from official.modeling import tf_utils
from official.nlp.modeling import layers
from official.nlp.modeling.layers import cast_to_float32
from official.nlp.modeling.networks import bert_encoder_config
from official.nlp.modeling.networks import encoder_family
from official.nlp.modeling.networks import modernbert_encoder

_INPUT_NAMES = ('input_word_ids', 'input_mask', 'input_type_ids')
# Extra inputs of an encoder `with_dense_inputs` (Model Garden's BertEncoderV2 option).
_DENSE_INPUT_NAMES = ('dense_inputs', 'dense_mask', 'dense_type_ids')
# Keys of a packed row's position ids in the input dict (an encoder with `packed_documents`): the
# data loaders' name (`use_position_id`), then ModernBertEncoder's.
_POSITION_ID_NAMES = ('position_ids', 'input_position_ids')
# The input key of the positions the last layer computes (`output_positions` of `forward`).
OUTPUT_POSITIONS = 'output_positions'
# Keys of encoder config dicts (`EncoderConfig`, `BertEncoderConfig`, BERT config.json) that
# `get_config()` never has: `from_config` builds from those through `bert_encoder_config`.
_ENCODER_CONFIG_KEYS = frozenset({
    'type', 'bert', 'intermediate_size', 'hidden_activation', 'dropout_rate',
    'attention_dropout_rate', 'max_position_embeddings', 'initializer_range', 'embedding_size',
    'num_hidden_layers', 'hidden_act', 'hidden_dropout_prob', 'attention_probs_dropout_prob'})

_ARGS_DOC = """
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
      layer's output (so that the pooler and heads see normalized states; Model Garden has no
      such layer).
    return_attention_scores: add every layer's attention probabilities [batch, heads, seq, seq]
      (float32): `attention_scores` in dict outputs, a third list output otherwise.
    return_word_embeddings: with dict outputs, add `word_embeddings` [batch, seq,
      embedding_width] (the looked-up rows, before position/type embeddings).
    with_dense_inputs: the inputs also hold `dense_inputs` [batch, dense_seq, embedding_width]
      (float), `dense_mask` and `dense_type_ids` [batch, dense_seq]: features appended after the
      word embeddings (the outputs cover seq + dense_seq positions). Dense features in the input
      dict are used either way; this adds them to `inputs` (and to the layer graph).
    packed_documents: the input dict may hold `position_ids` (or `input_position_ids`) int
      [batch, seq] of packed rows, restarting at 0 at each document (`create_pretraining_data
      --pack`, read with `use_position_id: true`): the position embeddings are looked up at them
      and each token attends only within its document (`document_ids_from_positions`, as
      `ModernBertEncoder`). Without them, positions are 0..seq-1 (one document a row). Off by
      default (Model Garden's encoder, which ignores position ids); no variable changes.
"""


class _EncoderLayers:
  """The sub-layers of a BERT encoder (Model Garden's names: variable names and checkpoint keys)
  and the forward pass over them, shared by `BertEncoder` (which runs it on symbolic inputs to
  make its layer graph) and `BertEncoderV2` (which runs it in `call`).

  The graph of `forward` is Model Garden's: word, position and type embeddings, `Add`, LayerNorm,
  dropout, the optional projection, the blocks called as `block([x, mask])`, the pooler on the
  first token. One difference: the blocks take the [batch, seq] padding mask itself rather than
  the [batch, seq, seq] one of a `SelfAttentionMask` layer (the same attention; the 3-D mask cost
  10% of a mixed_bfloat16 encoder step on CPU).
  """

  def __init__(self, config: Dict[str, Any], embedding_layer: Optional[tf_keras.layers.Layer],
               initializer: tf_keras.initializers.Initializer, inner_activation: Any):
    self.config = config
    clone = lambda: tf_utils.clone_initializer(initializer)
    width, hidden = config['embedding_width'], config['hidden_size']
    self.word_embeddings = embedding_layer or layers.OnDeviceEmbedding(
        config['vocab_size'], width, initializer=clone(), name='word_embeddings')
    self.position_embedding = layers.PositionEmbedding(
        config['max_sequence_length'], initializer=clone(), name='position_embedding')
    self.type_embeddings = layers.OnDeviceEmbedding(
        config['type_vocab_size'], width, initializer=clone(), use_one_hot=True,
        name='type_embeddings')
    self.add = tf_keras.layers.Add()
    self.norm = layers.FusedLayerNormalization(epsilon=1e-12, dtype=tf.float32,
                                               name='embeddings/layer_norm')
    self.dropout = layers.Dropout(config['output_dropout'], name='embedding_dropout')
    self.projection = None
    if width != hidden:
      self.projection = tf_keras.layers.Dense(hidden, kernel_initializer=clone(),
                                              name='embedding_projection')
    self.blocks = [
        layers.TransformerEncoderBlock(
            num_attention_heads=config['num_attention_heads'], inner_dim=config['inner_dim'],
            inner_activation=inner_activation, output_dropout=config['output_dropout'],
            attention_dropout=config['attention_dropout'], norm_first=config['norm_first'],
            return_attention_scores=config['return_attention_scores'],
            kernel_initializer=clone(), name=f'transformer/layer_{i}')
        for i in range(config['num_layers'])]
    self.final_norm = None
    if config['norm_first']:
      self.final_norm = layers.FusedLayerNormalization(epsilon=1e-12, dtype=tf.float32,
                                                       name='final_layer_norm')
    self.pooler = tf_keras.layers.Dense(hidden, activation='tanh', kernel_initializer=clone(),
                                        name='pooler_transform')
    self.document_ids = None
    if config['packed_documents']:
      self.document_ids = tf_keras.layers.Lambda(modernbert_encoder.document_ids_from_positions,
                                                 name='document_ids')
    self.to_float32 = None
    if cast_to_float32.mixed_policy():
      self.to_float32 = layers.CastToFloat32(name='float32_outputs')

  def forward(self, word_ids, mask, type_ids, word_embeddings=None, dense=None,
              position_ids=None, training=None, output_positions=None) -> Dict[str, Any]:
    """Every output of the encoder, as a dict.

    Args:
      word_ids, mask, type_ids: int [batch, seq] (`word_ids` unused when `word_embeddings`).
      word_embeddings: [batch, seq, embedding_width] to use instead of looking `word_ids` up.
      dense: (dense_inputs, dense_mask, dense_type_ids) appended after the words, or None.
      position_ids: int [batch, seq] of packed rows, or None (0..seq - 1, one document a row).
      training: the dropout mode (None: Keras' call context).
      output_positions: int [batch, k] or None: the last layer computes these positions only (its
        queries; every position is a key), so `sequence_output` and the last `encoder_outputs`
        are [batch, k, hidden] and `pooled_output` comes from the first of them (give the [CLS]
        position, 0, first). A pretraining loss reads [CLS] and the masked positions only: the
        last layer's work on the others is saved, and their outputs are the full run's.

    Returns:
      `sequence_output`, `pooled_output`, `encoder_outputs`, `word_embeddings`, and
      `attention_scores` when the blocks return them.
    """
    config = self.config
    if word_embeddings is None:
      word_embeddings = self.word_embeddings(word_ids)
    else:
      word_embeddings = tf.cast(word_embeddings, self.word_embeddings.compute_dtype)
    if dense is not None:
      dense_inputs, dense_mask, dense_type_ids = dense
      word_embeddings = tf.concat(
          [word_embeddings, tf.cast(dense_inputs, word_embeddings.dtype)], axis=1)
      mask = tf.concat([mask, tf.cast(dense_mask, mask.dtype)], axis=1)
      type_ids = tf.concat([type_ids, tf.cast(dense_type_ids, type_ids.dtype)], axis=1)
    document_ids = None
    if position_ids is None:
      # The position rows [1, seq, width] broadcast in the add (not materialized per batch).
      positions = self.position_embedding(word_embeddings, broadcast=False)
    else:  # packed rows: each document's positions from 0, attention within the document
      positions = self.position_embedding(word_embeddings, position_ids=position_ids)
      document_ids = self.document_ids(position_ids)
    embeddings = self.add([word_embeddings, positions, self.type_embeddings(type_ids)])
    # The LayerNorm computes in float32; the dropout casts back to the compute dtype.
    x = self.dropout(self.norm(embeddings), training=training)
    if self.projection is not None:
      x = self.projection(x)
    encoder_outputs, attention_scores = [], []
    last = len(self.blocks) - 1
    if output_positions is not None and config['output_range']:
      raise ValueError(f'output_positions and output_range={config["output_range"]} cannot be '
                       'combined; expected one of them')
    for i, block in enumerate(self.blocks):
      kwargs = {'training': training}
      if i == last and config['output_range']:
        kwargs['output_range'] = config['output_range']
      if i == last and output_positions is not None:
        kwargs['query_positions'] = output_positions
      if document_ids is not None:
        kwargs['document_ids'] = document_ids
      x = block([x, mask], **kwargs)
      if config['return_attention_scores']:
        x, scores = x
        attention_scores.append(scores)
      encoder_outputs.append(x)
    if self.final_norm is not None:
      x = self.final_norm(x)
      encoder_outputs[-1] = x
    pooled = self.pooler(x[:, 0, :])
    if self.to_float32 is not None:
      encoder_outputs = self.to_float32(encoder_outputs)
    outputs = {'sequence_output': encoder_outputs[-1], 'pooled_output': pooled,
               'encoder_outputs': list(encoder_outputs), 'word_embeddings': word_embeddings}
    if config['return_attention_scores']:
      outputs['attention_scores'] = attention_scores
    return outputs

  def format_outputs(self, outputs: Dict[str, Any], dict_outputs: bool):
    """`forward`'s outputs in the encoder's format (Model Garden's dict or list outputs)."""
    config = self.config
    if dict_outputs:
      formatted = {key: outputs[key] for key in
                   ('sequence_output', 'pooled_output', 'encoder_outputs')}
      if config['return_attention_scores']:
        formatted['attention_scores'] = outputs['attention_scores']
      if config['return_word_embeddings']:
        formatted['word_embeddings'] = outputs['word_embeddings']
      return formatted
    first = (outputs['encoder_outputs'] if config['return_all_encoder_outputs']
             else outputs['sequence_output'])
    formatted = [first, outputs['pooled_output']]
    if config['return_attention_scores']:
      formatted.append(outputs['attention_scores'])
    return formatted


def _make_config(vocab_size: int, hidden_size: int, num_layers: int, num_attention_heads: int,
                 max_sequence_length: int, type_vocab_size: int, inner_dim: int,
                 inner_activation: Any, output_dropout: float, attention_dropout: float,
                 initializer: Any, output_range: Optional[int], embedding_width: Optional[int],
                 norm_first: bool, dict_outputs: bool, return_all_encoder_outputs: bool,
                 return_attention_scores: bool, return_word_embeddings: bool,
                 with_dense_inputs: bool, packed_documents: bool, cls_name: str):
  """(config dict of `get_config`, initializer) after checking the arguments."""
  if not 0 < num_attention_heads <= hidden_size:
    # Model Garden allows a hidden size that heads do not divide: each head is
    # hidden_size // num_attention_heads wide and the attention output projects back.
    raise ValueError(f'{cls_name} num_attention_heads must be between 1 and hidden_size '
                     f'{hidden_size}, found {num_attention_heads}')
  if packed_documents and with_dense_inputs:
    raise ValueError(f'{cls_name} packed_documents and with_dense_inputs cannot be combined '
                     '(position ids cover the word positions only); found both True')
  if initializer is None:
    initializer = tf_keras.initializers.TruncatedNormal(stddev=0.02)
  initializer = tf_keras.initializers.get(initializer)
  config = dict(
      vocab_size=vocab_size, hidden_size=hidden_size, num_layers=num_layers,
      num_attention_heads=num_attention_heads, max_sequence_length=max_sequence_length,
      type_vocab_size=type_vocab_size, inner_dim=inner_dim,
      inner_activation=tf_utils.serialize_activation(inner_activation),
      output_dropout=output_dropout, attention_dropout=attention_dropout,
      initializer=tf_keras.initializers.serialize(initializer), output_range=output_range,
      embedding_width=embedding_width or hidden_size, norm_first=norm_first,
      dict_outputs=dict_outputs, return_all_encoder_outputs=return_all_encoder_outputs,
      return_attention_scores=return_attention_scores,
      return_word_embeddings=return_word_embeddings, with_dense_inputs=with_dense_inputs,
      packed_documents=packed_documents)
  return config, initializer


class _EncoderAccessors(encoder_family.EmbeddingAccessors):
  """Model Garden's accessors of an encoder's sub-layers, shared by `BertEncoder` and
  `BertEncoderV2` (both hold `_embedding_layer`, `_transformer_layers`, `_pooler_layer`)."""

  # The encoder takes `output_positions` in its input dict (`BertPretrainerV2` reads this).
  supports_output_positions = True

  @property
  def transformer_layers(self) -> List[layers.TransformerEncoderBlock]:
    """The blocks, first to last."""
    return self._transformer_layers

  @property
  def pooler_layer(self) -> tf_keras.layers.Layer:
    """The pooler's dense layer (`pooler_transform`)."""
    return self._pooler_layer


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class BertEncoder(_EncoderAccessors, tf_keras.Model):
  """The BERT encoder, a functional Keras model (Model Garden's).

  Embeddings = word + position + type (one-hot matmul), then LayerNorm and dropout, then an
  optional `embedding_projection` when `embedding_width != hidden_size`; then `num_layers`
  transformer blocks; the pooler is a tanh dense layer on the first token. Sub-layer names
  (variable names): `word_embeddings`, `position_embedding`, `type_embeddings`,
  `embeddings/layer_norm`, `embedding_projection`, `transformer/layer_%d`, `final_layer_norm`
  (pre-LN only), `pooler_transform`; held as Model Garden's attributes `_embedding_layer`,
  `_position_embedding_layer`, `_type_embedding_layer`, `_embedding_norm_layer`,
  `_embedding_projection`, `_transformer_layers`, `_pooler_layer`.

  As Model Garden's, the encoder is the functional model of its layer graph: `inputs` is the list
  of `input_word_ids`, `input_mask`, `input_type_ids` (`tf_keras.Input` int32 [batch, None]),
  `outputs` the graph's outputs, `layers` the layers in graph order, `get_weights()` lists the
  weights in that order and object checkpoints name each layer with weights
  `layer_with_weights-<i>` (the attribute names above restore too). The variables exist once
  constructed. The blocks run our fused kernels (`TransformerEncoderBlock`).

  Calls whose inputs are not the graph's (`input_word_embeddings` instead of ids, dense features
  without `with_dense_inputs`, the position ids of packed rows) run the same layers in the same
  order one by one.

  Mixed precision: matmuls run in the policy's compute dtype; LayerNorms and the attention softmax
  in float32; variables stay float32. XLA: every shape is static given the input shapes.
  """ + _ARGS_DOC + """    dict_outputs: return a dict (else `[sequence_output, pooled_output]`).
    return_all_encoder_outputs: with list outputs, return every layer's output first.

  Call args:
    inputs: a dict with `input_word_ids`, `input_mask`, `input_type_ids` (int [batch, seq]; other
      keys are ignored) or a list of the three. `input_word_embeddings` [batch, seq,
      embedding_width] may replace `input_word_ids` (the lookup is skipped). `output_positions`
      (int [batch, k], mlm-garden addition): the last layer computes these positions only, and the
      sequence outputs are theirs (`_EncoderLayers.forward`).

  Returns:
    With `dict_outputs`: `sequence_output` [batch, seq, hidden] (or [batch, output_range, hidden]),
    `pooled_output` [batch, hidden], `encoder_outputs` (list of every layer's output), and the
    optional `attention_scores`, `word_embeddings`. Otherwise `[sequence_output, pooled_output]`,
    or `[encoder_outputs, pooled_output]` with `return_all_encoder_outputs`, plus the list of
    attention scores third with `return_attention_scores`. As in Model Garden, whose blocks end in
    a float32 LayerNorm, the sequence outputs (`sequence_output`, `encoder_outputs`) are float32
    under a mixed policy and `pooled_output` is in the compute dtype (e.g. float16 under
    `mixed_float16`).

  Example:
    >>> encoder = BertEncoder(vocab_size=100, hidden_size=16, num_layers=2, num_attention_heads=2,
    ...                       inner_dim=32, dict_outputs=True)
    >>> ids = tf.ones([2, 8], tf.int32)
    >>> outputs = encoder(dict(input_word_ids=ids, input_mask=ids, input_type_ids=0 * ids))
    >>> outputs['pooled_output'].shape
    TensorShape([2, 16])
    >>> [x.name for x in encoder.inputs]
    ['input_word_ids', 'input_mask', 'input_type_ids']
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
    inner_activation = legacy.get('inner_activation', inner_activation)
    config, initializer = _make_config(
        vocab_size, hidden_size, num_layers, num_attention_heads, max_sequence_length,
        type_vocab_size, legacy.get('inner_dim', inner_dim), inner_activation,
        legacy.get('output_dropout', output_dropout),
        legacy.get('attention_dropout', attention_dropout), initializer, output_range,
        embedding_width, norm_first, dict_outputs, return_all_encoder_outputs,
        return_attention_scores, return_word_embeddings, with_dense_inputs, packed_documents,
        type(self).__name__)
    parts = _EncoderLayers(config, embedding_layer, initializer, inner_activation)
    inputs = [tf_keras.Input(shape=(None,), dtype=tf.int32, name=name) for name in _INPUT_NAMES]
    dense = None
    if with_dense_inputs:
      dense = [tf_keras.Input(shape=(None, config['embedding_width']), dtype=tf.float32,
                              name=_DENSE_INPUT_NAMES[0])]
      dense += [tf_keras.Input(shape=(None,), dtype=tf.int32, name=name)
                for name in _DENSE_INPUT_NAMES[1:]]
    outputs = parts.format_outputs(parts.forward(*inputs, dense=dense), dict_outputs)
    super().__init__(inputs=inputs + (dense or []), outputs=outputs, **kwargs)
    # Inputs are checked and mapped to the graph's by `_graph_inputs` (Keras' own check would
    # refuse our other input forms before `call`).
    self.input_spec = None
    # Model Garden's attributes (checkpoint keys of older checkpoints and of BertEncoderV2's).
    self._pooler_layer = parts.pooler
    self._transformer_layers = parts.blocks
    self._embedding_norm_layer = parts.norm
    self._embedding_layer = parts.word_embeddings
    self._position_embedding_layer = parts.position_embedding
    self._type_embedding_layer = parts.type_embeddings
    if parts.projection is not None:
      self._embedding_projection = parts.projection
    self._embedding_dropout = parts.dropout
    self._final_layer_norm = parts.final_norm
    # Untracked: no checkpoint entries.
    object.__setattr__(self, '_parts', parts)
    object.__setattr__(self, '_encoder_config', config)

  def call(self, inputs, training=None, mask=None):  # pylint: disable=arguments-differ
    graph_inputs = self._graph_inputs(inputs)
    if graph_inputs is not None:
      return super().call(graph_inputs, training=training, mask=mask)
    # Inputs the graph does not take: the same layers, one by one.
    word_ids, input_mask, type_ids, word_embeddings = _unpack(inputs)
    outputs = self._parts.forward(
        word_ids, input_mask, type_ids, word_embeddings=word_embeddings,
        dense=_dense_inputs(inputs), position_ids=self._position_ids(inputs), training=training,
        output_positions=_output_positions(inputs))
    return self._parts.format_outputs(outputs, self._encoder_config['dict_outputs'])

  def _graph_inputs(self, inputs) -> Optional[List[Any]]:
    """The inputs as the graph's list, or None when the call needs the layer-by-layer path."""
    config = self._encoder_config
    names = list(_INPUT_NAMES) + (list(_DENSE_INPUT_NAMES) if config['with_dense_inputs'] else [])
    if isinstance(inputs, Mapping):
      _unpack(inputs)  # names what is missing
      special = ('input_word_embeddings' in inputs or self._position_ids(inputs) is not None
                 or inputs.get(OUTPUT_POSITIONS) is not None
                 or (_dense_inputs(inputs) is not None) != config['with_dense_inputs'])
      if special:
        return None
      return [inputs[name] for name in names]
    if not isinstance(inputs, (list, tuple)) or len(inputs) != len(names):
      raise ValueError(f'{self.name} inputs must be a dict with {names} or a list of those '
                       f'{len(names)} tensors, found {inputs!r}')
    return list(inputs)

  def _position_ids(self, inputs) -> Optional[tf.Tensor]:
    """int32 [batch, seq] position ids of packed rows, or None (positions 0..seq-1)."""
    return _position_ids(inputs, self._encoder_config['packed_documents'])

  def _trackable_children(self, save_type='checkpoint', **kwargs):
    children = super()._trackable_children(save_type, **kwargs)
    if save_type != 'checkpoint':
      return children
    weighted = None
    final_norm = getattr(self, '_final_layer_norm', None)
    if final_norm is not None:
      # Pre-LN: the graph puts `final_layer_norm` before the pooler; its checkpoint index stays
      # after the pooler's, where it has always been (the pooler keeps Model Garden's index).
      weighted = [layer for layer in self.layers if layer.weights and layer is not final_norm]
      weighted.append(final_norm)
    return checkpoint_compat.functional_checkpoint_children(children, weighted)

  def get_config(self) -> Dict[str, Any]:
    return _plain(dict(self._encoder_config, name=self.name))

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


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class BertEncoderV2(_EncoderAccessors, tf_keras.Model):
  """Model Garden's `BertEncoderV2`: the BERT encoder as a subclassed model with dict outputs.

  The layers and computation of `BertEncoder` (`_EncoderLayers`), run in `call` rather than as a
  layer graph, as Model Garden's `BertEncoderV2` (a subclassed layer) does: object checkpoints
  name the sub-layers by attribute (`_embedding_layer`, `_transformer_layers/<i>`,
  `_pooler_layer`, ...), `inputs` is a dict. The variables exist once constructed, named as in
  `BertEncoder` (`word_embeddings/embeddings:0`, ...).
  """ + _ARGS_DOC + """
  `dict_outputs` and `return_all_encoder_outputs` are accepted and ignored (the outputs are always
  the dict, which always holds `encoder_outputs`).

  Call args:
    inputs: a dict with `input_word_ids` (or `input_word_embeddings`), `input_mask`,
      `input_type_ids` (int [batch, seq]), optionally the dense features, packed position ids and
      `output_positions` (as `BertEncoder`'s); other keys are ignored. A list of the three works
      too.

  Returns:
    A dict: `sequence_output`, `pooled_output`, `encoder_outputs`, and the optional
    `attention_scores`, `word_embeddings` (as `BertEncoder`'s dict outputs).

  Attributes:
    inputs: a dict of `tf_keras.Input(shape=(None,), dtype=tf.int32)` named `input_word_ids`,
      `input_mask`, `input_type_ids` (and the dense ones `with_dense_inputs`), so that
      `tf_keras.Model(encoder.inputs, encoder(encoder.inputs))` makes a functional model.

  Example:
    >>> encoder = BertEncoderV2(vocab_size=100, hidden_size=16, num_layers=1, num_attention_heads=2,
    ...                         inner_dim=32)
    >>> sorted(encoder.inputs)
    ['input_mask', 'input_type_ids', 'input_word_ids']
  """

  def __init__(self, vocab_size: int, hidden_size: int = 768, num_layers: int = 12,
               num_attention_heads: int = 12, max_sequence_length: int = 512,
               type_vocab_size: int = 16, inner_dim: int = 3072, inner_activation: Any = 'gelu',
               output_dropout: float = 0.1, attention_dropout: float = 0.1,
               initializer: Any = None, output_range: Optional[int] = None,
               embedding_width: Optional[int] = None,
               embedding_layer: Optional[tf_keras.layers.Layer] = None, norm_first: bool = False,
               return_attention_scores: bool = False, return_word_embeddings: bool = False,
               with_dense_inputs: bool = False, packed_documents: bool = False, **kwargs):
    kwargs.pop('dict_outputs', None)
    kwargs.pop('return_all_encoder_outputs', None)
    legacy = _legacy_arguments(kwargs)
    super().__init__(**kwargs)
    inner_activation = legacy.get('inner_activation', inner_activation)
    config, initializer = _make_config(
        vocab_size, hidden_size, num_layers, num_attention_heads, max_sequence_length,
        type_vocab_size, legacy.get('inner_dim', inner_dim), inner_activation,
        legacy.get('output_dropout', output_dropout),
        legacy.get('attention_dropout', attention_dropout), initializer, output_range,
        embedding_width, norm_first, True, False, return_attention_scores,
        return_word_embeddings, with_dense_inputs, packed_documents, type(self).__name__)
    parts = _EncoderLayers(config, embedding_layer, initializer, inner_activation)
    self._config = config
    self._embedding_layer = parts.word_embeddings
    self._position_embedding_layer = parts.position_embedding
    self._type_embedding_layer = parts.type_embeddings
    self._embedding_norm_layer = parts.norm
    self._embedding_dropout = parts.dropout
    if parts.projection is not None:
      self._embedding_projection = parts.projection
    self._transformer_layers = parts.blocks
    self._final_layer_norm = parts.final_norm
    self._pooler_layer = parts.pooler
    # Untracked (no checkpoint entries): the weightless helpers live in `_parts`.
    object.__setattr__(self, '_parts', parts)
    object.__setattr__(self, 'inputs', symbolic_inputs(
        config['embedding_width'] if with_dense_inputs else None))
    self._set_save_spec(self.inputs)
    # Model Garden's encoder has its variables once constructed, so that a checkpoint restores
    # (and checks shapes) at once rather than deferred to the first call.
    self.build()

  def call(self, inputs, training=None):
    word_ids, mask, type_ids, word_embeddings = _unpack(inputs)
    outputs = self._parts.forward(
        word_ids, mask, type_ids, word_embeddings=word_embeddings, dense=_dense_inputs(inputs),
        position_ids=_position_ids(inputs, self._config['packed_documents']), training=training,
        output_positions=_output_positions(inputs))
    return self._parts.format_outputs(outputs, dict_outputs=True)

  def build(self, input_shape=None):
    """Creates every variable (the constructor does; Keras' `build(shapes)` then does nothing).

    Runs the layers once on a [1, 2] batch of zeros outside the encoder's name scope, so that the
    variables are named as Model Garden's encoders name them (`word_embeddings/embeddings:0`,
    `transformer/layer_0/...`).
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
    """Builds an encoder from `get_config()`'s dict or an encoder config dict (as `BertEncoder`)."""
    if _ENCODER_CONFIG_KEYS & set(config):
      return cls(**bert_encoder_config.encoder_kwargs(
          bert_encoder_config.bert_config_from_dict(config)))
    return cls(**config)


def _unpack(inputs: Union[Mapping[str, tf.Tensor], Sequence[tf.Tensor]]):
  """(word ids or None, mask, type ids, word embeddings or None) of a call's inputs."""
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


def _dense_inputs(inputs) -> Optional[Sequence[tf.Tensor]]:
  """(dense_inputs, dense_mask, dense_type_ids) when the input dict has `dense_inputs`, else None.

  As in Model Garden's BertEncoderV2, dense features given in the dict are used whether or not the
  encoder was built `with_dense_inputs` (which only adds them to `inputs` and to the build).
  """
  if not isinstance(inputs, Mapping) or 'dense_inputs' not in inputs:
    return None
  missing = [name for name in _DENSE_INPUT_NAMES if name not in inputs]
  if missing:
    raise ValueError(f'BertEncoder inputs have dense_inputs but lack {missing}; expected '
                     f'{list(_DENSE_INPUT_NAMES)} together')
  return [inputs[name] for name in _DENSE_INPUT_NAMES]


def _output_positions(inputs) -> Optional[tf.Tensor]:
  """int32 [batch, k] positions the last layer computes (`OUTPUT_POSITIONS`), or None."""
  if not isinstance(inputs, Mapping) or inputs.get(OUTPUT_POSITIONS) is None:
    return None
  return tf.cast(inputs[OUTPUT_POSITIONS], tf.int32)


def _position_ids(inputs, packed_documents: bool) -> Optional[tf.Tensor]:
  """int32 [batch, seq] position ids of packed rows in the input dict, or None."""
  if not packed_documents or not isinstance(inputs, Mapping):
    return None
  for name in _POSITION_ID_NAMES:
    if inputs.get(name) is not None:
      if _dense_inputs(inputs) is not None:
        raise ValueError(f'BertEncoder packed_documents: {name} with dense_inputs is not '
                         'supported; expected one or the other')
      return tf.cast(inputs[name], tf.int32)
  return None


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


# ---- the `bert` and `bert_v2` encoder families ------------------------------------------------
def _build_bert(config: bert_encoder_config.BertEncoderConfig,
                embedding_layer: Optional[tf_keras.layers.Layer] = None) -> BertEncoder:
  return BertEncoder(embedding_layer=embedding_layer,
                     **bert_encoder_config.encoder_kwargs(config))


def _build_bert_v2(config: bert_encoder_config.BertEncoderConfig,
                   embedding_layer: Optional[tf_keras.layers.Layer] = None) -> BertEncoderV2:
  return BertEncoderV2(embedding_layer=embedding_layer,
                       **bert_encoder_config.encoder_kwargs(config))


_HF = encoder_family.CheckpointFormat(
    read='official.nlp.tools.hf_bert:load', write='official.nlp.tools.hf_bert:export',
    config='official.nlp.tools.hf_bert_config:hf_config')
_GOOGLE = encoder_family.CheckpointFormat(read='official.nlp.tools.google_bert:load',
                                          write='official.nlp.tools.google_bert:export')
BERT_FAMILY = encoder_family.register_encoder_family(encoder_family.EncoderFamily(
    name='bert', config_cls=bert_encoder_config.BertEncoderConfig, build=_build_bert,
    encoder_classes=(BertEncoder,), takes_embedding_layer=True,
    config_of=bert_encoder_config.encoder_config_of,
    count_flops='official.nlp.tools.model_flops:bert_flops', hf=_HF, google=_GOOGLE,
    weight_map='official.nlp.tools.bert_weight_map:export_entries'))
# The same checkpoints, which read back as `bert` (a `BertEncoder`).
BERT_V2_FAMILY = encoder_family.register_encoder_family(dataclasses.replace(
    BERT_FAMILY, name='bert_v2', build=_build_bert_v2, encoder_classes=(BertEncoderV2,),
    hf=dataclasses.replace(_HF, read=None), google=dataclasses.replace(_GOOGLE, read=None)))
