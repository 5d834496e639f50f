"""Encoder configs and `build_encoder`: the `task.model.encoder` block of an experiment.

Example YAML (Model Garden layout):
  encoder:
    type: bert
    bert: {vocab_size: 30522, hidden_size: 256, num_layers: 4, num_attention_heads: 4,
           intermediate_size: 1024}

Example:
  >>> config = EncoderConfig(bert=BertEncoderConfig(num_layers=2, hidden_size=128,
  ...                                               num_attention_heads=2, intermediate_size=512))
  >>> encoder = build_encoder(config)
"""

import dataclasses
from typing import Any, Dict, Mapping, Optional

import tf_keras

from official.modeling import hyperparams
from official.modeling import tf_utils
from official.nlp.modeling import networks


@dataclasses.dataclass
class BertEncoderConfig(hyperparams.Config):
  """BERT encoder sizes and regularization (Model Garden field names and defaults).

  Attributes:
    vocab_size: rows of the word embedding table.
    hidden_size: width of every transformer layer.
    num_layers: transformer layers.
    num_attention_heads: attention heads, each hidden_size // num_attention_heads wide.
    hidden_activation: activation of the feed-forward layer ('gelu' is the tanh approximation).
    intermediate_size: width of the feed-forward layer.
    dropout_rate: dropout after embeddings, attention output and feed-forward.
    attention_dropout_rate: dropout on the attention probabilities.
    max_position_embeddings: longest sequence the position table holds.
    type_vocab_size: segment (token type) ids.
    initializer_range: stddev of the truncated-normal initializer.
    embedding_size: embedding width when factorized (ALBERT style); None = hidden_size.
    output_range: when set, the last layer computes only the first `output_range` positions.
    return_all_encoder_outputs: return every layer's output in `encoder_outputs`.
    return_attention_scores: add every layer's attention probabilities (`attention_scores`).
    return_word_embeddings: add the looked-up word embeddings (`word_embeddings`).
    norm_first: pre-LayerNorm transformer blocks (False: original post-LN BERT).
  """
  vocab_size: int = hyperparams.field(30522, ge=1)
  hidden_size: int = hyperparams.field(768, ge=1)
  num_layers: int = hyperparams.field(12, ge=1)
  num_attention_heads: int = hyperparams.field(12, ge=1)
  hidden_activation: str = 'gelu'
  intermediate_size: int = hyperparams.field(3072, ge=1)
  dropout_rate: float = hyperparams.field(0.1, ge=0.0, lt=1.0)
  attention_dropout_rate: float = hyperparams.field(0.1, ge=0.0, lt=1.0)
  max_position_embeddings: int = hyperparams.field(512, ge=1)
  type_vocab_size: int = hyperparams.field(2, ge=1)
  initializer_range: float = hyperparams.field(0.02, gt=0.0)
  embedding_size: Optional[int] = hyperparams.field(None, ge=1)
  output_range: Optional[int] = hyperparams.field(None, ge=1)
  return_all_encoder_outputs: bool = False
  return_attention_scores: bool = False
  return_word_embeddings: bool = False
  norm_first: bool = False

  def validate(self) -> None:
    super().validate()
    if self.num_attention_heads > self.hidden_size:
      # A hidden size the heads do not divide is allowed (as in Model Garden).
      raise hyperparams.ConfigError(
          'num_attention_heads', f'must be at most hidden_size {self.hidden_size}, found '
          f'{self.num_attention_heads}')
    try:
      tf_utils.get_activation(self.hidden_activation)
    except (ValueError, KeyError) as e:
      raise hyperparams.ConfigError('hidden_activation', str(e)) from None

  def check_seq_length(self, field: str, seq_length: int) -> None:
    """Raises a ConfigError naming `field` when `seq_length` exceeds max_position_embeddings."""
    if seq_length > self.max_position_embeddings:
      raise hyperparams.ConfigError(
          field, f'{seq_length} exceeds model.encoder.bert.'
          f'max_position_embeddings={self.max_position_embeddings}')


@dataclasses.dataclass
class EncoderConfig(hyperparams.OneOfConfig):
  """The encoder one-of; mlm-garden implements `bert`."""
  type: Optional[str] = 'bert'
  bert: BertEncoderConfig = dataclasses.field(default_factory=BertEncoderConfig)


def build_encoder(config: EncoderConfig,
                  embedding_layer: Optional[tf_keras.layers.Layer] = None) -> tf_keras.Model:
  """Builds the encoder network selected by `config.type`.

  Args:
    config: an `EncoderConfig` (or a bare `BertEncoderConfig`).
    embedding_layer: an optional word-embedding layer to share.

  Returns:
    A `BertEncoder` with dict outputs (`sequence_output`, `pooled_output`, `encoder_outputs`).
  """
  if isinstance(config, BertEncoderConfig):
    config = EncoderConfig(type='bert', bert=config)
  if config.type != 'bert':
    raise hyperparams.ConfigError('type', f'unsupported encoder type {config.type!r}; mlm-garden '
                                  "implements ['bert']")
  return networks.BertEncoder(embedding_layer=embedding_layer, **encoder_kwargs(config.bert))


def encoder_kwargs(bert: BertEncoderConfig) -> Dict[str, Any]:
  """`BertEncoder` constructor arguments (dict outputs) for a `BertEncoderConfig`.

  Example:
    >>> networks.BertEncoder(**encoder_kwargs(BertEncoderConfig(num_layers=2)))
  """
  return dict(
      vocab_size=bert.vocab_size,
      hidden_size=bert.hidden_size,
      num_layers=bert.num_layers,
      num_attention_heads=bert.num_attention_heads,
      max_sequence_length=bert.max_position_embeddings,
      type_vocab_size=bert.type_vocab_size,
      inner_dim=bert.intermediate_size,
      inner_activation=tf_utils.get_activation(bert.hidden_activation),
      output_dropout=bert.dropout_rate,
      attention_dropout=bert.attention_dropout_rate,
      initializer=tf_keras.initializers.TruncatedNormal(stddev=bert.initializer_range),
      output_range=bert.output_range,
      embedding_width=bert.embedding_size,
      return_all_encoder_outputs=bert.return_all_encoder_outputs,
      return_attention_scores=bert.return_attention_scores,
      return_word_embeddings=bert.return_word_embeddings,
      norm_first=bert.norm_first,
      dict_outputs=True)


# Field names of a BERT `bert_config.json` (Google) / `config.json` (Hugging Face).
_EXTERNAL_KEYS = frozenset({'num_hidden_layers', 'hidden_act', 'hidden_dropout_prob',
                            'attention_probs_dropout_prob'})
_HF_KEYS = frozenset({'model_type', 'architectures', 'layer_norm_eps', 'transformers_version'})


def bert_config_from_dict(config: Mapping[str, Any]) -> BertEncoderConfig:
  """A `BertEncoderConfig` from a plain dict in any of the layouts how-tos use.

  Accepted: an `EncoderConfig` dict (`{'type': 'bert', 'bert': {...}}`, e.g.
  `EncoderConfig(...).as_dict()`), its `bert` part alone (`BertEncoderConfig` field names), or
  a BERT `bert_config.json` / Hugging Face `config.json` dict (`num_hidden_layers`, `hidden_act`,
  `hidden_dropout_prob`, ...). `BertEncoderConfig` names are checked strictly: a misspelt key
  raises, naming it.

  Args:
    config: the dict.

  Returns:
    The validated `BertEncoderConfig`.

  Example:
    >>> bert_config_from_dict({'type': 'bert', 'bert': {'num_layers': 2}}).num_layers
    2
  """
  config = dict(config)
  if 'type' in config or 'bert' in config:
    kind = config.get('type') or 'bert'
    if kind != 'bert':
      raise hyperparams.ConfigError('type', f'unsupported encoder type {kind!r}; mlm-garden '
                                    "implements ['bert']")
    extra = sorted(set(config) - {'type', 'bert'})
    if extra:
      raise hyperparams.ConfigError(extra[0], "an encoder config holds only 'type' and 'bert'")
    config = dict(config.get('bert') or {})
  if _EXTERNAL_KEYS & set(config):
    from official.nlp.tools import bert_weight_map  # pylint: disable=g-import-not-at-top
    fmt = 'hf' if _HF_KEYS & set(config) else 'google'
    bert = bert_weight_map.encoder_config_from_external(config, fmt, source='encoder config')
  else:
    bert = BertEncoderConfig.from_dict(config)
  bert.validate()
  return bert
