"""`ModernBertEncoder`: a ModernBERT-class encoder (Warner et al., 2024) built from our blocks.

The architecture of Hugging Face's `ModernBertModel`: word embeddings (no position table), a
LayerNorm without bias, then pre-LN `TransformerEncoderBlock`s with bias-free dense layers and
norms, a GeGLU feed-forward layer and rotary position embeddings; every
`global_attn_every_n_layers`-th layer attends globally (RoPE base `global_rope_theta`), the others
within a sliding window of `local_attention` tokens (base `local_rope_theta`); a final LayerNorm
without bias. Built as a Keras functional model, so every variable exists after the constructor.
"""

import numbers
from typing import Any, Dict, List, Mapping, Sequence, Union

import tensorflow as tf
import tf_keras

from official.modeling import tf_utils
from official.nlp.modeling import layers
from official.nlp.modeling.networks import encoder_family
from official.nlp.modeling.networks import modernbert_encoder_config

_GRAPH_INPUTS = ('input_word_ids', 'input_mask', 'input_position_ids')


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class _NoAttentionNormBlock(layers.TransformerEncoderBlock):
  """A pre-LN `TransformerEncoderBlock` whose attention input is not normalized (identity).

  ModernBERT's first layer: the embeddings were just normalized, so Hugging Face replaces that
  layer's attention norm by an identity. Same arguments and config as the block.
  """

  def _make_norm(self, name: str):
    if name == 'self_attention_layer_norm':
      return tf_keras.layers.Identity(name=name)
    return super()._make_norm(name)


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class ModernBertEncoder(encoder_family.EmbeddingAccessors, tf_keras.Model):
  """The ModernBERT encoder (Hugging Face `ModernBertModel`'s computation) with dict outputs.

  Sub-layer names: `word_embeddings`, `embeddings/layer_norm`, `transformer/layer_%d`,
  `final_layer_norm`. Layer i attends globally when `i % global_attn_every_n_layers == 0` (RoPE
  base `global_rope_theta`), else within |i - j| <= local_attention // 2 (`local_rope_theta`);
  layer 0 has no attention norm, as in Hugging Face. ModernBERT has no pooler: `pooled_output` is
  the first token's ([CLS]) final hidden state, Hugging Face's `classifier_pooling='cls'`.

  Dropout: `dropout_rate` after the embeddings and on the feed-forward output;
  `attention_dropout_rate` on the attention probabilities and the attention output (Hugging Face's
  `embedding_dropout`, `mlp_dropout` (on the output here, not the inner layer) and
  `attention_dropout`; all 0 in ModernBERT).

  Args:
    vocab_size: word-embedding rows.
    hidden_size: width of every layer.
    num_layers: transformer layers.
    num_attention_heads: attention heads, each hidden_size // num_attention_heads wide.
    intermediate_size: width of the GeGLU feed-forward layer (its input dense is twice as wide).
    activation: activation of the gated half ('exact_gelu': the erf GELU ModernBERT uses).
    dropout_rate: dropout of the embeddings and the feed-forward output.
    attention_dropout_rate: dropout of the attention probabilities and output.
    max_sequence_length: the longest sequence the model is meant for (no table depends on it).
    norm_epsilon: epsilon of every LayerNorm.
    global_rope_theta: RoPE base of the global layers.
    local_rope_theta: RoPE base of the local layers.
    local_attention: sliding window of the local layers: token i sees j with
      |i - j| <= local_attention // 2.
    global_attn_every_n_layers: period of the global layers.
    initializer: kernel and table initializer (default: truncated normal, stddev 0.02).
    **kwargs: Keras model arguments (`name`, ...).

  Packed rows (several documents in one row): give `input_position_ids` (or the data loader's
  `position_ids`) restarting at 0 at each document's first token. A document starts wherever the
  position is 0 (`document_ids_from_positions`): tokens attend only within their document, and
  rotary positions count from each document's start. Without position ids a row is one sequence.

  Call args:
    inputs: a dict with `input_word_ids` and `input_mask` (int [batch, seq]), optionally
      `input_type_ids` (ignored: no segment embeddings) and `input_position_ids` or
      `position_ids` (int [batch, seq]; packed rows restart them per document; default
      0..seq - 1); other keys are ignored. Or the list
      `[input_word_ids, input_mask, input_type_ids(, input_position_ids)]`.

  Returns:
    A dict: `sequence_output` [batch, seq, hidden] (after the final norm), `pooled_output`
    [batch, hidden] (its first token), `encoder_outputs` (every layer's output, the last one
    after the final norm); float32.

  Example:
    >>> encoder = ModernBertEncoder(vocab_size=100, hidden_size=16, num_layers=3,
    ...                             num_attention_heads=2, intermediate_size=24, local_attention=4)
    >>> ids = tf.ones([2, 5], tf.int32)
    >>> encoder({'input_word_ids': ids, 'input_mask': ids})['sequence_output'].shape
    TensorShape([2, 5, 16])
  """

  def __init__(self, vocab_size: int, hidden_size: int = 768, num_layers: int = 22,
               num_attention_heads: int = 12, intermediate_size: int = 1152,
               activation: Any = 'exact_gelu', dropout_rate: float = 0.0,
               attention_dropout_rate: float = 0.0, max_sequence_length: int = 8192,
               norm_epsilon: float = 1e-5, global_rope_theta: float = 160000.0,
               local_rope_theta: float = 10000.0, local_attention: int = 128,
               global_attn_every_n_layers: int = 3, initializer: Any = None, **kwargs):
    _check_sizes(vocab_size=vocab_size, hidden_size=hidden_size, num_layers=num_layers,
                 num_attention_heads=num_attention_heads, intermediate_size=intermediate_size,
                 max_sequence_length=max_sequence_length, local_attention=local_attention,
                 global_attn_every_n_layers=global_attn_every_n_layers)
    if num_attention_heads > hidden_size:
      raise ValueError(f'ModernBertEncoder num_attention_heads must be at most hidden_size '
                       f'{hidden_size}, found {num_attention_heads}')
    if (hidden_size // num_attention_heads) % 2:
      raise ValueError(f'ModernBertEncoder needs an even head width for rotary embeddings; found '
                       f'hidden_size {hidden_size} // num_attention_heads {num_attention_heads}'
                       f' = {hidden_size // num_attention_heads}')
    if initializer is None:
      initializer = tf_keras.initializers.TruncatedNormal(stddev=0.02)
    initializer = tf_keras.initializers.get(initializer)
    clone = lambda: tf_utils.clone_initializer(initializer)
    activation_name = tf_utils.serialize_activation(tf_utils.get_activation(activation))

    # The graph's inputs; `__call__` accepts `input_type_ids` and drops it (no segment table).
    word_ids, mask, position_ids = (
        tf_keras.Input(shape=(None,), dtype=tf.int32, name=name) for name in _GRAPH_INPUTS)
    word_embedding_layer = layers.OnDeviceEmbedding(
        vocab_size, hidden_size, initializer=clone(), name='word_embeddings')
    x = layers.FusedLayerNormalization(epsilon=norm_epsilon, center=False, dtype=tf.float32,
                                       name='embeddings/layer_norm')(
                                           word_embedding_layer(word_ids))
    x = layers.Dropout(dropout_rate, name='embedding_dropout')(x)
    document_ids = tf_keras.layers.Lambda(document_ids_from_positions,
                                          name='document_ids')(position_ids)
    encoder_outputs = []
    for i in range(num_layers):
      is_global = i % global_attn_every_n_layers == 0
      block_class = _NoAttentionNormBlock if i == 0 else layers.TransformerEncoderBlock
      block = block_class(
          num_attention_heads=num_attention_heads, inner_dim=intermediate_size,
          inner_activation=activation_name, output_dropout=dropout_rate,
          attention_dropout=attention_dropout_rate, norm_first=True, norm_epsilon=norm_epsilon,
          use_bias=False, norm_use_bias=False, gated_inner=True,
          rotary_theta=global_rope_theta if is_global else local_rope_theta,
          attention_window=None if is_global else local_attention,
          kernel_initializer=clone(), name=f'transformer/layer_{i}')
      x = block(x, mask, position_ids=position_ids, document_ids=document_ids)
      encoder_outputs.append(x)
    x = layers.FusedLayerNormalization(epsilon=norm_epsilon, center=False, dtype=tf.float32,
                                       name='final_layer_norm')(x)
    encoder_outputs[-1] = x
    encoder_outputs = [tf.cast(output, tf.float32) for output in encoder_outputs]
    outputs = {'sequence_output': encoder_outputs[-1],
               'pooled_output': encoder_outputs[-1][:, 0, :],
               'encoder_outputs': encoder_outputs}
    super().__init__(inputs=[word_ids, mask, position_ids], outputs=outputs, **kwargs)

    # Untracked (no checkpoint entries).
    object.__setattr__(self, '_modernbert_config', dict(
        vocab_size=vocab_size, hidden_size=hidden_size, num_layers=num_layers,
        num_attention_heads=num_attention_heads, intermediate_size=intermediate_size,
        activation=activation_name, dropout_rate=dropout_rate,
        attention_dropout_rate=attention_dropout_rate, max_sequence_length=max_sequence_length,
        norm_epsilon=norm_epsilon, global_rope_theta=float(global_rope_theta),
        local_rope_theta=float(local_rope_theta), local_attention=local_attention,
        global_attn_every_n_layers=global_attn_every_n_layers,
        initializer=tf_keras.initializers.serialize(initializer)))
    self._embedding_layer = word_embedding_layer

  def __call__(self, inputs: Union[Mapping[str, tf.Tensor], Sequence[tf.Tensor]], *args,
               **kwargs):
    # Before Keras' input checks: the graph always takes position ids, callers need not.
    return super().__call__(_graph_inputs(inputs), *args, **kwargs)

  def complete_inputs(self, inputs: Mapping[str, tf.Tensor]) -> Dict[str, tf.Tensor]:
    """`inputs` with `input_position_ids` added when missing (as `__call__` fills them in).

    For models built on this encoder's `inputs` (e.g. a functional `BertClassifier`), whose
    callers give `input_word_ids`, `input_mask` (and `input_type_ids`) only.

    Example:
      >>> sorted(encoder.complete_inputs({'input_word_ids': ids, 'input_mask': ids}))
      ['input_mask', 'input_position_ids', 'input_word_ids']
    """
    word_ids, mask, position_ids = _graph_inputs(inputs)
    return dict(inputs, input_word_ids=word_ids, input_mask=mask, input_position_ids=position_ids)

  @property
  def transformer_layers(self) -> List[layers.TransformerEncoderBlock]:
    """The `num_layers` blocks, first to last."""
    return [self.get_layer(f'transformer/layer_{i}')
            for i in range(self._modernbert_config['num_layers'])]

  def get_config(self) -> Dict[str, Any]:
    return dict(self._modernbert_config)

  @classmethod
  def from_config(cls, config: Dict[str, Any], custom_objects=None):
    return cls(**config)


def _graph_inputs(inputs: Union[Mapping[str, tf.Tensor], Sequence[tf.Tensor]]
                  ) -> List[tf.Tensor]:
  """[input_word_ids, input_mask, input_position_ids] of a call's inputs (default positions)."""
  if isinstance(inputs, Mapping):
    missing = [name for name in _GRAPH_INPUTS[:2] if name not in inputs]
    if missing:
      raise ValueError(f'ModernBertEncoder inputs need the keys {list(_GRAPH_INPUTS[:2])}; '
                       f'missing {missing} (found {sorted(inputs)})')
    word_ids, input_mask = inputs['input_word_ids'], inputs['input_mask']
    position_ids = inputs.get('input_position_ids')
    if position_ids is None:
      position_ids = inputs.get('position_ids')  # the data loaders' name (`use_position_id`)
  else:
    if not 2 <= len(inputs) <= 4:
      raise ValueError('ModernBertEncoder list inputs are [input_word_ids, input_mask, '
                       f'input_type_ids(, input_position_ids)]; found {len(inputs)} tensors')
    word_ids, input_mask = inputs[0], inputs[1]
    position_ids = inputs[3] if len(inputs) == 4 else None
  if position_ids is None:
    shape = tf.shape(word_ids)
    position_ids = tf.broadcast_to(tf.range(shape[1], dtype=tf.int32)[None], shape)
  return [word_ids, input_mask, tf.cast(position_ids, tf.int32)]


def document_ids_from_positions(position_ids: tf.Tensor) -> tf.Tensor:
  """int32 [batch, seq] document number of each token: a new document wherever a position is 0.

  Packed rows restart their positions at each document, so the restarts mark the boundaries.
  A row whose positions never restart (0..seq - 1, or any offset) is one document.

  Example:
    >>> document_ids_from_positions(tf.constant([[0, 1, 2, 0, 1, 0]])).numpy()
    array([[1, 1, 1, 2, 2, 3]], dtype=int32)
  """
  return tf.cumsum(tf.cast(tf.equal(position_ids, 0), tf.int32), axis=1)


def _check_sizes(**sizes: int) -> None:
  """Raises ValueError naming the first size that is not a positive integer."""
  for name, value in sizes.items():
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
      raise ValueError(f'ModernBertEncoder {name} must be a positive integer, found {value!r}')


# ---- the `modernbert` encoder family ------------------------------------------------------------
def _build_modernbert(config: modernbert_encoder_config.ModernBertEncoderConfig
                      ) -> ModernBertEncoder:
  return ModernBertEncoder(**modernbert_encoder_config.encoder_kwargs(config))


def masked_lm_options(encoder: ModernBertEncoder) -> Dict[str, Any]:
  """Hugging Face's ModernBERT head (`ModernBertPredictionHead` + tied decoder): a dense layer
  without bias and a LayerNorm without bias at the encoder's `norm_epsilon`.

  Example:
    >>> masked_lm_options(ModernBertEncoder(vocab_size=100, num_layers=3, ...))
    {'use_bias': False, 'norm_use_bias': False, 'norm_epsilon': 1e-05}
  """
  return dict(use_bias=False, norm_use_bias=False,
              norm_epsilon=encoder.get_config()['norm_epsilon'])


MODERNBERT_FAMILY = encoder_family.register_encoder_family(encoder_family.EncoderFamily(
    name='modernbert', config_cls=modernbert_encoder_config.ModernBertEncoderConfig,
    build=_build_modernbert, encoder_classes=(ModernBertEncoder,),
    masked_lm_options=masked_lm_options,
    config_of=modernbert_encoder_config.encoder_config_of,
    count_flops='official.nlp.tools.model_flops:modernbert_flops',
    hf=encoder_family.CheckpointFormat(
        read='official.nlp.tools.hf_modernbert:load',
        write='official.nlp.tools.hf_modernbert:export',
        recognizes='official.nlp.tools.hf_modernbert:is_modernbert_dir',
        config='official.nlp.tools.hf_modernbert:hf_config'),
    weight_map='official.nlp.tools.hf_modernbert:export_entries', title='ModernBERT'))
