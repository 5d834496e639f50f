"""An encoder between BERT and ModernBERT, one architectural factor at a time (the `ablation` type).

The recipe study found the modern architecture carries ~1.5 nats of held-out masked-LM loss on
Brown while BERT's stays at the context-free predictor, and that pre-LN blocks alone do not move
BERT. This encoder is BERT's (`BertEncoder`'s graph: word + position + type embeddings, LayerNorm,
dropout, post-LN blocks with biases and a GELU feed-forward layer, the tanh pooler) with each of
ModernBERT's architectural differences a switch, so a probe changes one:

- `positions: rotary`: rotary position embeddings on the queries and keys of every block
  (base `rotary_theta`) instead of the learned absolute position table;
- `norm_first: true`: pre-LN blocks and a final LayerNorm;
- `gated_inner: true`: a GeGLU feed-forward layer (its input dense twice `intermediate_size`);
- `use_bias: false`: no biases in the blocks' dense layers and norms.

With every switch at its default the encoder computes what `BertEncoder` computes with the same
weights (tests/projects/recipe_comparison/test_ablation_encoder.py). The family registers when
this module is imported: training takes `--experiment_module=` this module, and
`model_garden_peer --encoder=ablation` passes it.

Example:
  >>> encoder = AblationEncoder(vocab_size=100, hidden_size=16, num_layers=2,
  ...                           num_attention_heads=2, intermediate_size=32, positions='rotary')
  >>> ids = tf.ones([2, 5], tf.int32)
  >>> encoder({'input_word_ids': ids, 'input_mask': ids})['sequence_output'].shape
  TensorShape([2, 5, 16])
"""

import dataclasses
from typing import Any, ClassVar, Dict, Mapping, Sequence, Tuple, Union

import tensorflow as tf
import tf_keras

from official.modeling import hyperparams
from official.modeling import tf_utils
from official.nlp.modeling import layers
from official.nlp.modeling.networks import bert_encoder_config
from official.nlp.modeling.networks import encoder_family

NAME = 'ablation'
POSITIONS = ('learned', 'rotary')
_INPUTS = ('input_word_ids', 'input_mask', 'input_type_ids')


@dataclasses.dataclass
class AblationEncoderConfig(bert_encoder_config.BertEncoderConfig):
  """`BertEncoderConfig` (its sizes, dropout and `norm_first`) plus the switches toward ModernBERT
  (defaults: BERT's).

  Attributes:
    positions: 'learned' (BERT's position table) or 'rotary' (no table; RoPE in every block).
    rotary_theta: RoPE base when `positions` is 'rotary'.
    gated_inner: GeGLU feed-forward layers.
    use_bias: biases in the blocks' dense layers and LayerNorms.
  The BERT fields this encoder does not build (`UNSUPPORTED`) are refused when set.
  """
  MEMBER_NAME: ClassVar[str] = NAME
  UNSUPPORTED: ClassVar[Tuple[str, ...]] = (
      'embedding_size', 'output_range', 'return_all_encoder_outputs', 'return_attention_scores',
      'return_word_embeddings', 'packed_documents')

  positions: str = 'learned'
  rotary_theta: float = hyperparams.field(10000.0, gt=0.0)
  gated_inner: bool = False
  use_bias: bool = True

  def validate(self) -> None:
    super().validate()
    for name in self.UNSUPPORTED:
      if getattr(self, name) not in (None, False):
        raise hyperparams.ConfigError(name, f'the ablation encoder does not build it; found '
                                      f'{getattr(self, name)!r}')
    if self.positions not in POSITIONS:
      raise hyperparams.ConfigError('positions', f'expected one of {POSITIONS}, found '
                                    f'{self.positions!r}')
    if self.positions == 'rotary' and (self.hidden_size // self.num_attention_heads) % 2:
      raise hyperparams.ConfigError(
          'num_attention_heads', f'rotary positions need an even head width; hidden_size '
          f'{self.hidden_size} // num_attention_heads {self.num_attention_heads} is odd')


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class AblationEncoder(encoder_family.EmbeddingAccessors, tf_keras.Model):
  """BERT's encoder with ModernBERT's architectural differences as switches (see the module).

  Args:
    vocab_size: word-embedding rows.
    hidden_size, num_layers, num_attention_heads, intermediate_size: the sizes.
    activation: the feed-forward activation ('gelu': BERT's tanh approximation).
    dropout_rate: dropout after the embeddings, the attention output and the feed-forward layer.
    attention_dropout_rate: dropout on the attention probabilities.
    max_sequence_length: rows of the position table (learned positions).
    type_vocab_size: segment ids.
    initializer_range: stddev of the truncated-normal initializer.
    positions: 'learned' or 'rotary'.
    rotary_theta: RoPE base.
    norm_first: pre-LN blocks and a final LayerNorm.
    gated_inner: GeGLU feed-forward layers.
    use_bias: biases in the blocks.
    **kwargs: Keras model arguments.

  Call args:
    inputs: a dict with `input_word_ids`, `input_mask` and optionally `input_type_ids` (int
      [batch, seq]; default zeros); other keys are ignored.

  Returns:
    A dict: `sequence_output` [batch, seq, hidden], `pooled_output` [batch, hidden] (the tanh
    pooler on the first token) and `encoder_outputs` (every block's output; the last after the
    final norm when `norm_first`).
  """

  def __init__(self, vocab_size: int, hidden_size: int = 768, num_layers: int = 12,
               num_attention_heads: int = 12, intermediate_size: int = 3072,
               activation: Any = 'gelu', dropout_rate: float = 0.1,
               attention_dropout_rate: float = 0.1, max_sequence_length: int = 512,
               type_vocab_size: int = 2, initializer_range: float = 0.02,
               positions: str = 'learned', rotary_theta: float = 10000.0,
               norm_first: bool = False, gated_inner: bool = False, use_bias: bool = True,
               **kwargs):
    if positions not in POSITIONS:
      raise ValueError(f'AblationEncoder positions: expected one of {POSITIONS}, found '
                       f'{positions!r}')
    config = dict(
        vocab_size=vocab_size, hidden_size=hidden_size, num_layers=num_layers,
        num_attention_heads=num_attention_heads, intermediate_size=intermediate_size,
        activation=tf_utils.serialize_activation(tf_utils.get_activation(activation)),
        dropout_rate=dropout_rate, attention_dropout_rate=attention_dropout_rate,
        max_sequence_length=max_sequence_length, type_vocab_size=type_vocab_size,
        initializer_range=initializer_range, positions=positions,
        rotary_theta=float(rotary_theta), norm_first=norm_first, gated_inner=gated_inner,
        use_bias=use_bias)
    initializer = tf_keras.initializers.TruncatedNormal(stddev=initializer_range)
    clone = lambda: tf_utils.clone_initializer(initializer)

    word_ids, mask, type_ids = (tf_keras.Input(shape=(None,), dtype=tf.int32, name=name)
                                for name in _INPUTS)
    word_layer = layers.OnDeviceEmbedding(vocab_size, hidden_size, initializer=clone(),
                                          name='word_embeddings')
    words = word_layer(word_ids)
    parts = [words]
    if positions == 'learned':
      parts.append(layers.PositionEmbedding(max_sequence_length, initializer=clone(),
                                            name='position_embedding')(words, broadcast=False))
    parts.append(layers.OnDeviceEmbedding(type_vocab_size, hidden_size, initializer=clone(),
                                          use_one_hot=True, name='type_embeddings')(type_ids))
    x = tf_keras.layers.Add()(parts)
    x = layers.FusedLayerNormalization(epsilon=1e-12, dtype=tf.float32,
                                       name='embeddings/layer_norm')(x)
    x = layers.Dropout(dropout_rate, name='embedding_dropout')(x)
    encoder_outputs = []
    for i in range(num_layers):
      block = layers.TransformerEncoderBlock(
          num_attention_heads=num_attention_heads, inner_dim=intermediate_size,
          inner_activation=config['activation'], output_dropout=dropout_rate,
          attention_dropout=attention_dropout_rate, norm_first=norm_first,
          use_bias=use_bias, norm_use_bias=use_bias, gated_inner=gated_inner,
          rotary_theta=rotary_theta if positions == 'rotary' else None,
          kernel_initializer=clone(), name=f'transformer/layer_{i}')
      x = block(x, mask)
      encoder_outputs.append(x)
    if norm_first:
      x = layers.FusedLayerNormalization(epsilon=1e-12, center=use_bias, dtype=tf.float32,
                                         name='final_layer_norm')(x)
      encoder_outputs[-1] = x
    encoder_outputs = [tf.cast(output, tf.float32) for output in encoder_outputs]
    pooled = tf_keras.layers.Dense(hidden_size, activation='tanh', kernel_initializer=clone(),
                                   name='pooler_transform')(encoder_outputs[-1][:, 0, :])
    outputs = {'sequence_output': encoder_outputs[-1], 'pooled_output': pooled,
               'encoder_outputs': encoder_outputs}
    super().__init__(inputs=[word_ids, mask, type_ids], outputs=outputs, **kwargs)
    object.__setattr__(self, '_ablation_config', config)  # untracked: no checkpoint entry
    self._embedding_layer = word_layer

  def __call__(self, inputs: Union[Mapping[str, tf.Tensor], Sequence[tf.Tensor]], *args,
               **kwargs):
    return super().__call__(_graph_inputs(inputs), *args, **kwargs)

  @property
  def transformer_layers(self):
    """The blocks, first to last."""
    return [self.get_layer(f'transformer/layer_{i}')
            for i in range(self._ablation_config['num_layers'])]

  def get_config(self) -> Dict[str, Any]:
    return dict(self._ablation_config)

  @classmethod
  def from_config(cls, config: Dict[str, Any], custom_objects=None):
    return cls(**config)


def _graph_inputs(inputs: Union[Mapping[str, tf.Tensor], Sequence[tf.Tensor]]):
  """[input_word_ids, input_mask, input_type_ids] of a call's inputs (type ids default 0)."""
  if isinstance(inputs, Mapping):
    missing = [name for name in _INPUTS[:2] if name not in inputs]
    if missing:
      raise ValueError(f'AblationEncoder inputs need the keys {list(_INPUTS[:2])}; missing '
                       f'{missing} (found {sorted(inputs)})')
    word_ids, mask, type_ids = (inputs.get(name) for name in _INPUTS)
  else:
    word_ids, mask, type_ids = (list(inputs) + [None])[:3]
  if type_ids is None:
    type_ids = tf.zeros_like(word_ids)
  return [tf.cast(word_ids, tf.int32), tf.cast(mask, tf.int32), tf.cast(type_ids, tf.int32)]


def encoder_kwargs(config: AblationEncoderConfig) -> Dict[str, Any]:
  """`AblationEncoder` arguments of a config (its field names are BERT's config names)."""
  return dict(
      vocab_size=config.vocab_size, hidden_size=config.hidden_size, num_layers=config.num_layers,
      num_attention_heads=config.num_attention_heads,
      intermediate_size=config.intermediate_size, activation=config.hidden_activation,
      dropout_rate=config.dropout_rate, attention_dropout_rate=config.attention_dropout_rate,
      max_sequence_length=config.max_position_embeddings,
      type_vocab_size=config.type_vocab_size, initializer_range=config.initializer_range,
      positions=config.positions, rotary_theta=config.rotary_theta,
      norm_first=config.norm_first, gated_inner=config.gated_inner, use_bias=config.use_bias)


def _build(config: AblationEncoderConfig) -> AblationEncoder:
  return AblationEncoder(**encoder_kwargs(config))


def _head_options(encoder: AblationEncoder) -> Dict[str, Any]:
  """BERT's masked-LM head, without biases when the blocks have none (ModernBERT's)."""
  if encoder.get_config()['use_bias']:
    return {}
  return dict(use_bias=False, norm_use_bias=False)


FAMILY = encoder_family.register_encoder_family(encoder_family.EncoderFamily(
    name=NAME, config_cls=AblationEncoderConfig, build=_build,
    encoder_classes=(AblationEncoder,), masked_lm_options=_head_options,
    title='the ablation encoder (recipe study)'))
