"""`official.nlp.tasks.masked_lm.cfg`: Model Garden's config definitions for masked-LM pretraining.

Model Garden's `masked_lm` module imports `official.core.config_definitions` as `cfg`, and user
code (a popular how-to included) writes `masked_lm.cfg.DataConfig(input_path=..., seq_length=512,
max_predictions_per_seq=76)` for the task's data. The generic `DataConfig` has no pretraining
fields, so in Model Garden that call fails. Here `masked_lm.cfg` is this module:

- Every name of `official.core.config_definitions` is re-exported unchanged (`TaskConfig`,
  `ExperimentConfig`, `TrainerConfig`, `RuntimeConfig`, ...), except `DataConfig`.
- `DataConfig(...)` given a pretraining field (a field of
  `pretrain_dataloader.BertPretrainDataConfig` that the generic `DataConfig` lacks:
  `seq_length`, `max_predictions_per_seq`, `use_next_sentence_label`, `use_position_id`,
  `use_v2_feature_names`, `file_type`, `verify_records`), as a keyword or a key of the
  `default_params` dict, builds and returns a `BertPretrainDataConfig` (with its defaults:
  `global_batch_size=512`, `is_training=True`, ...). `DataConfig.from_dict` and `from_yaml`
  route the same way.
- Without one it returns the generic `config_definitions.DataConfig`, exactly Model Garden's.
- Both are `isinstance(x, DataConfig)`, as `issubclass(BertPretrainDataConfig, DataConfig)` is
  True: `DataConfig` here answers type checks as `config_definitions.DataConfig` does. A subclass
  of it is an ordinary config class (no routing).

Nothing else changes: the generic `config_definitions.DataConfig` stays strict
(`config_definitions.DataConfig(seq_length=128)` raises), and the YAML, `params_override` and
`override` paths build the class a field declares (`MaskedLMConfig.train_data` is a
`BertPretrainDataConfig`), never this one. A misspelt field is refused naming it and the closest
field.

Example:
  >>> from official.nlp.tasks import masked_lm
  >>> data = masked_lm.cfg.DataConfig(input_path='train.tfrecord', global_batch_size=32,
  ...                                 seq_length=128, max_predictions_per_seq=20)
  >>> type(data).__name__, isinstance(data, masked_lm.cfg.DataConfig)
  ('BertPretrainDataConfig', True)
  >>> type(masked_lm.cfg.DataConfig(input_path='train.tfrecord')).__module__
  'official.core.config_definitions'
"""

import dataclasses
import difflib
from typing import Any, FrozenSet, Mapping, Tuple

from official.core import config_definitions
# Model Garden's `cfg` names, re-exported (any other through `__getattr__` below).
# pylint: disable=unused-import
from official.core.config_definitions import DISTRIBUTION_STRATEGIES
from official.core.config_definitions import ExperimentConfig
from official.core.config_definitions import MIXED_PRECISION_DTYPES
from official.core.config_definitions import OptimizationConfig
from official.core.config_definitions import RuntimeConfig
from official.core.config_definitions import TaskConfig
from official.core.config_definitions import TrainerConfig
# pylint: enable=unused-import
from official.modeling import hyperparams
from official.nlp.data import pretrain_dataloader

_GENERIC = config_definitions.DataConfig
_PRETRAINING = pretrain_dataloader.BertPretrainDataConfig


def _field_names(config_cls: type) -> FrozenSet[str]:
  return frozenset(f.name for f in dataclasses.fields(config_cls))


# The fields that make `DataConfig(...)` a `BertPretrainDataConfig`.
PRETRAINING_FIELDS: FrozenSet[str] = _field_names(_PRETRAINING) - _field_names(_GENERIC)


def _given_keys(args: Tuple[Any, ...], kwargs: Mapping[str, Any]) -> FrozenSet[str]:
  """The field names of a constructor call: keywords and the keys of `default_params`."""
  keys = set(kwargs) - {'default_params', 'restrictions'}
  default_params = args[0] if args else kwargs.get('default_params')
  if isinstance(default_params, hyperparams.ParamsDict):
    default_params = default_params.as_dict()
  if isinstance(default_params, Mapping):
    keys.update(str(key) for key in default_params)
  return frozenset(keys)


def data_config_class(keys: FrozenSet[str]) -> type:
  """The class `DataConfig(...)` builds for these field names.

  Example:
    >>> data_config_class(frozenset({'input_path', 'seq_length'})).__name__
    'BertPretrainDataConfig'
  """
  return _PRETRAINING if keys & PRETRAINING_FIELDS else _GENERIC


def _check_keywords(config_cls: type, kwargs: Mapping[str, Any]) -> None:
  """Raises `TypeError` naming an unknown keyword and the closest field (as the constructor
  would, with a hint)."""
  fields = _field_names(config_cls) | {'default_params', 'restrictions'}
  for key in kwargs:
    if key not in fields:
      close = difflib.get_close_matches(key, sorted(fields | PRETRAINING_FIELDS), n=1)
      hint = f"; did you mean '{close[0]}'?" if close else ''
      raise TypeError(f'{config_cls.__name__}.__init__() got an unexpected keyword argument '
                      f"'{key}'{hint} (masked_lm.cfg.DataConfig builds a BertPretrainDataConfig "
                      f'when given any of {sorted(PRETRAINING_FIELDS)}, otherwise the generic '
                      'DataConfig)')


class _DataConfigType(type):
  """Makes the routing `DataConfig` answer type checks as `config_definitions.DataConfig`."""

  def __instancecheck__(cls, instance: Any) -> bool:
    if cls.__dict__.get('_ROUTES', False):
      return isinstance(instance, _GENERIC)
    return super().__instancecheck__(instance)

  def __subclasscheck__(cls, subclass: type) -> bool:
    if cls.__dict__.get('_ROUTES', False):
      return issubclass(subclass, _GENERIC)
    return super().__subclasscheck__(subclass)


class DataConfig(_GENERIC, metaclass=_DataConfigType):
  """The data config of `masked_lm.cfg`: a `BertPretrainDataConfig` when given a pretraining field
  (module docstring), otherwise the generic `config_definitions.DataConfig`.

  Example:
    >>> DataConfig(input_path='train.tfrecord', seq_length=128).max_predictions_per_seq
    76
  """
  _ROUTES = True

  def __new__(cls, *args: Any, **kwargs: Any) -> Any:
    if not cls.__dict__.get('_ROUTES', False):  # a subclass: an ordinary config class
      return super().__new__(cls)
    target = data_config_class(_given_keys(args, kwargs))
    _check_keywords(target, kwargs)
    # Not an instance of `cls`, so Python does not call `DataConfig.__init__` on it again.
    return target(*args, **kwargs)

  @classmethod
  def from_dict(cls, params: Mapping[str, Any], is_strict: bool = True) -> Any:
    """Builds the config from a mapping, routed as the constructor (module docstring).

    Example:
      >>> type(DataConfig.from_dict({'seq_length': 128})).__name__
      'BertPretrainDataConfig'
    """
    if not cls.__dict__.get('_ROUTES', False):
      return super().from_dict(params, is_strict=is_strict)
    return data_config_class(_given_keys((params,), {})).from_dict(params, is_strict=is_strict)


def __getattr__(name: str) -> Any:
  """Any other public name of `official.core.config_definitions` (Model Garden's `cfg`)."""
  if name.startswith('_'):
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
  try:
    return getattr(config_definitions, name)
  except AttributeError:
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}') from None


__all__ = ['DataConfig', 'DISTRIBUTION_STRATEGIES', 'ExperimentConfig', 'MIXED_PRECISION_DTYPES',
           'OptimizationConfig', 'PRETRAINING_FIELDS', 'RuntimeConfig', 'TaskConfig',
           'TrainerConfig', 'data_config_class']
