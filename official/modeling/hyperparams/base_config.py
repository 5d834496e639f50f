"""Dataclass configs that double as a YAML schema, with strict overrides and validation.

A config is a plain dataclass deriving from `Config`. Its fields are the YAML keys; nested configs
are fields whose type is another `Config`. Values are coerced to the annotated type when they are
set through `override`/`from_dict`/`from_yaml`, and every error names the full dotted key path, what
was expected and what was found.

Model Garden's behaviour is kept where its code and tests rely on it: `Config` is a `ParamsDict`;
every config takes a dict as its first positional argument (`OptimizationConfig({'optimizer':
...})`) and relations as its second (`restrictions=['a.b < c']`, checked by `validate`); the bare
`Config({...})` holds any keys; unknown and reserved keys raise `ConfigKeyError`, both a
`ValueError` and a `KeyError`; `lock()` freezes a config; `bind` attaches a builder; a one-of
exports only its selected member.

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
import inspect
import logging
import types
import typing
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Type, TypeVar

from official.modeling.hyperparams import params_dict
from official.modeling.hyperparams.params_dict import ConfigError
from official.modeling.hyperparams.params_dict import ConfigKeyError
from official.modeling.hyperparams.params_dict import ConfigTypeError
from official.modeling.hyperparams.params_dict import read_yaml
from official.modeling.hyperparams.params_dict import save_yaml

_T = TypeVar('_T', bound='Config')

# Keys of `dataclasses.field(metadata=...)` understood by `Config.validate`.
_BOUNDS = {'ge': ('>=', lambda v, b: v >= b), 'gt': ('>', lambda v, b: v > b),
           'le': ('<=', lambda v, b: v <= b), 'lt': ('<', lambda v, b: v < b)}

_join = params_dict._join  # pylint: disable=protected-access
# (config class name, key) pairs already logged as extra keys of a lenient constructor.
_warned_extra_keys = set()

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


_UNION_TYPES = (typing.Union, types.UnionType)
_SEQUENCE_ORIGINS = (list, tuple, typing.Sequence, collections.abc.Sequence)


def coerce_value(value: Any, tp: Any, path: str, is_strict: bool = True,
                 current: Any = None) -> Any:
  """Converts `value` to the annotated type `tp`, or raises `ConfigError` naming `path`.

  Args:
    value: the new value (from YAML, a dict or Python).
    tp: the field's type annotation, e.g. `int`, `Optional[List[str]]`, `A | None`, a `Config`
      subclass.
    path: the dotted key path, for error messages.
    is_strict: passed on to nested `Config.override`.
    current: the field's current value. A nested config given a mapping is updated from (a copy of)
      it, and so is each item of a list of configs given a list of mappings of the same length.

  Returns:
    The coerced value (a fresh object; `current` is not modified).

  Example:
    >>> coerce_value('64', int, 'global_batch_size')
    64
  """
  if tp is Any:
    return value
  origin = typing.get_origin(tp)
  args = typing.get_args(tp)
  if origin in _UNION_TYPES:
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
    if isinstance(value, params_dict.ParamsDict):
      value = value.as_dict()
    if isinstance(value, Mapping):
      # A current value of another Config class (set in Python) keeps its class, as in Model Garden.
      new = copy.deepcopy(current) if isinstance(current, Config) else tp()
      new._override(value, is_strict, path)  # pylint: disable=protected-access
      return new
    raise ConfigError(path, f'expected a mapping for {tp.__name__} (keys: '
                      f'{", ".join(_field_types(tp))}), found {_describe(value)}')
  if origin in _SEQUENCE_ORIGINS:
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
      raise ConfigError(path, f'expected a list ({_type_name(tp)}), found {_describe(value)}')
    # Tuple[A, B] has a fixed length; Tuple[A] and Tuple[A, ...] are read as any number of A's.
    if origin is tuple and len(args) >= 2 and args[1] is not Ellipsis:
      if len(args) != len(value):
        raise ConfigError(path, f'expected {len(args)} items ({_type_name(tp)}), '
                                f'found {len(value)}')
      return tuple(coerce_value(v, a, f'{path}[{i}]', is_strict) for i, (v, a) in
                   enumerate(zip(value, args)))
    item_tp = args[0] if args else Any
    olds = (list(current) if isinstance(current, (list, tuple)) and len(current) == len(value)
            else [None] * len(value))
    items = [coerce_value(v, item_tp, f'{path}[{i}]', is_strict, old)
             for i, (v, old) in enumerate(zip(value, olds))]
    return tuple(items) if origin is tuple else items
  if origin in (dict, typing.Mapping, collections.abc.Mapping):
    if isinstance(value, params_dict.ParamsDict):
      value = value.as_dict()
    if not isinstance(value, Mapping):
      raise ConfigError(path, f'expected a mapping ({_type_name(tp)}), found {_describe(value)}')
    key_tp, val_tp = args if args else (Any, Any)
    return {coerce_value(k, key_tp, f'{path}[{k!r}]'):
                coerce_value(v, val_tp, f'{path}.{k}', is_strict)
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
    return isinstance(value, (Mapping, params_dict.ParamsDict)) or isinstance(value, origin)
  if origin is float:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
  if isinstance(origin, type):
    return isinstance(value, origin)
  return False


def _config_inside(tp: Any) -> Optional[type]:
  """The Config class in an annotation such as `A`, `Optional[A]`, `List[A]` (else None)."""
  if _is_config_type(tp):
    return tp
  if typing.get_origin(tp) in _UNION_TYPES + _SEQUENCE_ORIGINS:
    for arg in typing.get_args(tp):
      found = _config_inside(arg)
      if found is not None:
        return found
  return None


def _holds_mappings(value: Any) -> bool:
  if isinstance(value, (Mapping, params_dict.ParamsDict)) and not isinstance(value, Config):
    return True
  return isinstance(value, (list, tuple)) and any(_holds_mappings(v) for v in value)


_BOUND = set()


def bind(config_cls: type) -> Callable[[Any], Any]:
  """Binds a builder (a class or a function) to a config class, exposed as `config.BUILDER`.

  A config class can be bound once per program.

  Example:
    >>> @bind(MyModelConfig)
    ... def build_my_model(config): ...
    >>> MyModelConfig().BUILDER(config)   # calls build_my_model(config)
  """
  if not inspect.isclass(config_cls):
    raise ValueError(f'bind() takes a config class, found {config_cls!r}')

  def decorator(builder: Any) -> Any:
    if config_cls in _BOUND:
      raise ValueError(f'{config_cls.__name__} already has a builder: Inside a program, we should '
                       'not bind a config class twice')
    if inspect.isclass(builder):
      config_cls._BUILDER = builder  # pylint: disable=protected-access
    elif inspect.isfunction(builder):
      def _call(self, *args, **kwargs):  # pylint: disable=unused-argument
        return builder(*args, **kwargs)
      config_cls._BUILDER = _call  # pylint: disable=protected-access
    else:
      raise ValueError(f'bind(): the builder must be a class or a function, found {builder!r}')
    _BOUND.add(config_cls)
    return builder

  return decorator


@dataclasses.dataclass
class Config(params_dict.ParamsDict):
  """Base class of all configs: a dataclass with YAML I/O, strict overrides and validation.

  Subclasses declare fields with defaults. Nested configs use
  `dataclasses.field(default_factory=ChildConfig)`. Bounded fields use `hyperparams.field(...,
  ge=0)`. Override `validate` (calling `super().validate()` first) for cross-field checks; raise
  `ConfigError(field_name, message)` there and the caller prefixes the full path.

  As in Model Garden, the first two positional arguments of every config are `default_params` (a
  dict applied with `override`) and `restrictions` (relations checked by `validate`, e.g.
  `['e.a < c']`); fields are passed by keyword. The bare `Config({'a': 1, 'b': {'c': 2}})` has no
  schema: it holds whatever keys it is given (nested dicts become `Config`s). As Model Garden's, a
  config with declared fields applies `default_params` leniently: a key it does not declare is kept
  as an extra attribute that nothing reads, and logged once per class and key (e.g. a Google
  `bert_config.json` key); a name in the class' `FIELD_ALIASES` sets its field. Strictness lives in
  `from_dict`, `from_yaml` and `override` (the YAML files and `--params_override`): there a
  misspelt key raises, naming it.

  Example:
    >>> cfg = ExperimentConfig.from_yaml('configs/pretraining/bert_tiny.yaml')
    >>> cfg.override({'trainer': {'train_steps': 10}})
    >>> cfg.validate()
    >>> cfg.as_dict()['trainer']['train_steps']
    10
    >>> OptimizationConfig({'optimizer': {'type': 'sgd'}}).optimizer.type
    'sgd'
  """
  # The class or function bound with `bind`, exposed as the read-only `BUILDER` property.
  _BUILDER = None
  # Values a schema-less key may hold directly, and the sequence types it may hold (one level).
  IMMUTABLE_TYPES = (str, int, float, bool, type(None))
  SEQUENCE_TYPES = (list, tuple)

  default_params: dataclasses.InitVar[Optional[Mapping[str, Any]]] = None
  restrictions: dataclasses.InitVar[Optional[List[str]]] = None

  def __post_init__(self, default_params: Optional[Mapping[str, Any]] = None,
                    restrictions: Optional[Sequence[str]] = None) -> None:
    object.__setattr__(self, '_locked', False)
    if isinstance(restrictions, str):
      restrictions = [restrictions]
    if restrictions is not None and not isinstance(restrictions, (list, tuple)):
      raise TypeError(f'{type(self).__name__}: the second positional argument is `restrictions` (a '
                      f'list of relations such as "a < b"), found {restrictions!r}; pass fields by '
                      'keyword')
    object.__setattr__(self, '_restrictions', list(restrictions or []))
    if default_params is None:
      return
    if not isinstance(default_params, (Mapping, params_dict.ParamsDict)):
      raise TypeError(f'{type(self).__name__}: the first positional argument is `default_params` '
                      f'(a dict of values), found {default_params!r}; pass fields by keyword')
    self.override(default_params, is_strict=False)

  def __eq__(self, other: Any) -> bool:
    # Subclasses get the dataclass __eq__ (declared fields); the schema-less Config compares its
    # keys.
    if type(other) is not type(self):
      return NotImplemented
    return self.as_dict() == other.as_dict()

  def __repr__(self) -> str:
    # Subclasses get the dataclass repr of their fields; the schema-less Config shows its keys.
    return f'{type(self).__name__}({", ".join(f"{k}={v!r}" for k, v in self._items())})'

  @property
  def BUILDER(self) -> Any:  # pylint: disable=invalid-name
    """The builder bound to this config class with `bind` (None if none)."""
    return self._BUILDER

  @classmethod
  def _declared_keys(cls) -> Tuple[str, ...]:
    return tuple(_field_types(cls))

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

  @classmethod
  def from_json(cls: Type[_T], file_path: str, is_strict: bool = True) -> _T:
    """Builds a config from defaults updated with a JSON file (JSON is YAML)."""
    return cls.from_yaml(file_path, is_strict=is_strict)

  @classmethod
  def from_args(cls: Type[_T], *args: Any, **kwargs: Any) -> _T:
    """Builds a config from positional values of this class's own fields (in declaration order)
    and keyword values.

    Example:
      >>> DataConfig.from_args('train.tfrecord', 32).global_batch_size
      32
    """
    own = [name for name in cls.__dict__.get('__annotations__', {}) if name in _field_types(cls)]
    if len(args) > len(own):
      raise TypeError(f'{cls.__name__}.from_args: {len(args)} positional values for the fields '
                      f'{own}')
    values = dict(zip(own, args))
    values.update(kwargs)
    return cls(default_params=values)

  # -- attribute writes ------------------------------------------------------------------------

  def __setattr__(self, key: str, value: Any) -> None:
    if key in ('BUILDER', '_BUILDER'):
      raise AttributeError('`BUILDER` is a property and `_BUILDER` is the reserved class '
                           'attribute; bind a builder with `bind(ConfigClass)` at the class level')
    if key.startswith('_'):
      object.__setattr__(self, key, value)
      return
    self._check_unlocked()
    types_ = _field_types(type(self))
    if key in types_:
      # Dataclass __init__ and plain assignment: values are checked by `validate`, but dicts meant
      # as nested configs are turned into configs now, as Model Garden does.
      if _holds_mappings(value) and _config_inside(types_[key]) is not None:
        value = coerce_value(value, types_[key], key, True, self.__dict__.get(key))
      object.__setattr__(self, key, value)
    else:
      object.__setattr__(self, key, _import_value(value, key))

  # -- override --------------------------------------------------------------------------------

  def override(self, overrides: Any, is_strict: bool = True) -> None:
    """Updates this config in place from a nested mapping (or another config).

    Args:
      overrides: a mapping of field names to values; nested mappings update nested configs.
      is_strict: when True an unknown key raises `ConfigKeyError` (a ValueError and a KeyError)
        naming it and the valid keys; when False it is added (logged for configs with a schema).

    Raises:
      ConfigError: an unknown key or a value of the wrong type, naming the full key path.
      ValueError: the config is locked.
    """
    self._check_unlocked()
    self._override(overrides, is_strict, '')

  def _override(self, overrides: Any, is_strict: bool = True, path: str = '') -> None:
    if isinstance(overrides, params_dict.ParamsDict):
      overrides = overrides.as_dict()
    if overrides is None:
      return
    if not isinstance(overrides, Mapping):
      raise ConfigError(path, f'expected a mapping for {type(self).__name__}, '
                              f'found {_describe(overrides)}')
    types_ = _field_types(type(self))
    aliases = getattr(type(self), 'FIELD_ALIASES', {})
    for key, value in overrides.items():
      key_path = _join(path, str(key))
      if key not in types_ and aliases.get(key) in types_:
        if aliases[key] in overrides:
          raise ConfigKeyError(key_path, f'{aliases[key]!r} is given twice (as {aliases[key]!r} '
                               f'and as {key!r})')
        key = aliases[key]
      if key in self.RESERVED_ATTR:
        raise ConfigKeyError(key_path, params_dict._reserved_key_message(key))  # pylint: disable=protected-access
      if key in types_:
        value = coerce_value(value, types_[key], key_path, is_strict, self.__dict__.get(key))
        try:
          _check_metadata(_fields_by_name(type(self))[key], value)
        except ConfigError as e:
          raise e.with_prefix(path) from None
        object.__setattr__(self, key, value)
      elif key in self.__dict__ and not str(key).startswith('_'):
        object.__setattr__(self, key,
                           _override_untyped(self.__dict__[key], value, is_strict, key_path))
      elif is_strict or not isinstance(key, str) or key.startswith('_'):
        raise ConfigKeyError(key_path, params_dict._unknown_key_message(key, self))  # pylint: disable=protected-access
      else:
        if types_ and (type(self).__name__, key) not in _warned_extra_keys:
          _warned_extra_keys.add((type(self).__name__, key))
          logging.warning('%s: %s is not one of its fields; kept as an extra key that nothing '
                          'reads (a non-strict override, e.g. the constructor\'s dict, as in '
                          'Model Garden; YAML and --params_override refuse it)',
                          type(self).__name__, key_path)
        object.__setattr__(self, key, _import_value(value, key_path))

  # -- export ----------------------------------------------------------------------------------

  def as_dict(self) -> Dict[str, Any]:
    """Returns the config as nested plain dicts (lists and tuples keep their type)."""
    return {name: _plain(value) for name, value in self._items()}

  def _items(self) -> List[Tuple[str, Any]]:
    declared = [(name, self.__dict__[name]) for name in _field_types(type(self))
                if name in self.__dict__]
    extra = [(k, v) for k, v in self.__dict__.items()
             if not k.startswith('_') and k not in _field_types(type(self))]
    return declared + extra

  def replace(self: _T, **kwargs: Any) -> _T:
    """Returns an unlocked copy with some fields overridden (strictly), like `dataclasses.replace`.

    Example:
      >>> small = cfg.replace(hidden_size=128, num_layers=2)
    """
    new = copy.deepcopy(self)
    object.__setattr__(new, '_locked', False)
    new.override(kwargs, is_strict=True)
    return new

  def validate(self) -> None:
    """Checks types, bounds, choices, unsupported fields and restrictions, recursively.

    Raises:
      ConfigError: naming the full key path, the expected and the found value.
      KeyError: (a `ConfigKeyError`) a restriction that does not hold.
    """
    types_ = _field_types(type(self))
    for f in dataclasses.fields(self):
      if f.name not in types_:
        continue
      value = getattr(self, f.name)
      try:
        value = coerce_value(value, types_[f.name], '', True, None)
      except ConfigError as e:
        raise e.with_prefix(f.name) from None
      if f.name in self.__dict__:
        object.__setattr__(self, f.name, value)
      _check_metadata(f, value)
      for sub_path, sub_config in _nested_configs(f.name, value):
        try:
          sub_config.validate()
        except ConfigError as e:
          raise e.with_prefix(sub_path) from None
    params_dict.check_restrictions(self.as_dict(), self.__dict__.get('_restrictions') or [])

  def to_yaml(self, file_path: str) -> None:
    """Writes the config to a YAML file (creating parent directories)."""
    save_yaml(self.as_dict(), file_path)


def _import_value(value: Any, path: str) -> Any:
  """A value for a key without a declared type: dicts become `Config`s, sequences may be one level
  deep, other values must be str, int, float, bool or None (Model Garden's rule)."""
  if isinstance(value, Config.IMMUTABLE_TYPES):
    return value
  if isinstance(value, Config.SEQUENCE_TYPES):
    if not (all(isinstance(v, Config.IMMUTABLE_TYPES) for v in value)
            or all(isinstance(v, Mapping) for v in value)
            or all(isinstance(v, params_dict.ParamsDict) for v in value)):
      raise ConfigTypeError(path, f'Invalid sequence: only supports single level list or tuple of '
                            f'str, int, float, bool, None, or of dicts or configs; found {value!r}')
    return type(value)(_import_value(v, f'{path}[{i}]') for i, v in enumerate(value))
  if isinstance(value, params_dict.ParamsDict):
    return copy.deepcopy(value)
  if isinstance(value, Mapping):
    config = Config()
    try:
      config.override(value, is_strict=False)
    except ConfigError as e:
      raise e.with_prefix(path) from None
    return config
  raise ConfigTypeError(path, f'Unknown type: {type(value)!r}; a config value must be a str, int, '
                        'float, bool, None, a list or tuple of these, a dict or a config')


def _override_untyped(current: Any, value: Any, is_strict: bool, path: str) -> Any:
  """The new value of an existing key without a declared type."""
  if isinstance(value, params_dict.ParamsDict) and not isinstance(value, Config):
    value = value.as_dict()
  if isinstance(value, Mapping) and isinstance(current, Config):
    new = copy.deepcopy(current)
    new._override(value, is_strict, path)  # pylint: disable=protected-access
    return new
  if (isinstance(value, (list, tuple)) and isinstance(current, (list, tuple)) and value
      and len(value) == len(current) and all(isinstance(c, Config) for c in current)
      and all(isinstance(v, Mapping) for v in value)):
    items = []
    for i, (old, new_value) in enumerate(zip(current, value)):
      item = copy.deepcopy(old)
      item._override(new_value, is_strict, f'{path}[{i}]')  # pylint: disable=protected-access
      items.append(item)
    return type(value)(items)
  return _import_value(value, path)


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
  if isinstance(value, params_dict.ParamsDict):
    return value.as_dict()
  if isinstance(value, (list, tuple)):
    return type(value)(_plain(v) for v in value)
  if isinstance(value, Mapping):
    return {k: _plain(v) for k, v in value.items()}
  return value


@dataclasses.dataclass
class OneOfConfig(Config):
  """A config holding several alternatives of which `type` selects one.

  Subclasses declare `type: Optional[str] = <default member or None>` and one field per member. In
  YAML `encoder: {type: bert, bert: {num_layers: 4}}`; `type` may be left out when the mapping names
  exactly one member and no type is selected yet. `as_dict` exports `type` and the selected member
  only.

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

  def get(self) -> Optional[Any]:  # pylint: disable=arguments-differ
    """The selected member config (or value), or None when `type` is None."""
    if self.type is None:
      return None
    self._check_type('')
    return getattr(self, self.type)

  def _check_type(self, path: str) -> None:
    if self.type is not None and self.type not in self.member_names() and (
        self.type not in self.__dict__ or self.type.startswith('_')):
      raise ConfigError(_join(path, 'type'), f'{self.type!r} is not one of '
                        f'{list(self.member_names())} for {type(self).__name__}')

  def _override(self, overrides: Any, is_strict: bool = True, path: str = '') -> None:
    if isinstance(overrides, Mapping) and 'type' not in overrides and self.type is None:
      members = [k for k in overrides if k in self.member_names()]
      if len(members) == 1:
        overrides = dict(overrides, type=members[0])
    super()._override(overrides, is_strict, path)
    self._check_type(path)

  def as_dict(self) -> Dict[str, Any]:
    """`{'type': t, t: <selected member>}`, or `{'type': None}` when nothing is selected."""
    if self.type is None:
      return {'type': None}
    self._check_type('')
    return {'type': self.type, self.type: _plain(getattr(self, self.type))}

  def validate(self) -> None:
    self._check_type('')
    super().validate()
