"""Encoder configs and `build_encoder`: the `task.model.encoder` block of an experiment.

Example YAML (Model Garden layout):
  encoder:
    type: bert
    bert: {vocab_size: 30522, hidden_size: 256, num_layers: 4, num_attention_heads: 4,
           intermediate_size: 1024}

  encoder:
    type: albert
    albert: {vocab_size: 30000, embedding_width: 128, hidden_size: 768, num_layers: 12}

Example:
  >>> config = EncoderConfig(bert=BertEncoderConfig(num_layers=2, hidden_size=128,
  ...                                               num_attention_heads=2, intermediate_size=512))
  >>> encoder = build_encoder(config)
"""

import dataclasses
from typing import Any, Mapping, Optional, Union

import tf_keras

from official.modeling import hyperparams
from official.nlp.modeling import networks
from official.nlp.modeling.networks import albert_encoder_config
from official.nlp.modeling.networks import bert_encoder_config
from official.nlp.modeling.networks import modernbert_encoder_config
# Model Garden's paths of the member configs; each is defined beside its encoder.
from official.nlp.modeling.networks.albert_encoder_config import AlbertEncoderConfig
from official.nlp.modeling.networks.bert_encoder_config import BertEncoderConfig
from official.nlp.modeling.networks.modernbert_encoder_config import ModernBertEncoderConfig

# Encoder types of Model Garden's `EncoderConfig` that mlm-garden does not implement: selecting
# one fails at once, naming it.
MODEL_GARDEN_ONLY_TYPES = ('any', 'bigbird', 'fnet', 'funnel', 'kernel', 'mobilebert',
                           'query_bert', 'reuse', 'sparse_mixer', 'teams', 'xlnet')


@dataclasses.dataclass(init=False)
class EncoderConfig(hyperparams.FlatOneOfConfig):
  """The encoder one-of: `albert`, `bert`, `bert_v2` (a `BertEncoderV2`) and `modernbert`.

  Model Garden's nested form (`EncoderConfig(type='bert', bert=BertEncoderConfig(...))`,
  `{'type': 'bert', 'bert': {...}}`) and the flat form of how-tos (the member's fields beside
  `type`, also under their Hugging Face / Google names: `EncoderConfig(vocab_size=30522,
  num_hidden_layers=12)`, `{'type': 'albert', 'embedding_size': 128}`) build the same config, from
  keywords, dicts, YAML and `--params_override`. A name that fits no field of the member is
  refused with its path (`hyperparams.flat_oneof`). Setting `type` to anything else (Model
  Garden's other encoders included) raises a `ConfigError` naming `type`, the value and the
  supported types, whichever way it is set.
  """
  type: Optional[str] = 'bert'
  albert: AlbertEncoderConfig = dataclasses.field(default_factory=AlbertEncoderConfig)
  bert: BertEncoderConfig = dataclasses.field(default_factory=BertEncoderConfig)
  bert_v2: BertEncoderConfig = dataclasses.field(default_factory=BertEncoderConfig)
  modernbert: ModernBertEncoderConfig = dataclasses.field(default_factory=ModernBertEncoderConfig)

  def __setattr__(self, key: str, value: Any) -> None:
    if key == 'type':
      self._check_type_value(value, '')
    super().__setattr__(key, value)

  def _override(self, overrides: Any, is_strict: bool = True, path: str = '') -> None:
    # Checked before the flat fields are routed, so that the message is about the type.
    if isinstance(overrides, Mapping) and 'type' in overrides:
      self._check_type_value(overrides['type'], path)
    super()._override(overrides, is_strict, path)

  def _check_type(self, path: str) -> None:
    self._check_type_value(self.type, path)

  @classmethod
  def _check_type_value(cls, kind: Any, path: str) -> None:
    """Raises a ConfigError at `<path>.type` unless `kind` is None or a member name."""
    if kind is None or kind in cls.member_names():
      return
    supported = sorted(cls.member_names())
    if kind in MODEL_GARDEN_ONLY_TYPES:
      message = (f'{kind!r} is a Model Garden encoder type that mlm-garden does not implement; '
                 f'supported types: {supported}')
    else:
      message = f'unknown encoder type {kind!r}; supported types: {supported}'
    raise hyperparams.ConfigError(f'{path}.type' if path else 'type', message)


def build_encoder(config: Union[EncoderConfig, BertEncoderConfig, AlbertEncoderConfig,
                                ModernBertEncoderConfig],
                  embedding_layer: Optional[tf_keras.layers.Layer] = None) -> tf_keras.Model:
  """Builds the encoder network selected by `config.type` (dict outputs).

  Args:
    config: an `EncoderConfig`, or a bare `BertEncoderConfig` / `AlbertEncoderConfig` /
      `ModernBertEncoderConfig`.
    embedding_layer: an optional word-embedding layer to share (`bert` and `bert_v2` only).

  Returns:
    `type` 'bert': a `BertEncoder`; 'bert_v2': a `BertEncoderV2`; 'albert': an `AlbertEncoder`;
    'modernbert': a `ModernBertEncoder`.
    Their outputs: `sequence_output`, `pooled_output`, `encoder_outputs`.

  Raises:
    ConfigError: no encoder type selected.
    ValueError: `embedding_layer` given for an ALBERT or ModernBERT encoder.

  Example:
    >>> build_encoder(EncoderConfig(type='albert', albert=AlbertEncoderConfig(num_layers=2)))
  """
  if isinstance(config, BertEncoderConfig):
    config = EncoderConfig(type='bert', bert=config)
  elif isinstance(config, AlbertEncoderConfig):
    config = EncoderConfig(type='albert', albert=config)
  elif isinstance(config, ModernBertEncoderConfig):
    config = EncoderConfig(type='modernbert', modernbert=config)
  if config.type == 'albert':
    if embedding_layer is not None:
      raise ValueError('build_encoder: embedding_layer is not supported by the albert encoder '
                       '(AlbertEncoder builds its own factorized embeddings)')
    return networks.AlbertEncoder(**albert_encoder_config.encoder_kwargs(config.albert))
  if config.type == 'modernbert':
    if embedding_layer is not None:
      raise ValueError('build_encoder: embedding_layer is not supported by the modernbert '
                       'encoder (ModernBertEncoder builds its own word embeddings)')
    return networks.ModernBertEncoder(
        **modernbert_encoder_config.encoder_kwargs(config.modernbert))
  if config.type == 'bert':
    return networks.BertEncoder(embedding_layer=embedding_layer,
                                **bert_encoder_config.encoder_kwargs(config.bert))
  if config.type == 'bert_v2':
    return networks.BertEncoderV2(embedding_layer=embedding_layer,
                                  **bert_encoder_config.encoder_kwargs(config.bert_v2))
  raise hyperparams.ConfigError('type', f'no encoder type selected (found {config.type!r}); '
                                f'expected one of {sorted(EncoderConfig.member_names())}')
