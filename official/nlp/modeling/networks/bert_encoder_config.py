"""`BertEncoderConfig`: the BERT encoder's hyperparameters, their `BertEncoder` arguments, and their
names in BERT's `bert_config.json` (Google) and `config.json` (Hugging Face).

It sits beside `BertEncoder` so that `BertEncoder.from_config` can read encoder config dicts
without importing the experiment configs; `official.nlp.configs.encoders` (Model Garden's path)
exports `BertEncoderConfig` as the `bert` member of its `EncoderConfig` one-of.

Example:
  >>> config = bert_config_from_dict({'num_hidden_layers': 2, 'hidden_act': 'gelu', ...})
  >>> encoder = BertEncoder(**encoder_kwargs(config))
  >>> external_config(encoder_config_of(encoder), 'hf')['num_hidden_layers']
  2
"""

import dataclasses
import logging
from typing import Any, ClassVar, Dict, Mapping, Optional

import numpy as np
import tf_keras

from official.modeling import hyperparams
from official.modeling import tf_utils

# The external config formats: Hugging Face `config.json`, Google `bert_config.json`.
FORMATS = ('hf', 'google')
# Our LayerNorms use this epsilon (BERT's); other values cannot be represented.
LAYER_NORM_EPSILON = 1e-12


class EncoderConfigChecks:
  """The checks every transformer encoder config shares (BERT's, ALBERT's): heads at most the
  width, a known activation, and `check_seq_length` against `max_position_embeddings`.

  A config class lists it before `hyperparams.Config` and names its `EncoderConfig` member in
  `MEMBER_NAME` (for the error paths).
  """
  MEMBER_NAME: ClassVar[str] = 'bert'

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
          field, f'{seq_length} exceeds model.encoder.{self.MEMBER_NAME}.'
          f'max_position_embeddings={self.max_position_embeddings}')


@dataclasses.dataclass
class BertEncoderConfig(EncoderConfigChecks, hyperparams.Config):
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
    packed_documents: read the `position_ids` of packed rows (records made with `--pack`, read
      with `use_position_id: true`): position embeddings at them, attention within each document.
      Not Model Garden's (it ignores position ids); False changes nothing.

  Flat encoder configs (`{'type': 'bert', 'num_hidden_layers': 12, ...}`) may name the fields as
  Hugging Face's `config.json` / Google's `bert_config.json` do (`FIELD_ALIASES`); the values are
  ours (`hidden_act: gelu` is our 'gelu', the tanh approximation, as in Google's BERT).
  """
  # External names -> our fields (the names both share, e.g. hidden_size, need no alias).
  FIELD_ALIASES: ClassVar[Dict[str, str]] = {
      'num_hidden_layers': 'num_layers', 'hidden_act': 'hidden_activation',
      'hidden_dropout_prob': 'dropout_rate',
      'attention_probs_dropout_prob': 'attention_dropout_rate'}

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
  packed_documents: bool = False


# ---- BertEncoder arguments -------------------------------------------------------------------
# `BertEncoderConfig` field -> the `BertEncoder` argument it sets (`initializer_range` is the
# stddev of `initializer`; `embedding_size` None is `embedding_width` hidden_size).
_ARGUMENTS = {
    'vocab_size': 'vocab_size', 'hidden_size': 'hidden_size', 'num_layers': 'num_layers',
    'num_attention_heads': 'num_attention_heads', 'hidden_activation': 'inner_activation',
    'intermediate_size': 'inner_dim', 'dropout_rate': 'output_dropout',
    'attention_dropout_rate': 'attention_dropout',
    'max_position_embeddings': 'max_sequence_length', 'type_vocab_size': 'type_vocab_size',
    'initializer_range': 'initializer', 'embedding_size': 'embedding_width',
    'output_range': 'output_range', 'return_all_encoder_outputs': 'return_all_encoder_outputs',
    'return_attention_scores': 'return_attention_scores',
    'return_word_embeddings': 'return_word_embeddings', 'norm_first': 'norm_first',
    'packed_documents': 'packed_documents'}


def encoder_kwargs(config: BertEncoderConfig) -> Dict[str, Any]:
  """`BertEncoder` constructor arguments (dict outputs) for a `BertEncoderConfig`.

  Example:
    >>> BertEncoder(**encoder_kwargs(BertEncoderConfig(num_layers=2)))
  """
  kwargs = {argument: getattr(config, field) for field, argument in _ARGUMENTS.items()}
  kwargs.update(
      inner_activation=tf_utils.get_activation(config.hidden_activation),
      initializer=tf_keras.initializers.TruncatedNormal(stddev=config.initializer_range),
      dict_outputs=True)
  return kwargs


def encoder_config_of(encoder: tf_keras.Model) -> BertEncoderConfig:
  """The `BertEncoderConfig` that builds an encoder like `encoder` (a `BertEncoder`).

  Example:
    >>> encoder_config_of(BertEncoder(**encoder_kwargs(config))) == config
    True
  """
  config = encoder.get_config()
  # (A config saved before `packed_documents` existed lacks it: False.)
  values = {field: config.get(argument, False) if argument == 'packed_documents'
            else config[argument] for field, argument in _ARGUMENTS.items()}
  initializer = config.get('initializer') or {}
  stddev = (initializer.get('config') or {}).get('stddev', 0.02) if isinstance(
      initializer, dict) else 0.02
  values['initializer_range'] = float(stddev)
  if config['embedding_width'] == config['hidden_size']:
    values['embedding_size'] = None
  return BertEncoderConfig(**values)


# ---- Google / Hugging Face config names ------------------------------------------------------
# Our activation name -> the external `hidden_act`. Hugging Face's 'gelu' is the exact erf GELU,
# Google's (TF1 modeling.py) 'gelu' the tanh approximation, which is our 'gelu'.
_ACTIVATIONS = {
    'hf': {'gelu': 'gelu_new', 'exact_gelu': 'gelu', 'relu': 'relu', 'tanh': 'tanh',
           'swish': 'silu', 'silu': 'silu', 'linear': 'linear'},
    'google': {'gelu': 'gelu', 'relu': 'relu', 'tanh': 'tanh', 'linear': 'linear'},
}
# External names that read back to ours besides the inverse of `_ACTIVATIONS`.
_ACTIVATION_ALIASES = {
    'hf': {'gelu_pytorch_tanh': 'gelu', 'gelu_fast': 'gelu', 'swish': 'swish'},
    'google': {},
}
# Field names only a BERT `bert_config.json` / `config.json` has, and those only Hugging Face's.
_EXTERNAL_KEYS = frozenset(BertEncoderConfig.FIELD_ALIASES)
_HF_KEYS = frozenset({'model_type', 'architectures', 'layer_norm_eps', 'transformers_version'})


def _field(config: Mapping[str, Any], key: str, source: str, default: Any = None) -> Any:
  if key in config:
    return config[key]
  if default is None:
    raise ValueError(f'{source}: missing field {key!r}; expected a complete BERT config '
                     '(incomplete file?)')
  return default


def _int_field(config: Mapping[str, Any], key: str, source: str) -> int:
  """A positive integer field (JSON's `12` or `12.0`), else a ValueError naming it."""
  value = _field(config, key, source)
  if (isinstance(value, bool) or not isinstance(value, (int, float))
      or float(value) != int(value) or int(value) < 1):
    raise ValueError(f'{source}: field {key!r} is {value!r}; expected a positive integer')
  return int(value)


def _float_field(config: Mapping[str, Any], key: str, source: str, default: float) -> float:
  """A number field with a default, else a ValueError naming it."""
  value = _field(config, key, source, default)
  if isinstance(value, bool) or not isinstance(value, (int, float)):
    raise ValueError(f'{source}: field {key!r} is {value!r}; expected a number')
  return float(value)


def activation_from_external(name: str, fmt: str, source: str) -> str:
  """An external `hidden_act` -> our activation name (ours are accepted as they are).

  Example:
    >>> activation_from_external('gelu', 'hf', 'config.json')
    'exact_gelu'
  """
  inverse = {ext: ours for ours, ext in _ACTIVATIONS[fmt].items()}
  inverse.update(_ACTIVATION_ALIASES[fmt])
  if name in inverse:
    return inverse[name]
  if name in _ACTIVATIONS['hf']:  # one of our names, written when there is no external one
    return name
  raise ValueError(f'{source}: unsupported hidden_act {name!r}; expected one of '
                   f'{sorted(inverse)}')


def activation_to_external(name: str, fmt: str) -> str:
  """Our activation name -> the external `hidden_act` (ours, with a warning, when none exists).

  Example:
    >>> activation_to_external('gelu', 'hf')
    'gelu_new'
  """
  if name in _ACTIVATIONS[fmt]:
    return _ACTIVATIONS[fmt][name]
  logging.warning('activation %r has no %s name; writing it as it is', name, fmt)
  return name


def encoder_config_from_external(config: Mapping[str, Any], fmt: str,
                                 source: str) -> BertEncoderConfig:
  """A BERT `config.json` (`fmt` 'hf') / `bert_config.json` ('google') dict -> `BertEncoderConfig`.

  Raises:
    ValueError: a missing field, or a setting our encoder cannot represent (naming `source`).

  Example:
    >>> encoder_config_from_external(read_json_config('bert_config.json'), 'google',
    ...                              'bert_config.json').num_layers
    12
  """
  eps = _float_field(config, 'layer_norm_eps', source, LAYER_NORM_EPSILON)
  if not np.isclose(eps, LAYER_NORM_EPSILON, rtol=1e-6, atol=0):
    raise ValueError(f'{source}: layer_norm_eps {eps} is not supported; our LayerNorms use '
                     f'{LAYER_NORM_EPSILON}')
  position_type = config.get('position_embedding_type', 'absolute')
  if position_type != 'absolute':
    raise ValueError(f'{source}: position_embedding_type {position_type!r} is not supported; '
                     "expected 'absolute'")
  embedding_size = config.get('embedding_size')
  hidden_size = _int_field(config, 'hidden_size', source)
  if embedding_size not in (None, hidden_size):
    raise ValueError(f'{source}: embedding_size {embedding_size} != hidden_size {hidden_size} '
                     '(factorized embeddings) is not supported')
  hidden_act = _field(config, 'hidden_act', source)
  if not isinstance(hidden_act, str):
    raise ValueError(f'{source}: field \'hidden_act\' is {hidden_act!r}; expected an activation '
                     "name such as 'gelu'")
  return BertEncoderConfig(
      vocab_size=_int_field(config, 'vocab_size', source),
      hidden_size=hidden_size,
      num_layers=_int_field(config, 'num_hidden_layers', source),
      num_attention_heads=_int_field(config, 'num_attention_heads', source),
      hidden_activation=activation_from_external(hidden_act, fmt, source),
      intermediate_size=_int_field(config, 'intermediate_size', source),
      dropout_rate=_float_field(config, 'hidden_dropout_prob', source, 0.1),
      attention_dropout_rate=_float_field(config, 'attention_probs_dropout_prob', source, 0.1),
      max_position_embeddings=_int_field(config, 'max_position_embeddings', source),
      type_vocab_size=_int_field(config, 'type_vocab_size', source),
      initializer_range=_float_field(config, 'initializer_range', source, 0.02))


def external_config(config: BertEncoderConfig, fmt: str) -> Dict[str, Any]:
  """Our `BertEncoderConfig` -> the fields of a BERT `config.json` / `bert_config.json`.

  Example:
    >>> external_config(BertEncoderConfig(num_layers=2), 'google')['num_hidden_layers']
    2
  """
  result = dict(
      vocab_size=config.vocab_size, hidden_size=config.hidden_size,
      num_hidden_layers=config.num_layers, num_attention_heads=config.num_attention_heads,
      intermediate_size=config.intermediate_size,
      hidden_act=activation_to_external(config.hidden_activation, fmt),
      hidden_dropout_prob=config.dropout_rate,
      attention_probs_dropout_prob=config.attention_dropout_rate,
      max_position_embeddings=config.max_position_embeddings,
      type_vocab_size=config.type_vocab_size, initializer_range=config.initializer_range)
  if fmt == 'hf':
    result.update(layer_norm_eps=LAYER_NORM_EPSILON, position_embedding_type='absolute',
                  pad_token_id=0)
  return result


def check_encoder_type(kind: Optional[str]) -> None:
  """Raises a ConfigError naming `type` unless the encoder one-of selects 'bert'.

  Example:
    >>> check_encoder_type('albert')
    ConfigError: type: unsupported encoder type 'albert'; mlm-garden implements ['bert']
  """
  if kind != 'bert':
    raise hyperparams.ConfigError('type', f'unsupported encoder type {kind!r}; mlm-garden '
                                  "implements ['bert']")


def bert_config_from_dict(config: Mapping[str, Any]) -> BertEncoderConfig:
  """A `BertEncoderConfig` from a plain dict in any of the layouts how-tos use.

  Accepted: an `EncoderConfig` dict (`{'type': 'bert', 'bert': {...}}`, e.g.
  `EncoderConfig(...).as_dict()`), the flat form with `type` beside the fields (our names or
  `BertEncoderConfig.FIELD_ALIASES`: `{'type': 'bert', 'num_hidden_layers': 12}`; missing fields
  take their defaults, `vocab_size` 30522), the `bert` part alone (`BertEncoderConfig` field
  names), or a complete BERT `bert_config.json` / Hugging Face `config.json` dict
  (`num_hidden_layers`, `hidden_act`, `hidden_dropout_prob`, ...). `BertEncoderConfig` names are
  checked strictly: a misspelt key raises, naming it.

  Args:
    config: the dict.

  Returns:
    The validated `BertEncoderConfig`.

  Example:
    >>> bert_config_from_dict({'type': 'bert', 'bert': {'num_layers': 2}}).num_layers
    2
    >>> bert_config_from_dict({'type': 'bert', 'num_hidden_layers': 2}).num_layers
    2
  """
  config = dict(config)
  if 'type' in config or 'bert' in config:
    check_encoder_type(config.get('type') or 'bert')
    config = hyperparams.nest_flat_fields(config, {'bert': BertEncoderConfig}, 'bert')
    config = dict(config.get('bert') or {})
  if _EXTERNAL_KEYS & set(config):
    fmt = 'hf' if _HF_KEYS & set(config) else 'google'
    bert = encoder_config_from_external(config, fmt, source='encoder config')
  else:
    bert = BertEncoderConfig.from_dict(config)
  bert.validate()
  return bert
