"""`ModernBertEncoderConfig`: the ModernBERT encoder's hyperparameters and their
`ModernBertEncoder` arguments.

`official.nlp.configs.encoders` exports it as the `modernbert` member of its `EncoderConfig`
one-of.

Example:
  >>> config = ModernBertEncoderConfig(vocab_size=100, hidden_size=16, num_layers=3,
  ...                                  num_attention_heads=2, intermediate_size=24)
  >>> encoder = ModernBertEncoder(**encoder_kwargs(config))
"""

import dataclasses
from typing import Any, ClassVar, Dict

import tf_keras

from official.modeling import hyperparams
from official.nlp.modeling.networks import bert_encoder_config


@dataclasses.dataclass
class ModernBertEncoderConfig(bert_encoder_config.EncoderConfigChecks, hyperparams.Config):
  """ModernBERT encoder sizes (defaults: ModernBERT-base, Hugging Face's field meanings).

  Attributes:
    vocab_size: rows of the word embedding table.
    hidden_size: width of every layer.
    num_layers: transformer layers.
    num_attention_heads: attention heads (their width must be even, for rotary embeddings).
    intermediate_size: width of the GeGLU feed-forward layer.
    hidden_activation: activation of the gated half ('exact_gelu': the erf GELU).
    dropout_rate: dropout of the embeddings and the feed-forward output.
    attention_dropout_rate: dropout of the attention probabilities and output.
    max_position_embeddings: longest sequence the model is meant for (rotary: no table).
    norm_eps: epsilon of every LayerNorm.
    global_rope_theta: RoPE base of the global layers.
    local_rope_theta: RoPE base of the local (sliding-window) layers.
    local_attention: sliding window of the local layers (|i - j| <= local_attention // 2).
    global_attn_every_n_layers: layer i is global when i % global_attn_every_n_layers == 0.
    initializer_range: stddev of the truncated-normal initializer.

  Flat encoder configs may use Hugging Face's `config.json` names (`FIELD_ALIASES`:
  `num_hidden_layers`, `hidden_act`, `embedding_dropout`, `attention_dropout`).
  """
  MEMBER_NAME: ClassVar[str] = 'modernbert'
  FIELD_ALIASES: ClassVar[Dict[str, str]] = {
      'num_hidden_layers': 'num_layers', 'hidden_act': 'hidden_activation',
      'embedding_dropout': 'dropout_rate', 'attention_dropout': 'attention_dropout_rate'}

  vocab_size: int = hyperparams.field(50368, ge=1)
  hidden_size: int = hyperparams.field(768, ge=1)
  num_layers: int = hyperparams.field(22, ge=1)
  num_attention_heads: int = hyperparams.field(12, ge=1)
  intermediate_size: int = hyperparams.field(1152, ge=1)
  hidden_activation: str = 'exact_gelu'
  dropout_rate: float = hyperparams.field(0.0, ge=0.0, lt=1.0)
  attention_dropout_rate: float = hyperparams.field(0.0, ge=0.0, lt=1.0)
  max_position_embeddings: int = hyperparams.field(8192, ge=1)
  norm_eps: float = hyperparams.field(1e-5, gt=0.0)
  global_rope_theta: float = hyperparams.field(160000.0, gt=0.0)
  local_rope_theta: float = hyperparams.field(10000.0, gt=0.0)
  local_attention: int = hyperparams.field(128, ge=1)
  global_attn_every_n_layers: int = hyperparams.field(3, ge=1)
  initializer_range: float = hyperparams.field(0.02, gt=0.0)

  def validate(self) -> None:
    super().validate()
    head_width = self.hidden_size // self.num_attention_heads
    if head_width % 2:
      raise hyperparams.ConfigError(
          'num_attention_heads', f'hidden_size {self.hidden_size} // num_attention_heads '
          f'{self.num_attention_heads} = {head_width} must be even (rotary embeddings)')


def encoder_kwargs(config: ModernBertEncoderConfig) -> Dict[str, Any]:
  """`ModernBertEncoder` constructor arguments for a `ModernBertEncoderConfig`.

  Example:
    >>> ModernBertEncoder(**encoder_kwargs(ModernBertEncoderConfig(num_layers=3)))
  """
  return dict(
      vocab_size=config.vocab_size, hidden_size=config.hidden_size,
      num_layers=config.num_layers, num_attention_heads=config.num_attention_heads,
      intermediate_size=config.intermediate_size, activation=config.hidden_activation,
      dropout_rate=config.dropout_rate, attention_dropout_rate=config.attention_dropout_rate,
      max_sequence_length=config.max_position_embeddings, norm_epsilon=config.norm_eps,
      global_rope_theta=config.global_rope_theta, local_rope_theta=config.local_rope_theta,
      local_attention=config.local_attention,
      global_attn_every_n_layers=config.global_attn_every_n_layers,
      initializer=tf_keras.initializers.TruncatedNormal(stddev=config.initializer_range))


def encoder_config_of(encoder: tf_keras.Model) -> ModernBertEncoderConfig:
  """The `ModernBertEncoderConfig` that builds an encoder like `encoder` (a `ModernBertEncoder`).

  Example:
    >>> encoder_config_of(ModernBertEncoder(**encoder_kwargs(config))) == config
    True
  """
  config = encoder.get_config()
  initializer = config.get('initializer') or {}
  stddev = (initializer.get('config') or {}).get('stddev', 0.02)
  return ModernBertEncoderConfig(
      vocab_size=config['vocab_size'], hidden_size=config['hidden_size'],
      num_layers=config['num_layers'], num_attention_heads=config['num_attention_heads'],
      intermediate_size=config['intermediate_size'], hidden_activation=config['activation'],
      dropout_rate=config['dropout_rate'],
      attention_dropout_rate=config['attention_dropout_rate'],
      max_position_embeddings=config['max_sequence_length'], norm_eps=config['norm_epsilon'],
      global_rope_theta=config['global_rope_theta'],
      local_rope_theta=config['local_rope_theta'], local_attention=config['local_attention'],
      global_attn_every_n_layers=config['global_attn_every_n_layers'],
      initializer_range=stddev)
