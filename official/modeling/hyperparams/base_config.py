"""Dataclass configs that double as a YAML schema, with strict overrides and validation.

A config is a plain dataclass deriving from `Config`. Its fields are the YAML keys; nested configs are
fields whose type is another `Config`. Values are coerced to the annotated type when they are set through
`override`/`from_dict`/`from_yaml`, and every error names the full dotted key path, what was expected and
what was found.

Example:
  >>> @dataclasses.dataclass
  ... class DataConfig(Config):
  ...   input_path: str = ''
  ...   global_batch_size: int = field(0, ge=0)
  >>> @dataclasses.dataclass
  ... class TaskConfig(Config):
  ...   train_data: DataConfig = dataclasses.field(default_factory=DataConfig)
  >>> cfg = TaskConfig.from_dict({'train_data': {'global_batch_size': 64}})
  >>> cfg.train_data.global_batch_size
  64
  >>> cfg.override({'train_data': {'global_batch_size': 'abc'}})
  Traceback (most recent call last):
  ...
  ConfigError: train_data.global_batch_size: expected int, found 'abc' (str)
"""

import collections.abc
import copy
import dataclasses
import functools
import logging
import os
import typing
from typing import Any, Dict, Mapping, Optional, Tuple, Type, TypeVar

import yaml

_T = TypeVar('_T', bound='Config')

# Keys of `dataclasses.field(metadata=...)` understood by `Config.validate`.
_BOUNDS = {'ge': ('>=', lambda v, b: v >= b), 'gt': ('>', lambda v, b: v > b),
           'le': ('<=', lambda v, b: v <= b), 'lt': ('<', lambda v, b: v < b)}


class ConfigError(ValueError):
  """A bad config key or value; `path` is the dotted key path, e.g. `task.train_data.input_path`."""

  def __init__(self, path: str, message: str):
    self.path = path
    self.message = message
    super().__init__(f'{path}: {message}' if path else message)

  def with_prefix(self, prefix: str) -> 'ConfigError':
    """Returns the same error with `prefix` prepended to its key path."""
    return ConfigError(_join(prefix, self.path), self.message)


def field(default: Any = dataclasses.MISSING, *, default_factory: Any = dataclasses.MISSING,
          ge: Optional[float] = None, gt: Optional[float] = None, le: Optional[float] = None,
          lt: Optional[float] = None, choices: Optional[typing.Sequence[Any]] = None,
          help: Optional[str] = None) -> Any:  # pylint: disable=redefined-builtin
  """A dataclass field with bounds or choices checked by `Config.validate`.

  Args:
    default: the default value (or use `default_factory`).
    default_factory: a callable that makes the default.
    ge, gt, le, lt: numeric bounds (`None` values are not checked).
    choices: the allowed values.
    help: a one-line description.

  Example:
    >>> steps_per_loop: int = field(1000, ge=1)
  """
  metadata = {k: v for k, v in dict(ge=ge, gt=gt, le=le, lt=lt, choices=choices, help=help).items()
              if v is not None}
  return dataclasses.field(default=default, default_factory=default_factory, metadata=metadata)


def unsupported(default: Any, reason: str) -> Any:
  """A Model Garden field we parse but do not implement: any non-default value fails validation.

  Example:
    >>> tfds_name: str = unsupported('', 'TFDS input is not supported; use TFRecord files')
  """
  if isinstance(default, (list, dict, set)):
    raise TypeError('unsupported() takes an immutable default')
  return dataclasses.field(default=default, metadata={'unsupported': reason})


def _join(prefix: str, key: str) -> str:
  if not prefix:
    return key
  if not key:
    return prefix
  return f'{prefix}{key}' if key.startswith('[') else f'{prefix}.{key}'


def _type_name(tp: Any) -> str:
  if tp is type(None):
    return 'None'
  if isinstance(tp, type):
    return tp.__name__
  return str(tp).replace('typing.', '')


def _describe(value: Any) -> str:
  text = repr(value)
  if len(text) > 80:
    text = text[:77] + '...'
  return f'{text} ({type(value).__name__})'


@functools.lru_cache(maxsize=None)
def _field_types(cls: type) -> Dict[str, Any]:
  """The resolved annotation of every dataclass field of `cls`, in declaration order."""
  hints = typing.get_type_hints(cls)
  return {f.name: hints[f.name] for f in dataclasses.fields(cls) if f.init}


@functools.lru_cache(maxsize=None)
def _fields_by_name(cls: type) -> Dict[str, dataclasses.Field]:
  return {f.name: f for f in dataclasses.fields(cls)}


def _is_config_type(tp: Any) -> bool:
  return isinstance(tp, type) and issubclass(tp, Config)


def _to_number(value: Any, tp: type, path: str) -> Any:
  """Coerces to int or float; YAML reads `1e-4` as a string, so numeric strings are accepted."""
  if isinstance(value, bool):
    raise ConfigError(path, f'expected {tp.__name__}, found {_describe(value)}')
  if isinstance(value, str):
    try:
      value = float(value.strip()) if tp is float else _parse_int_string(value)
    except ValueError:
      raise ConfigError(path, f'expected {tp.__name__}, found {_describe(value)}') from None
  if tp is float and isinstance(value, (int, float)):
    return float(value)
  if tp is int:
    if isinstance(value, int):
      return value
    if isinstance(value, float) and value.is_integer():
      return int(value)
  raise ConfigError(path, f'expected {tp.__name__}, found {_describe(value)}')


def _parse_int_string(text: str) -> int:
  number = float(text.strip())
  if not number.is_integer():
    raise ValueError(text)
  return int(number)


def coerce_value(value: Any, tp: Any, path: str, is_strict: bool = True, current: Any = None) -> Any:
  """Converts `value` to the annotated type `tp`, or raises `ConfigError` naming `path`.

  Args:
    value: the new value (from YAML, a dict or Python).
    tp: the field's type annotation, e.g. `int`, `Optional[List[str]]`, a `Config` subclass.
    path: the dotted key path, for error messages.
    is_strict: passed on to nested `Config.override`.
    current: the field's current value; a nested config given a mapping is updated from it.

  Returns:
    The coerced value (a fresh object; `current` is not modified).
  """
  if tp is Any:
    return value
  origin = typing.get_origin(tp)
  args = typing.get_args(tp)
  if origin is typing.Union:
    if value is None:
      if type(None) in args:
        return None
      raise ConfigError(path, f'expected {_type_name(tp)}, found None')
    members = [a for a in args if a is not type(None)]
    errors = []
    # Try the member whose kind matches the value first: a str stays a str in Union[str, List[str]].
    members.sort(key=lambda a: 0 if _same_kind(value, a) else 1)
    for member in members:
      try:
        return coerce_value(value, member, path, is_strict, current)
      except ConfigError as e:
        errors.append(e)
    if len(errors) == 1 or any(_same_kind(value, m) for m in members):
      raise errors[0]
    raise ConfigError(path, f'expected {_type_name(tp)}, found {_describe(value)}')
  if value is None:
    raise ConfigError(path, f'expected {_type_name(tp)}, found None (the field is not Optional)')
  if _is_config_type(tp):
    if isinstance(value, tp):
      return copy.deepcopy(value)
    if isinstance(value, Mapping):
      new = copy.deepcopy(current) if isinstance(current, tp) else tp()
      new._override(value, is_strict, path)  # pylint: disable=protected-access
      return new
    raise ConfigError(path, f'expected a mapping for {tp.__name__} (keys: '
                      f'{", ".join(_field_types(tp))}), found {_describe(value)}')
  if origin in (list, tuple, typing.Sequence, collections.abc.Sequence):
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
      raise ConfigError(path, f'expected a list ({_type_name(tp)}), found {_describe(value)}')
    if origin is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
      if len(args) != len(value):
        raise ConfigError(path, f'expected {len(args)} items ({_type_name(tp)}), found {len(value)}')
      return tuple(coerce_value(v, a, f'{path}[{i}]', is_strict) for i, (v, a) in
                   enumerate(zip(value, args)))
    item_tp = args[0] if args else Any
    items = [coerce_value(v, item_tp, f'{path}[{i}]', is_strict) for i, v in enumerate(value)]
    return tuple(items) if origin is tuple else items
  if origin in (dict, typing.Mapping, collections.abc.Mapping):
    if not isinstance(value, Mapping):
      raise ConfigError(path, f'expected a mapping ({_type_name(tp)}), found {_describe(value)}')
    key_tp, val_tp = args if args else (Any, Any)
    return {coerce_value(k, key_tp, f'{path}[{k!r}]'): coerce_value(v, val_tp, f'{path}.{k}', is_strict)
            for k, v in value.items()}
  if origin is typing.Literal:
    if value not in args:
      raise ConfigError(path, f'expected one of {list(args)}, found {_describe(value)}')
    return value
  if tp in (int, float):
    return _to_number(value, tp, path)
  if tp is bool:
    if isinstance(value, bool):
      return value
    raise ConfigError(path, f'expected bool (true/false), found {_describe(value)}')
  if tp is str:
    if isinstance(value, str):
      return value
    raise ConfigError(path, f'expected str, found {_describe(value)}')
  if isinstance(tp, type):
    if isinstance(value, tp):
      return value
    raise ConfigError(path, f'expected {tp.__name__}, found {_describe(value)}')
  return value


def _same_kind(value: Any, tp: Any) -> bool:
  """Whether `value` looks like an instance of `tp` without coercion."""
  origin = typing.get_origin(tp) or tp
  if origin in (list, tuple):
    return isinstance(value, (list, tuple))
  if origin in (dict, typing.Mapping) or _is_config_type(origin):
    return isinstance(value, Mapping) or isinstance(value, origin)
  if origin is float:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
  if isinstance(origin, type):
    return isinstance(value, origin)
  return False


@dataclasses.dataclass
class Config:
  """Base class of all configs: a dataclass with YAML I/O, strict overrides and validation.

  Subclasses declare fields with defaults. Nested configs use
  `dataclasses.field(default_factory=ChildConfig)`. Bounded fields use `hyperparams.field(..., ge=0)`.
  Override `validate` (calling `super().validate()` first) for cross-field checks; raise
  `ConfigError(field_name, message)` there and the caller prefixes the full path.

  Example:
    >>> cfg = ExperimentConfig.from_yaml('configs/pretraining/bert_tiny.yaml')
    >>> cfg.override({'trainer': {'train_steps': 10}})
    >>> cfg.validate()
    >>> cfg.as_dict()['trainer']['train_steps']
    10
  """

  @classmethod
  def from_dict(cls: Type[_T], params: Mapping[str, Any], is_strict: bool = True) -> _T:
    """Builds a config from defaults updated with a (nested) mapping."""
    config = cls()
    config.override(params, is_strict=is_strict)
    return config

  @classmethod
  def from_yaml(cls: Type[_T], file_path: str, is_strict: bool = True) -> _T:
    """Builds a config from defaults updated with a YAML file."""
    return cls.from_dict(read_yaml(file_path), is_strict=is_strict)

  def override(self, overrides: Any, is_strict: bool = True) -> None:
    """Updates this config in place from a nested mapping (or another config).

    Args:
      overrides: a mapping of field names to values; nested mappings update nested configs.
      is_strict: when True an unknown key raises `ConfigError`; when False it is logged and skipped.

    Raises:
      ConfigError: an unknown key or a value of the wrong type, naming the full key path.
    """
    self._override(overrides, is_strict, '')

  def _override(self, overrides: Any, is_strict: bool, path: str) -> None:
    if isinstance(overrides, Config):
      overrides = overrides.as_dict()
    if overrides is None:
      return
    if not isinstance(overrides, Mapping):
      raise ConfigError(path, f'expected a mapping for {type(self).__name__}, found {_describe(overrides)}')
    types = _field_types(type(self))
    for key, value in overrides.items():
      key_path = _join(path, str(key))
      if key not in types:
        message = (f'unknown key {key!r} for {type(self).__name__}; valid keys: '
                   f'{", ".join(types) or "(none)"}')
        if is_strict:
          raise ConfigError(key_path, message)
        logging.warning('Ignoring %s: %s', key_path, message)
        continue
      value = coerce_value(value, types[key], key_path, is_strict, getattr(self, key))
      try:
        _check_metadata(_fields_by_name(type(self))[key], value)
      except ConfigError as e:
        raise e.with_prefix(path) from None
      setattr(self, key, value)

  def as_dict(self) -> Dict[str, Any]:
    """Returns the config as nested plain dicts and lists (safe for `yaml.safe_dump`)."""
    return {name: _plain(getattr(self, name)) for name in _field_types(type(self))}

  def replace(self: _T, **kwargs: Any) -> _T:
    """Returns a copy with some fields overridden (strictly), like `dataclasses.replace`.

    Example:
      >>> small = cfg.replace(hidden_size=128, num_layers=2)
    """
    new = copy.deepcopy(self)
    new.override(kwargs, is_strict=True)
    return new

  def validate(self) -> None:
    """Checks types, bounds, choices and unsupported fields, recursively.

    Raises:
      ConfigError: naming the full key path, the expected and the found value.
    """
    types = _field_types(type(self))
    for f in dataclasses.fields(self):
      if f.name not in types:
        continue
      value = getattr(self, f.name)
      try:
        value = coerce_value(value, types[f.name], '', True, None)
      except ConfigError as e:
        raise e.with_prefix(f.name) from None
      setattr(self, f.name, value)
      _check_metadata(f, value)
      for sub_path, sub_config in _nested_configs(f.name, value):
        try:
          sub_config.validate()
        except ConfigError as e:
          raise e.with_prefix(sub_path) from None

  def to_yaml(self, file_path: str) -> None:
    """Writes the config to a YAML file (creating parent directories)."""
    save_yaml(self.as_dict(), file_path)


def _nested_configs(name: str, value: Any):
  if isinstance(value, Config):
    yield name, value
  elif isinstance(value, (list, tuple)):
    for i, item in enumerate(value):
      if isinstance(item, Config):
        yield f'{name}[{i}]', item


def _check_metadata(f: dataclasses.Field, value: Any) -> None:
  meta = f.metadata
  reason = meta.get('unsupported')
  if reason is not None and value != f.default:
    raise ConfigError(f.name, f'is set to {value!r}, but {reason}; leave it at its default '
                      f'{f.default!r}')
  if value is None:
    return
  choices = meta.get('choices')
  if choices is not None and value not in choices:
    raise ConfigError(f.name, f'expected one of {list(choices)}, found {value!r}')
  for key, (symbol, ok) in _BOUNDS.items():
    bound = meta.get(key)
    if bound is not None and isinstance(value, (int, float)) and not ok(value, bound):
      raise ConfigError(f.name, f'must be {symbol} {bound}, found {value!r}')


def _plain(value: Any) -> Any:
  if isinstance(value, Config):
    return value.as_dict()
  if isinstance(value, (list, tuple)):
    return [_plain(v) for v in value]
  if isinstance(value, Mapping):
    return {k: _plain(v) for k, v in value.items()}
  return value


@dataclasses.dataclass
class OneOfConfig(Config):
  """A config holding several alternatives of which `type` selects one.

  Subclasses declare `type: Optional[str] = <default member or None>` and one field per member. In YAML
  `encoder: {type: bert, bert: {num_layers: 4}}`; `type` may be left out when the mapping names exactly
  one member and no type is selected yet.

  Example:
    >>> cfg = EncoderConfig.from_dict({'bert': {'num_layers': 4}})
    >>> cfg.type, cfg.get().num_layers
    ('bert', 4)
  """
  type: Optional[str] = None

  @classmethod
  def member_names(cls) -> Tuple[str, ...]:
    """The names of the alternatives (every field except `type`)."""
    return tuple(name for name in _field_types(cls) if name != 'type')

  def get(self) -> Optional[Config]:
    """The selected member config, or None when `type` is None."""
    if self.type is None:
      return None
    self._check_type('')
    return getattr(self, self.type)

  def _check_type(self, path: str) -> None:
    if self.type is not None and self.type not in self.member_names():
      raise ConfigError(_join(path, 'type'), f'{self.type!r} is not one of '
                        f'{list(self.member_names())} for {type(self).__name__}')

  def _override(self, overrides: Any, is_strict: bool, path: str) -> None:
    if isinstance(overrides, Mapping) and 'type' not in overrides and self.type is None:
      members = [k for k in overrides if k in self.member_names()]
      if len(members) == 1:
        overrides = dict(overrides, type=members[0])
    super()._override(overrides, is_strict, path)
    self._check_type(path)

  def validate(self) -> None:
    self._check_type('')
    super().validate()


def read_yaml(file_path: str) -> Dict[str, Any]:
  """Reads a YAML mapping; errors name the file (and line for syntax errors)."""
  if not os.path.exists(file_path):
    raise FileNotFoundError(f'config file not found: {file_path}')
  with open(file_path, encoding='utf-8') as f:
    try:
      data = yaml.safe_load(f)
    except yaml.YAMLError as e:
      raise ConfigError('', f'{file_path}: invalid YAML: {e}') from None
  if data is None:
    return {}
  if not isinstance(data, Mapping):
    raise ConfigError('', f'{file_path}: expected a YAML mapping at the top level, found '
                      f'{type(data).__name__}')
  return dict(data)


def save_yaml(data: Mapping[str, Any], file_path: str) -> None:
  """Writes a mapping as YAML, creating parent directories; works with `gs://` via tf.io.gfile."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  directory = os.path.dirname(file_path)
  if directory:
    tf.io.gfile.makedirs(directory)
  with tf.io.gfile.GFile(file_path, 'w') as f:
    yaml.safe_dump(dict(data), f, default_flow_style=False, sort_keys=False)

