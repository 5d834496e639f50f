"""`EncoderScaffold`: a BERT-style encoder with a pluggable embedding network and hidden layers."""

import inspect
from typing import Any, Dict, List, Optional

import tensorflow as tf
import tf_keras

from official.modeling import tf_utils
from official.nlp.modeling import layers
from official.nlp.modeling.layers import cast_to_float32
from official.nlp.modeling.layers import transformer_scaffold

# What the default embedding network needs from `embedding_cfg`.
_EMBEDDING_KEYS = ('vocab_size', 'type_vocab_size', 'hidden_size', 'max_seq_length', 'initializer',
                   'dropout_rate')


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class EncoderScaffold(tf_keras.Model):
  """Embeddings -> `num_hidden_instances` hidden layers -> a tanh pooler on the first token.

  A functional Keras model, built (variables included) by the constructor. Each injection point
  takes a class (instantiated with its `*_cfg`), an instance (called as is; a hidden-layer
  instance is called `num_hidden_instances` times, sharing its weights), or, from a saved config,
  a registered class name or a serialized layer.

  The default embedding network (from `embedding_cfg`) is BERT's: inputs `input_word_ids`,
  `input_mask`, `input_type_ids` (int32 [batch, seq_length]); word (`word_embeddings`) +
  position (`position_embedding`) + type (`type_embeddings`, one-hot) embeddings, LayerNorm
  (`embeddings/layer_norm`, float32, epsilon 1e-12), dropout; the attention mask comes from
  `mask_cls` called as `mask_layer(embeddings, input_mask)`. A custom `embedding_cls` must have
  `inputs` and return `(embeddings [batch, seq, hidden], attention_mask)`. Each hidden layer is
  called as `layer([x, attention_mask])` (with `recursive`: `layer([x, attention_mask, state])`
  returning `(x, state)`, the first state None).

  Args:
    pooled_output_dim: width of the pooler (`cls_transform`, tanh).
    pooler_layer_initializer: its kernel initializer (default TruncatedNormal(stddev=0.02)).
    embedding_cls: the embedding network (class or instance); None for the default one.
    embedding_cfg: the custom class's arguments, or for the default network a dict with
      `vocab_size`, `type_vocab_size`, `hidden_size`, `max_seq_length`, `initializer`,
      `dropout_rate` and optionally `seq_length` (the static input length).
    embedding_data: with a custom embedding network, the word-embedding table to hand out from
      `get_embedding_table` (not part of the config).
    num_hidden_instances: hidden layers.
    hidden_cls: a class, an instance, or a list of `num_hidden_instances` of either (default
      `layers.Transformer`).
    hidden_cfg: arguments of the hidden class (for `Transformer`: `num_attention_heads`,
      `intermediate_size`, `intermediate_activation`, `dropout_rate`, `attention_dropout_rate`,
      `kernel_initializer`).
    mask_cls: the attention-mask layer of the default embedding network (class or instance;
      default `layers.SelfAttentionMask`).
    mask_cfg: its arguments.
    layer_norm_before_pooling: a LayerNorm (`final_layer_norm`, float32) on the last layer's
      output (for pre-LN hidden layers).
    return_all_layer_outputs: list outputs hold every hidden layer's output.
    dict_outputs: return a dict.
    layer_idx_as_attention_seed: pass `seed=i` in `hidden_cfg['attention_cfg']` to layer i.
    feed_layer_idx: pass `layer_idx=i` to hidden layer i.
    recursive: thread a state through the hidden layers (see above).
    **kwargs: Keras' model arguments (`name`).

  Returns (calling the model on its inputs):
    `[sequence_output, pooled_output]`, `[list of every layer's output, pooled_output]` with
    `return_all_layer_outputs`, or with `dict_outputs` a dict of `sequence_output` [batch, seq,
    hidden], `pooled_output` [batch, pooled_output_dim], `encoder_outputs`. As in `BertEncoder`,
    the sequence outputs are float32 under a mixed policy and the pooled output is in the compute
    dtype.

  Example:
    >>> encoder = EncoderScaffold(
    ...     pooled_output_dim=16,
    ...     embedding_cfg=dict(vocab_size=100, type_vocab_size=2, hidden_size=16,
    ...                        max_seq_length=32, initializer='glorot_uniform', dropout_rate=0.1),
    ...     num_hidden_instances=2,
    ...     hidden_cfg=dict(num_attention_heads=2, intermediate_size=32,
    ...                     intermediate_activation='gelu'))
    >>> ids = tf.ones([3, 10], tf.int32)
    >>> sequence, pooled = encoder([ids, ids, ids * 0])
    >>> sequence.shape, pooled.shape
    (TensorShape([3, 10, 16]), TensorShape([3, 16]))
  """

  def __init__(self, pooled_output_dim: int, pooler_layer_initializer: Any = None,
               embedding_cls: Any = None, embedding_cfg: Optional[Dict[str, Any]] = None,
               embedding_data: Optional[tf.Variable] = None, num_hidden_instances: int = 1,
               hidden_cls: Any = layers.Transformer, hidden_cfg: Optional[Dict[str, Any]] = None,
               mask_cls: Any = layers.SelfAttentionMask, mask_cfg: Optional[Dict[str, Any]] = None,
               layer_norm_before_pooling: bool = False, return_all_layer_outputs: bool = False,
               dict_outputs: bool = False, layer_idx_as_attention_seed: bool = False,
               feed_layer_idx: bool = False, recursive: bool = False, **kwargs):
    if pooler_layer_initializer is None:
      pooler_layer_initializer = tf_keras.initializers.TruncatedNormal(stddev=0.02)
    pooler_layer_initializer = tf_keras.initializers.get(pooler_layer_initializer)
    embedding_cls = transformer_scaffold.class_from_config(embedding_cls)
    mask_cls = transformer_scaffold.class_from_config(mask_cls)
    if isinstance(hidden_cls, (list, tuple)):
      hidden_cls = [transformer_scaffold.class_from_config(item) for item in hidden_cls]
      if len(hidden_cls) != num_hidden_instances:
        raise ValueError(f'EncoderScaffold: hidden_cls lists {len(hidden_cls)} classes or layers, '
                         f'num_hidden_instances is {num_hidden_instances}')
    else:
      hidden_cls = transformer_scaffold.class_from_config(hidden_cls)

    embedding = _Embeddings(embedding_cls, embedding_cfg, mask_cls, mask_cfg)
    hidden_cfg = dict(hidden_cfg or {})
    x, hidden_layers, encoder_outputs, state = embedding.outputs, [], [], None
    for i in range(num_hidden_instances):
      cls_or_layer = hidden_cls[i] if isinstance(hidden_cls, list) else hidden_cls
      layer = cls_or_layer
      if inspect.isclass(cls_or_layer):
        config = dict(hidden_cfg)
        if layer_idx_as_attention_seed and 'attention_cfg' in config:
          config['attention_cfg'] = dict(config['attention_cfg'], seed=i)
        if feed_layer_idx:
          config['layer_idx'] = i
        layer = cls_or_layer(**config)
      if recursive:
        x, state = layer([x, embedding.attention_mask, state])
      else:
        x = layer([x, embedding.attention_mask])
      encoder_outputs.append(x)
      hidden_layers.append(layer)
    output_layer_norm = None
    if layer_norm_before_pooling:
      output_layer_norm = tf_keras.layers.LayerNormalization(epsilon=1e-12, dtype=tf.float32,
                                                             name='final_layer_norm')
      encoder_outputs[-1] = output_layer_norm(encoder_outputs[-1])
    pooler_layer = tf_keras.layers.Dense(pooled_output_dim, activation='tanh',
                                         kernel_initializer=pooler_layer_initializer,
                                         name='cls_transform')
    pooled = pooler_layer(encoder_outputs[-1][:, 0, :])
    if cast_to_float32.mixed_policy():
      # Sequence outputs in float32 under mixed precision, as BertEncoder's.
      encoder_outputs = list(layers.CastToFloat32(name='float32_outputs')(encoder_outputs))
    if dict_outputs:
      outputs = dict(sequence_output=encoder_outputs[-1], pooled_output=pooled,
                     encoder_outputs=encoder_outputs)
    elif return_all_layer_outputs:
      outputs = [encoder_outputs, pooled]
    else:
      outputs = [encoder_outputs[-1], pooled]
    super().__init__(inputs=embedding.inputs, outputs=outputs, **kwargs)

    # Attributes are set after the functional constructor (Keras requires it); the names are
    # Model Garden's (object-checkpoint keys). The argument dicts are kept as given (not wrapped
    # by Keras' attribute tracking).
    config = dict(
        num_hidden_instances=num_hidden_instances, pooled_output_dim=pooled_output_dim,
        pooler_layer_initializer=tf_keras.initializers.serialize(pooler_layer_initializer),
        embedding_cfg=embedding_cfg, layer_norm_before_pooling=layer_norm_before_pooling,
        return_all_layer_outputs=return_all_layer_outputs, dict_outputs=dict_outputs,
        layer_idx_as_attention_seed=layer_idx_as_attention_seed, feed_layer_idx=feed_layer_idx,
        recursive=recursive)
    for name, value in (('_config', config), ('_hidden_cfg', hidden_cfg),
                        ('_mask_cfg', mask_cfg), ('_kwargs', kwargs)):
      object.__setattr__(self, name, value)
    self._hidden_cls = hidden_cls
    self._mask_cls = mask_cls
    self._embedding_data = embedding_data
    self._embedding_network = embedding.network
    self._embedding_layer = embedding.word_embeddings
    self._position_embedding_layer = embedding.position_embedding
    self._type_embedding_layer = embedding.type_embeddings
    self._embedding_norm_layer = embedding.norm
    self._hidden_layers = hidden_layers
    self._output_layer_norm = output_layer_norm
    self._pooler_layer = pooler_layer

  def get_config(self) -> Dict[str, Any]:
    """Model Garden's config: registered classes by name (`hidden_cls_string`,
    `mask_cls_string`, and in the cfg dicts), instances (and a custom embedding network) and
    unregistered classes as they are."""
    config = dict(self._config, embedding_cls=self._embedding_network)
    for name in ('hidden_cfg', 'mask_cfg'):
      cfg = getattr(self, '_' + name)
      if cfg:
        config[name] = {key: transformer_scaffold.class_to_config(value)
                        if inspect.isclass(value) else value for key, value in cfg.items()}
    for name in ('hidden_cls', 'mask_cls'):
      value = getattr(self, '_' + name)
      if inspect.isclass(value) and isinstance(transformer_scaffold.class_to_config(value), str):
        config[f'{name}_string'] = transformer_scaffold.class_to_config(value)
      else:
        config[name] = value
    config.update(self._kwargs)
    return config

  @classmethod
  def from_config(cls, config: Dict[str, Any], custom_objects=None):
    config = dict(config)
    for name in ('hidden_cls', 'mask_cls'):
      key = f'{name}_string'
      if key in config:
        config[name] = transformer_scaffold.class_from_config(config.pop(key), custom_objects)
    return cls(**config)

  def get_embedding_table(self) -> tf.Variable:
    """The word-embedding table (the default network's, or `embedding_data`).

    Raises:
      RuntimeError: a custom embedding network without `embedding_data` (as after a config
        round trip, which does not carry it).
    """
    if self._embedding_network is None:
      return self._embedding_layer.embeddings
    if self._embedding_data is None:
      raise RuntimeError(f'EncoderScaffold {self.name} does not have a reference to the '
                         'embedding data: pass embedding_data= with a custom embedding network '
                         '(a config round trip does not keep it)')
    return self._embedding_data

  @property
  def embedding_network(self) -> tf_keras.Model:
    """The custom embedding network (RuntimeError with the default embeddings)."""
    if self._embedding_network is None:
      raise RuntimeError(f'EncoderScaffold {self.name} uses the default embeddings; it has no '
                         'embedding network (pass embedding_cls= for one)')
    return self._embedding_network

  @property
  def hidden_layers(self) -> List[tf_keras.layers.Layer]:
    """The hidden layers, in order."""
    return self._hidden_layers

  @property
  def pooler_layer(self) -> tf_keras.layers.Layer:
    """The pooler's dense layer."""
    return self._pooler_layer


class _Embeddings:
  """The embedding part of the graph: inputs, embeddings, attention mask, and its layers."""

  def __init__(self, embedding_cls, embedding_cfg, mask_cls, mask_cfg):
    self.network = self.word_embeddings = self.position_embedding = None
    self.type_embeddings = self.norm = None
    if embedding_cls is not None:
      self.network = embedding_cls
      if inspect.isclass(embedding_cls):
        self.network = embedding_cls(**(embedding_cfg or {}))
      self.inputs = self.network.inputs
      self.outputs, self.attention_mask = self.network(self.inputs)
      return
    missing = [key for key in _EMBEDDING_KEYS if key not in (embedding_cfg or {})]
    if missing:
      raise ValueError(f'EncoderScaffold without embedding_cls needs embedding_cfg with '
                       f'{list(_EMBEDDING_KEYS)}; missing {missing}')
    cfg = embedding_cfg
    initializer = tf_keras.initializers.get(cfg['initializer'])
    clone = lambda: tf_utils.clone_initializer(initializer)
    seq_length = cfg.get('seq_length')
    word_ids, mask, type_ids = (
        tf_keras.layers.Input(shape=(seq_length,), dtype=tf.int32, name=name)
        for name in ('input_word_ids', 'input_mask', 'input_type_ids'))
    self.inputs = [word_ids, mask, type_ids]
    self.word_embeddings = layers.OnDeviceEmbedding(
        cfg['vocab_size'], cfg['hidden_size'], initializer=clone(), name='word_embeddings')
    self.position_embedding = layers.PositionEmbedding(
        cfg['max_seq_length'], initializer=clone(), name='position_embedding')
    self.type_embeddings = layers.OnDeviceEmbedding(
        cfg['type_vocab_size'], cfg['hidden_size'], initializer=clone(), use_one_hot=True,
        name='type_embeddings')
    self.norm = tf_keras.layers.LayerNormalization(epsilon=1e-12, dtype=tf.float32,
                                                   name='embeddings/layer_norm')
    words = self.word_embeddings(word_ids)
    embeddings = tf_keras.layers.Add()(
        [words, self.position_embedding(words), self.type_embeddings(type_ids)])
    self.outputs = layers.Dropout(cfg['dropout_rate'])(self.norm(embeddings))
    mask_layer = mask_cls(**(mask_cfg or {})) if inspect.isclass(mask_cls) else mask_cls
    self.attention_mask = mask_layer(self.outputs, mask)
