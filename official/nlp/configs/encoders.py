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
from typing import Optional

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
    num_attention_heads: attention heads; must divide `hidden_size`.
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
    return_attention_scores: not supported (must stay False).
    return_word_embeddings: not supported (must stay False).
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
  return_attention_scores: bool = hyperparams.unsupported(
      False, 'returning attention scores is not supported by mlm-garden')
  return_word_embeddings: bool = hyperparams.unsupported(
      False, 'returning word embeddings is not supported by mlm-garden')
  norm_first: bool = False

  def validate(self) -> None:
    super().validate()
    if self.hidden_size % self.num_attention_heads:
      raise hyperparams.ConfigError(
          'num_attention_heads', f'must divide hidden_size {self.hidden_size}, found '
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
  bert = config.bert
  return networks.BertEncoder(
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
      embedding_layer=embedding_layer,
      return_all_encoder_outputs=bert.return_all_encoder_outputs,
      norm_first=bert.norm_first,
      dict_outputs=True)
