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
from official.nlp.modeling import networks
from official.nlp.modeling.networks import bert_encoder_config
# Model Garden's path of the `bert` encoder config; defined beside `BertEncoder`, whose
# `from_config` reads it too.
from official.nlp.modeling.networks.bert_encoder_config import BertEncoderConfig


@dataclasses.dataclass(init=False)
class EncoderConfig(hyperparams.FlatOneOfConfig):
  """The encoder one-of; mlm-garden implements `bert`.

  Model Garden's nested form (`EncoderConfig(type='bert', bert=BertEncoderConfig(...))`,
  `{'type': 'bert', 'bert': {...}}`) and the flat form of how-tos (the member's fields beside
  `type`, also under their Hugging Face / Google names: `EncoderConfig(vocab_size=30522,
  num_hidden_layers=12)`, `{'type': 'bert', 'hidden_size': 768}`) build the same config, from
  keywords, dicts, YAML and `--params_override`. A name that fits no field of the member is
  refused with its path (`hyperparams.flat_oneof`).
  """
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
  bert_encoder_config.check_encoder_type(config.type)
  return networks.BertEncoder(embedding_layer=embedding_layer,
                              **bert_encoder_config.encoder_kwargs(config.bert))

