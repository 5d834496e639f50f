"""`AlbertEncoderConfig`: the ALBERT encoder's hyperparameters, their `AlbertEncoder` arguments, and
their names in Google's `albert_config.json`.

`official.nlp.configs.encoders` (Model Garden's path) exports it as the `albert` member of its
`EncoderConfig` one-of.

Example:
  >>> config = AlbertEncoderConfig(vocab_size=100, embedding_width=8, hidden_size=16, num_layers=2,
  ...                              num_attention_heads=2, intermediate_size=64)
  >>> encoder = AlbertEncoder(**encoder_kwargs(config))
"""

import dataclasses
from typing import Any, ClassVar, Dict, Mapping

import tf_keras

from official.modeling import hyperparams
from official.modeling import tf_utils
from official.nlp.modeling.networks import bert_encoder_config


@dataclasses.dataclass
class AlbertEncoderConfig(bert_encoder_config.EncoderConfigChecks, hyperparams.Config):
  """ALBERT encoder sizes and regularization (Model Garden field names and defaults).

  Attributes:
    vocab_size: rows of the word embedding table.
    embedding_width: width of the word embeddings (projected to hidden_size when different).
    hidden_size: width of the shared transformer block.
    num_layers: how many times the shared block is applied.
    num_attention_heads: attention heads.
    hidden_activation: activation of the feed-forward layer ('gelu' is the tanh approximation).
    intermediate_size: width of the feed-forward layer.
    dropout_rate: dropout after embeddings, attention output and feed-forward (ALBERT: 0).
    attention_dropout_rate: dropout on the attention probabilities (ALBERT: 0).
    max_position_embeddings: longest sequence the position table holds.
    type_vocab_size: segment (token type) ids.
    initializer_range: stddev of the truncated-normal initializer.

  Flat encoder configs (`{'type': 'albert', 'num_hidden_layers': 12}`) may name the fields as
  Google's `albert_config.json` does (`FIELD_ALIASES`).
  """
  MEMBER_NAME: ClassVar[str] = 'albert'
  FIELD_ALIASES: ClassVar[Dict[str, str]] = dict(
      bert_encoder_config.BertEncoderConfig.FIELD_ALIASES, embedding_size='embedding_width')

  vocab_size: int = hyperparams.field(30000, ge=1)
  embedding_width: int = hyperparams.field(128, ge=1)
  hidden_size: int = hyperparams.field(768, ge=1)
  num_layers: int = hyperparams.field(12, ge=1)
  num_attention_heads: int = hyperparams.field(12, ge=1)
  hidden_activation: str = 'gelu'
  intermediate_size: int = hyperparams.field(3072, ge=1)
  dropout_rate: float = hyperparams.field(0.0, ge=0.0, lt=1.0)
  attention_dropout_rate: float = hyperparams.field(0.0, ge=0.0, lt=1.0)
  max_position_embeddings: int = hyperparams.field(512, ge=1)
  type_vocab_size: int = hyperparams.field(2, ge=1)
  initializer_range: float = hyperparams.field(0.02, gt=0.0)



def encoder_kwargs(config: AlbertEncoderConfig) -> Dict[str, Any]:
  """`AlbertEncoder` constructor arguments (dict outputs) for an `AlbertEncoderConfig`.

  Example:
    >>> AlbertEncoder(**encoder_kwargs(AlbertEncoderConfig(num_layers=2)))
  """
  return dict(
      vocab_size=config.vocab_size, embedding_width=config.embedding_width,
      hidden_size=config.hidden_size, num_layers=config.num_layers,
      num_attention_heads=config.num_attention_heads,
      max_sequence_length=config.max_position_embeddings,
      type_vocab_size=config.type_vocab_size, intermediate_size=config.intermediate_size,
      activation=tf_utils.get_activation(config.hidden_activation),
      dropout_rate=config.dropout_rate, attention_dropout_rate=config.attention_dropout_rate,
      initializer=tf_keras.initializers.TruncatedNormal(stddev=config.initializer_range),
      dict_outputs=True)


# Google ALBERT settings our encoder (one group of one shared layer) can represent, and their
# required values.
_ALBERT_ONLY_FIELDS = {'num_hidden_groups': 1, 'inner_group_num': 1, 'net_structure_type': 0,
                       'down_scale_factor': 1, 'gap_size': 0, 'num_memory_blocks': 0}


def albert_config_from_external(config: Mapping[str, Any], source: str) -> AlbertEncoderConfig:
  """Google's `albert_config.json` dict -> `AlbertEncoderConfig`.

  The BERT fields are read as `bert_encoder_config.encoder_config_from_external` reads them
  (Google's 'gelu' is the tanh approximation; a missing field or a layer-norm epsilon other than
  1e-12 is refused), plus `embedding_size`.

  Raises:
    ValueError: a missing field, or a setting our encoder cannot represent (naming `source`).

  Example:
    >>> albert_config_from_external(read_json_config('albert_config.json'),
    ...                             'albert_config.json').embedding_width
    128
  """
  for key, required in _ALBERT_ONLY_FIELDS.items():
    if config.get(key, required) != required:
      raise ValueError(f'{source}: {key} {config[key]!r} is not supported; AlbertEncoder '
                       f'expects {required} (one group of one shared layer)')
  embedding_size = config.get('embedding_size')
  if (isinstance(embedding_size, bool) or not isinstance(embedding_size, (int, float))
      or float(embedding_size) != int(embedding_size) or embedding_size < 1):
    raise ValueError(f'{source}: field \'embedding_size\' is {embedding_size!r}; expected a '
                     'positive integer')
  bert_fields = {key: value for key, value in config.items()
                 if key != 'embedding_size' and key not in _ALBERT_ONLY_FIELDS}
  bert = bert_encoder_config.encoder_config_from_external(bert_fields, 'google', source)
  values = {field.name: getattr(bert, field.name) for field in dataclasses.fields(
      AlbertEncoderConfig) if hasattr(bert, field.name)}
  albert = AlbertEncoderConfig(embedding_width=int(embedding_size), **values)
  albert.validate()
  return albert
