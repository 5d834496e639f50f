"""Encoder configs and `build_encoder`: the `task.model.encoder` block of an experiment.

The types are the registered encoder families (`networks.encoder_family`: `albert`, `bert`,
`bert_v2`, `modernbert`, and any a plug-in registers) and Model Garden's `any`, an encoder built
by the `BUILDER` bound (`hyperparams.bind`) to the config class of the `any` member.

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
  >>> @hyperparams.bind(MyEncoderConfig)
  ... def build_my_encoder(config): return MyEncoder(config.width)
  >>> build_encoder(EncoderConfig(type='any', any=MyEncoderConfig(width=8)))  # a MyEncoder
"""

import dataclasses
from typing import Any, Dict, Mapping, Optional

import tf_keras

from official.modeling import hyperparams
# Its package's encoder modules register the built-in families.
from official.nlp.modeling.networks import encoder_family
# Model Garden's paths of the member configs; each is defined beside its encoder.
from official.nlp.modeling.networks.albert_encoder_config import AlbertEncoderConfig
from official.nlp.modeling.networks.bert_encoder_config import BertEncoderConfig
from official.nlp.modeling.networks.modernbert_encoder_config import ModernBertEncoderConfig

# Encoder types of Model Garden's `EncoderConfig` that mlm-garden does not implement: selecting
# one fails at once, naming it.
MODEL_GARDEN_ONLY_TYPES = ('bigbird', 'fnet', 'funnel', 'kernel', 'mobilebert', 'query_bert',
                           'reuse', 'sparse_mixer', 'teams', 'xlnet')


@dataclasses.dataclass(init=False, eq=False)
class EncoderConfig(hyperparams.FlatOneOfConfig):
  """The encoder one-of: a member per registered encoder family, plus Model Garden's `any`.

  Declared members (Model Garden's class shape): `albert`, `bert`, `bert_v2` (a `BertEncoderV2`),
  `modernbert`, and `any` (a config whose class has a builder bound with `hyperparams.bind`;
  `build_encoder` calls `config.any.BUILDER(config.any)`). A family registered with
  `encoder_family.register_encoder_family` is a member too (`extra_members`), from the moment it
  is registered, in every form below.

  Model Garden's nested form (`EncoderConfig(type='bert', bert=BertEncoderConfig(...))`,
  `{'type': 'bert', 'bert': {...}}`) and the flat form of how-tos (the member's fields beside
  `type`, also under their Hugging Face / Google names: `EncoderConfig(vocab_size=30522,
  num_hidden_layers=12)`, `{'type': 'albert', 'embedding_size': 128}`) build the same config, from
  keywords, dicts, YAML and `--params_override`. A name that fits no field of the member is
  refused with its path (`hyperparams.flat_oneof`). Setting `type` to anything else (Model
  Garden's other encoders included) raises a `ConfigError` naming `type`, the value and the
  registered families, whichever way it is set.
  """
  type: Optional[str] = 'bert'
  albert: AlbertEncoderConfig = dataclasses.field(default_factory=AlbertEncoderConfig)
  bert: BertEncoderConfig = dataclasses.field(default_factory=BertEncoderConfig)
  bert_v2: BertEncoderConfig = dataclasses.field(default_factory=BertEncoderConfig)
  modernbert: ModernBertEncoderConfig = dataclasses.field(default_factory=ModernBertEncoderConfig)
  # If `any` is used, the encoder is built by `any.BUILDER` (Model Garden's escape hatch).
  any: hyperparams.Config = dataclasses.field(default_factory=hyperparams.Config)

  @classmethod
  def extra_members(cls) -> Dict[str, type]:
    """The member config class of every registered family (the declared ones are kept)."""
    return {name: family.config_cls for name, family in encoder_family.families().items()}

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
    supported = sorted(encoder_family.names())
    if kind in MODEL_GARDEN_ONLY_TYPES:
      message = (f'{kind!r} is a Model Garden encoder type that mlm-garden does not implement; '
                 f'supported types: {supported}')
    else:
      message = f'unknown encoder type {kind!r}; supported types: {supported}'
    raise hyperparams.ConfigError(f'{path}.type' if path else 'type', message)


def build_encoder(config: Any,
                  embedding_layer: Optional[tf_keras.layers.Layer] = None) -> tf_keras.Model:
  """Builds the encoder network selected by `config.type` (dict outputs).

  Args:
    config: an `EncoderConfig`, or a bare member config of a registered family
      (`BertEncoderConfig` builds a `bert` encoder, `AlbertEncoderConfig` an `albert` one, ...).
    embedding_layer: an optional word-embedding layer to share (families that take one: `bert`
      and `bert_v2`).

  Returns:
    The family's encoder (`bert`: a `BertEncoder`; `bert_v2`: a `BertEncoderV2`; `albert`: an
    `AlbertEncoder`; `modernbert`: a `ModernBertEncoder`), with outputs `sequence_output`,
    `pooled_output`, `encoder_outputs`; for `any`, what `config.any.BUILDER(config.any)` returns.

  Raises:
    ConfigError: no encoder type selected; `any` selected with a config class without a builder.
    ValueError: `embedding_layer` given for a family that builds its own embeddings; a `BUILDER`
      that returns no Keras layer or model.

  Example:
    >>> build_encoder(EncoderConfig(type='albert', albert=AlbertEncoderConfig(num_layers=2)))
  """
  if not isinstance(config, EncoderConfig):
    family = encoder_family.family_of_config(config)
    if family is None:
      raise TypeError(f'build_encoder takes an EncoderConfig or the member config of a '
                      f'registered encoder family, found {type(config).__name__}; registered: '
                      f'{sorted(encoder_family.names())}')
    config = EncoderConfig(type=family.name, **{family.name: config})
  if config.type == 'any':
    return _build_any(config.any, embedding_layer)
  family = encoder_family.get(config.type) if config.type else None
  if family is None:
    raise hyperparams.ConfigError('type', f'no encoder type selected (found {config.type!r}); '
                                  f'expected one of {sorted(encoder_family.names())} or any')
  member = getattr(config, family.name)
  if embedding_layer is None:
    return family.build(member)
  if not family.takes_embedding_layer:
    builds = (family.encoder_classes[0].__name__ if family.encoder_classes
              else 'the encoder')
    raise ValueError(f'build_encoder: embedding_layer is not supported by the {family.name} '
                     f'encoder ({builds} builds its own word embeddings)')
  return family.build(member, embedding_layer=embedding_layer)


def _build_any(config: hyperparams.Config,
               embedding_layer: Optional[tf_keras.layers.Layer]) -> tf_keras.layers.Layer:
  """Model Garden's `type: any`: `config.BUILDER(config)`, checked to be a Keras layer or model."""
  builder = config.BUILDER
  if builder is None:
    raise hyperparams.ConfigError('any', f"type 'any' needs a config class with a builder; "
                                  f'{type(config).__name__} has none (bind one with '
                                  '`@hyperparams.bind(ConfigClass)`)')
  if embedding_layer is not None:
    raise ValueError("build_encoder: embedding_layer is not supported by type 'any' (its "
                     'BUILDER takes the config only)')
  encoder = builder(config)
  if not isinstance(encoder, tf_keras.layers.Layer):
    raise ValueError(f"build_encoder: the BUILDER of {type(config).__name__} (type 'any') "
                     f'returned {type(encoder).__module__}.{type(encoder).__name__}; expected a '
                     'Keras layer or model (tf_keras.layers.Layer, tf_keras.Model)')
  return encoder
