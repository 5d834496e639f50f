"""Encoder families as plug-ins: one `EncoderFamily` record per `task.model.encoder.type`.

A family is everything the rest of the tree needs to know about one kind of encoder: the name
`EncoderConfig.type` selects, its member config class, its builder, the masked-LM head that goes
with it, and, where it has them, its Google / Hugging Face checkpoint readers and writers, its
weight map and its FLOP count. `register_encoder_family` adds one; `build_encoder`,
`EncoderConfig`, `BertPretrainerV2`, `convert_checkpoint` and `model_flops` look families up here
instead of switching on the type. BERT, `bert_v2`, ALBERT and ModernBERT register beside their
encoders (`bert_encoder.py`, `albert_encoder.py`, `modernbert_encoder.py`), so importing this
module (its package `official.nlp.modeling.networks` imports them) registers them.

A record's checkpoint, weight-map and FLOP functions live in `official.nlp.tools`, a layer above
this one, so a built-in family names them as `'module:function'` strings; `resolve` imports them
when a tool asks. A plug-in family may give the functions themselves.

Example:
  >>> register_encoder_family(EncoderFamily(
  ...     name='toy', config_cls=ToyConfig, build=lambda config: ToyEncoder(config.width),
  ...     encoder_classes=(ToyEncoder,)))
  >>> EncoderConfig(type='toy', toy=ToyConfig(width=8))   # build_encoder makes a ToyEncoder
"""

import dataclasses
import importlib
from typing import Any, Callable, Dict, Optional, Tuple, Union

import tf_keras

# A function, or the 'package.module:function' path of one in a layer above (see `resolve`).
FunctionRef = Union[str, Callable[..., Any]]

# The external checkpoint formats a family may read and write (`EncoderFamily` fields).
FORMATS = ('hf', 'google')
FORMAT_NAMES = {'hf': 'Hugging Face', 'google': 'Google BERT'}


# Member names of `EncoderConfig` that are not families.
RESERVED_NAMES = {'type': "the one-of's selector",
                  'any': "Model Garden's encoder built by a bound config's BUILDER"}


class EmbeddingAccessors:
  """Model Garden's word-embedding accessors, for an encoder that keeps its word-embedding layer
  in `_embedding_layer` (BERT, `bert_v2`, ModernBERT); the masked-LM head ties to the table.

  Example:
    >>> encoder.get_embedding_table().shape   # [vocab_size, embedding_width]
  """

  def get_embedding_table(self) -> Any:
    """The word-embedding variable [vocab_size, embedding_width]."""
    return self._embedding_layer.embeddings

  def get_embedding_layer(self) -> tf_keras.layers.Layer:
    """The word-embedding layer."""
    return self._embedding_layer


def bert_masked_lm_options(encoder: tf_keras.layers.Layer) -> Dict[str, Any]:
  """BERT's masked-LM head: `layers.MaskedLM`'s defaults (dense and LayerNorm with bias, eps 1e-12).

  Returns:
    `{}`: no argument differs from `MaskedLM`'s defaults, so variable names and checkpoint keys
    stay Model Garden's (whatever the encoder).
  """
  del encoder  # the same head for every BERT-like encoder
  return {}


@dataclasses.dataclass(frozen=True)
class CheckpointFormat:
  """How one family's checkpoints of an external format ('hf' or 'google') are read and written.

  Attributes:
    read: `(path, allow_unused) -> model`: an encoder, or a `BertPretrainerV2` when the checkpoint
      has a masked-LM head. None: the family writes this format but reading gives another
      family's model (`bert_v2` checkpoints read as `bert`).
    write: `(model, out_dir, vocab_file) -> out_dir`.
    recognizes: `(path) -> bool`: whether the checkpoint at `path` is this family's. None: the
      format's fallback reader, tried after every family that recognizes its own.
    config: `(model) -> dict`: the external config file's content (Hugging Face `config.json`).
  """
  read: Optional[FunctionRef]
  write: FunctionRef
  recognizes: Optional[FunctionRef] = None
  config: Optional[FunctionRef] = None


@dataclasses.dataclass(frozen=True)
class EncoderFamily:
  """One encoder family: the `EncoderConfig.type` name and what the tree needs to know about it.

  Attributes:
    name: the `type` value and the `EncoderConfig` member name (a Python identifier).
    config_cls: the member config class (a `hyperparams.Config` dataclass). The tasks read its
      `vocab_size`, `initializer_range` and `dropout_rate` and call its
      `check_seq_length(field, seq_length)` (`bert_encoder_config.EncoderConfigChecks` has one).
    build: `(member config) -> encoder`, a Keras model whose outputs hold `sequence_output` (and
      `pooled_output` for classification heads) and, for a tied masked-LM head, with a
      `get_embedding_table()`; called as `build(config, embedding_layer=...)` when a shared
      word-embedding layer is given (only if `takes_embedding_layer`).
    encoder_classes: the classes `build` makes; a model of one of them is this family's
      (`family_of_encoder`).
    takes_embedding_layer: whether `build` accepts a shared `embedding_layer`.
    masked_lm_options: `(encoder) -> dict`: the `layers.MaskedLM` keyword arguments of the
      pretrainer's head (tied to `encoder.get_embedding_table()`): e.g. `use_bias`,
      `norm_use_bias`, `norm_epsilon`. Default: BERT's head.
    config_of: `(encoder) -> member config` that builds an encoder like it (our checkpoints'
      `params.yaml`).
    count_flops: `(member config, seq_length) -> (forward FLOPs by part, width of the word table
      the masked-LM head decodes with)`, as `model_flops` counts them.
    hf: the family's Hugging Face checkpoints, if any.
    google: the family's Google (TF1) BERT checkpoints, if any.
    weight_map: `(model) -> [bert_weight_map.WeightEntry]`: our variables and their external
      names, for the model's export.
    title: the family's name in messages (default: "the <name> encoder family").

  Example:
    >>> EncoderFamily(name='toy', config_cls=ToyConfig, build=build_toy,
    ...               encoder_classes=(ToyEncoder,))
  """
  name: str
  config_cls: type
  build: Callable[..., tf_keras.layers.Layer]
  encoder_classes: Tuple[type, ...] = ()
  takes_embedding_layer: bool = False
  masked_lm_options: Callable[[tf_keras.layers.Layer], Dict[str, Any]] = bert_masked_lm_options
  config_of: Optional[FunctionRef] = None
  count_flops: Optional[FunctionRef] = None
  hf: Optional[CheckpointFormat] = None
  google: Optional[CheckpointFormat] = None
  weight_map: Optional[FunctionRef] = None
  title: Optional[str] = None

  @property
  def display_name(self) -> str:
    """`title`, or "the <name> encoder family"."""
    return self.title or f'the {self.name} encoder family'

  def checkpoint_format(self, fmt: str) -> Optional[CheckpointFormat]:
    """The family's `CheckpointFormat` of `fmt` ('hf' or 'google'), or None."""
    if fmt not in FORMATS:
      raise ValueError(f'checkpoint format must be one of {list(FORMATS)}, found {fmt!r}')
    return getattr(self, fmt)


# name -> family, in registration order.
_FAMILIES: Dict[str, EncoderFamily] = {}


def register_encoder_family(family: EncoderFamily) -> EncoderFamily:
  """Adds `family`: its name becomes an `EncoderConfig.type` (and member) everywhere.

  Args:
    family: the record.

  Returns:
    `family` (so that a module may keep it).

  Raises:
    ValueError: the name is taken (by a family or a reserved member such as Model Garden's
      `any`), is not an identifier, or a field has the wrong kind.

  Example:
    >>> register_encoder_family(EncoderFamily(name='toy', config_cls=ToyConfig, build=build_toy))
  """
  if not isinstance(family, EncoderFamily):
    raise ValueError(f'register_encoder_family takes an EncoderFamily, found {family!r}')
  name = family.name
  if not isinstance(name, str) or not name.isidentifier() or name.startswith('_'):
    raise ValueError(f'encoder family name {name!r}: expected a Python identifier not starting '
                     'with "_" (it becomes a config field)')
  if name in _FAMILIES:
    raise ValueError(f'encoder family {name!r} is already registered (by '
                     f'{_FAMILIES[name].build.__module__}); expected a new name')
  if name in RESERVED_NAMES:
    raise ValueError(f'encoder family name {name!r} is reserved ({RESERVED_NAMES[name]}); '
                     'expected another name')
  if not isinstance(family.config_cls, type) or not dataclasses.is_dataclass(family.config_cls):
    raise ValueError(f'encoder family {name!r}: config_cls must be a config dataclass, found '
                     f'{family.config_cls!r}')
  if not callable(family.build):
    raise ValueError(f'encoder family {name!r}: build must be callable, found {family.build!r}')
  for fmt in FORMATS:
    value = getattr(family, fmt)
    if value is not None and not isinstance(value, CheckpointFormat):
      raise ValueError(f'encoder family {name!r}: {fmt} must be a CheckpointFormat or None, '
                       f'found {value!r}')
  _FAMILIES[name] = family
  return family


def unregister_encoder_family(name: str) -> EncoderFamily:
  """Removes the family `name` (for tests and interactive reloads); returns its record.

  Raises:
    KeyError: no such family.
  """
  if name not in _FAMILIES:
    raise KeyError(f'no encoder family {name!r}; registered: {sorted(_FAMILIES)}')
  return _FAMILIES.pop(name)


def names() -> Tuple[str, ...]:
  """The registered family names, in registration order."""
  return tuple(_FAMILIES)


def families() -> Dict[str, EncoderFamily]:
  """A copy of the registry: name -> family, in registration order."""
  return dict(_FAMILIES)


def get(name: str) -> Optional[EncoderFamily]:
  """The family `name`, or None."""
  return _FAMILIES.get(name)


def family_of_config(config: Any) -> Optional[EncoderFamily]:
  """The family whose member config class `config` is (the first registered when two share one,
  e.g. `bert` before `bert_v2`), searched from its own class up its bases; or None.

  Example:
    >>> family_of_config(BertEncoderConfig()).name
    'bert'
  """
  for cls in type(config).__mro__:
    for family in _FAMILIES.values():
      if family.config_cls is cls:
        return family
  return None


def family_of_encoder(encoder: Any) -> Optional[EncoderFamily]:
  """The family whose `encoder_classes` holds the class of `encoder` (or its nearest base).

  Example:
    >>> family_of_encoder(BertEncoderV2(vocab_size=10, num_layers=1)).name
    'bert_v2'
  """
  for cls in type(encoder).__mro__:
    for family in _FAMILIES.values():
      if cls in family.encoder_classes:
        return family
  return None


def family_of_model(model: Any) -> Optional[EncoderFamily]:
  """The family of an encoder, or of the `encoder_network` of a pretrainer on one."""
  return family_of_encoder(getattr(model, 'encoder_network', model))


def resolve(ref: Optional[FunctionRef]) -> Optional[Callable[..., Any]]:
  """The function of a record field: itself, or the one a 'package.module:function' path names
  (its module imported now). None stays None.

  Raises:
    ValueError: a path that is not 'module:function', or names nothing.

  Example:
    >>> resolve('official.nlp.tools.model_flops:bert_flops')
    <function bert_flops at ...>
  """
  if ref is None or callable(ref):
    return ref
  module_name, sep, attribute = str(ref).partition(':')
  if not sep or not module_name or not attribute:
    raise ValueError(f"encoder family function {ref!r}: expected 'package.module:function'")
  try:
    return getattr(importlib.import_module(module_name), attribute)
  except (ImportError, AttributeError) as e:
    raise ValueError(f'encoder family function {ref!r}: cannot be loaded ({e})') from None
