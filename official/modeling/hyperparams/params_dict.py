"""`ParamsDict` (a nested, attribute-style dictionary) and the override forms `--params_override`
accepts.

`ParamsDict` is the schema-less base of `Config`: keys are attributes, nested dicts become nested
`ParamsDict`s, `override` updates in place (strictly: only existing keys), `lock` freezes it and
`validate` checks restrictions such as `'a.b == c'`.

Example:
  >>> params = ParamsDict({'train': {'batch_size': 8}}, restrictions=['train.batch_size > 0'])
  >>> params.override({'train': {'batch_size': 16}})
  >>> params.train.batch_size
  16
  >>> parse_override_string('task.train_data.global_batch_size=64,trainer.train_steps=10')
  {'task': {'train_data': {'global_batch_size': 64}}, 'trainer': {'train_steps': 10}}
  >>> override_params_dict(params, 'train.batch_size=32', is_strict=True).train.batch_size
  32
"""

import copy
import os
import re
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

import yaml


class ConfigError(ValueError):
  """A bad config key or value; `path` is the dotted key path, e.g. `task.train_data.input_path`."""

  def __init__(self, path: str, message: str):
    self.path = path
    self.message = message
    super().__init__(f'{path}: {message}' if path else message)

  def __str__(self) -> str:
    return f'{self.path}: {self.message}' if self.path else self.message

  def with_prefix(self, prefix: str) -> 'ConfigError':
    """Returns the same kind of error with `prefix` prepended to its key path."""
    return type(self)(_join(prefix, self.path), self.message)


class ConfigKeyError(ConfigError, KeyError):
  """An unknown or reserved key, or a broken restriction: a `ConfigError` that is also a `KeyError`
  (what Model Garden raises for these)."""


class ConfigTypeError(ConfigError, TypeError):
  """A value of a type a config cannot hold (e.g. a function, a set, a list of lists)."""


def _join(prefix: str, key: str) -> str:
  if not prefix:
    return key
  if not key:
    return prefix
  return f'{prefix}{key}' if key.startswith('[') else f'{prefix}.{key}'


# ---------------------------------------------------------------------------------------------
# ParamsDict


class ParamsDict:
  """A nested dictionary read and written through attributes, with optional restrictions.

  Args:
    default_params: a dict or `ParamsDict` of initial keys (added non-strictly).
    restrictions: relations checked by `validate`, e.g. `['a.a1 == b.a1', 'c.size <= 512']`;
      operators `==`, `!=`, `<`, `<=`, `>`, `>=`; operands are dotted keys, numbers or `None`.

  Example:
    >>> params = ParamsDict({'a': 1, 'b': {'c': 2}})
    >>> params.b.c
    2
    >>> params.override({'d': 3})
    Traceback (most recent call last):
    ...
    ConfigKeyError: "d: unknown key 'd' for ParamsDict: The key 'd' does not exist; ..."
  """

  RESERVED_ATTR = ['_locked', '_restrictions']

  def __init__(self, default_params: Optional[Union[Mapping[str, Any], 'ParamsDict']] = None,
               restrictions: Optional[Sequence[str]] = None):
    object.__setattr__(self, '_locked', False)
    object.__setattr__(self, '_restrictions', list(restrictions or []))
    self.override(default_params or {}, is_strict=False)

  # -- attribute access ----------------------------------------------------------------------

  def _set(self, key: str, value: Any) -> None:
    if isinstance(value, Mapping):
      self.__dict__[key] = ParamsDict(value)
    else:
      self.__dict__[key] = copy.deepcopy(value)

  def __setattr__(self, key: str, value: Any) -> None:
    if key in self.RESERVED_ATTR:
      object.__setattr__(self, key, value)
      return
    if key not in self.__dict__:
      raise ConfigKeyError(key, f'{_unknown_key_message(key, self)}; to add a key use '
                           'override(..., is_strict=False)')
    self._check_unlocked()
    self._set(key, value)

  def __getattr__(self, key: str) -> Any:
    # Only called when normal lookup fails: the key does not exist.
    if key.startswith('__'):
      raise AttributeError(key)
    raise AttributeError(f'The key {key!r} does not exist in {type(self).__name__}')

  def __delattr__(self, key: str) -> None:
    if key in self.RESERVED_ATTR:
      raise AttributeError(f'The key {key!r} is reserved and cannot be deleted')
    if key not in self.__dict__:
      raise AttributeError(f'The key {key!r} does not exist in {type(self).__name__}')
    self._check_unlocked()
    del self.__dict__[key]

  def __contains__(self, key: str) -> bool:
    return key in self.__dict__ and key not in self.RESERVED_ATTR

  def __getitem__(self, key: str) -> Any:
    if key not in self:
      raise KeyError(key)
    return self.__dict__[key]

  def get(self, key: str, value: Any = None) -> Any:
    """The value of `key`, or `value` when the key does not exist."""
    return self.__dict__[key] if key in self else value

  def keys(self) -> List[str]:
    """The keys, in insertion order."""
    return [k for k in self.__dict__ if k not in self.RESERVED_ATTR]

  def __eq__(self, other: Any) -> bool:
    if isinstance(other, ParamsDict):
      return self.as_dict() == other.as_dict()
    if isinstance(other, Mapping):
      return self.as_dict() == dict(other)
    return NotImplemented

  __hash__ = None  # mutable

  def __repr__(self) -> str:
    return f'{type(self).__name__}({self.as_dict()!r})'

  # -- locking ---------------------------------------------------------------------------------

  def lock(self) -> None:
    """Makes this object read-only: later writes raise ValueError."""
    object.__setattr__(self, '_locked', True)

  def _check_unlocked(self) -> None:
    if self.__dict__.get('_locked', False):
      raise ValueError(f'The {type(self).__name__} has been locked; no change is allowed')

  # -- override / export ---------------------------------------------------------------------

  def override(self, override_params: Union[None, Mapping[str, Any], 'ParamsDict'],
               is_strict: bool = True) -> None:
    """Updates in place from a (nested) dict or `ParamsDict`.

    Args:
      override_params: the new values; nested dicts update nested `ParamsDict`s.
      is_strict: when True every key must exist already; when False unknown keys are added.

    Raises:
      KeyError: (a `ConfigKeyError`) an unknown key while strict, or a reserved key.
      ValueError: the object is locked.
    """
    self._check_unlocked()
    if isinstance(override_params, ParamsDict):
      override_params = override_params.as_dict()
    self._override(override_params or {}, is_strict)

  def _override(self, overrides: Mapping[str, Any], is_strict: bool = True, path: str = '') -> None:
    for key, value in overrides.items():
      key_path = _join(path, str(key))
      if key in self.RESERVED_ATTR:
        raise ConfigKeyError(key_path, _reserved_key_message(key))
      current = self.__dict__.get(key, _MISSING)
      if current is _MISSING:
        if is_strict:
          raise ConfigKeyError(key_path, _unknown_key_message(key, self))
        self._set(key, value)
      elif isinstance(value, (Mapping, ParamsDict)) and isinstance(current, ParamsDict):
        if isinstance(value, ParamsDict):
          value = value.as_dict()
        current._override(value, is_strict, key_path)  # pylint: disable=protected-access
      else:
        self._set(key, value)

  def as_dict(self) -> Dict[str, Any]:
    """The contents as nested plain dicts (values deep-copied)."""
    return {k: v.as_dict() if isinstance(v, ParamsDict) else copy.deepcopy(v)
            for k, v in self.__dict__.items() if k not in self.RESERVED_ATTR}

  def validate(self) -> None:
    """Checks the restrictions given at construction.

    Raises:
      KeyError: (a `ConfigKeyError`) a key of a restriction does not exist, or the relation is
      false.
      ValueError: a restriction is not a binary relation of the supported operators.
    """
    check_restrictions(self.as_dict(), self.__dict__.get('_restrictions') or [])


class _Missing:
  pass


_MISSING = _Missing()


def _unknown_key_message(key: Any, obj: Any) -> str:
  valid = [k for k in _public_keys(obj)]
  return (f'unknown key {key!r} for {type(obj).__name__}: The key {key!r} does not exist; valid '
          f'keys: {", ".join(valid) or "(none)"}')


def _reserved_key_message(key: str) -> str:
  return f'The key {key!r} is internally reserved. Can not be overridden.'


def _public_keys(obj: Any) -> List[str]:
  names = getattr(obj, '_declared_keys', None)
  keys = list(names()) if names is not None else []
  keys += [k for k in obj.__dict__ if not k.startswith('_') and k not in keys]
  return keys


# ---------------------------------------------------------------------------------------------
# Restrictions

# Checked in this order, so that `<=` is not read as `<`.
_RELATIONS = (
    ('==', lambda a, b: a == b), ('!=', lambda a, b: a != b), ('<=', lambda a, b: a <= b),
    ('<', lambda a, b: a < b), ('>=', lambda a, b: a >= b), ('>', lambda a, b: a > b))
_CONSTANT = re.compile(r'-?\d.*|None')


def _operand(text: str, tree: Mapping[str, Any], restriction: str) -> Any:
  text = text.strip()
  if _CONSTANT.fullmatch(text):
    return None if text == 'None' else float(text)
  node: Any = tree
  for part in text.split('.'):
    if not isinstance(node, Mapping) or part not in node:
      raise ConfigKeyError(text, f'restriction {restriction!r} names a key that does not exist')
    node = node[part]
  return node


def check_restrictions(tree: Mapping[str, Any], restrictions: Sequence[str]) -> None:
  """Checks relations like `'a.b == c'` or `'size <= 512'` on a nested dict.

  Args:
    tree: the nested dict (e.g. `params.as_dict()`).
    restrictions: relation strings; operands are dotted keys, numbers or `None`.

  Raises:
    KeyError: (a `ConfigKeyError`) a missing key, or a relation that does not hold (naming both
    sides).
    ValueError: an unsupported relation.

  Example:
    >>> check_restrictions({'a': 1, 'b': {'c': 2}}, ['a < b.c'])
  """
  for restriction in restrictions:
    for symbol, holds in _RELATIONS:
      if symbol in restriction:
        sides = restriction.split(symbol)
        if len(sides) != 2:
          raise ValueError(f'restriction {restriction!r}: only binary relations are supported')
        left, right = (_operand(s, tree, restriction) for s in sides)
        try:
          ok = holds(left, right)
        except TypeError as e:
          raise ValueError(f'restriction {restriction!r}: cannot compare {left!r} and {right!r}: '
                           f'{e}') from None
        if not ok:
          raise ConfigKeyError(
              '', f'restriction {restriction!r} does not hold: Found inconsistency between key '
              f'{sides[0].strip()!r} ({left!r}) and key {sides[1].strip()!r} ({right!r})')
        break
    else:
      raise ValueError(f'restriction {restriction!r}: expected one of '
                       f'{[s for s, _ in _RELATIONS]}')


# ---------------------------------------------------------------------------------------------
# YAML


def _float_resolver_loader(base: type, name: str) -> type:
  """`base` plus floats written without a dot (`1e-4`, `1E+3`), which YAML 1.1 reads as strings."""
  loader = type(name, (base,), {})
  loader.yaml_implicit_resolvers = {k: list(v) for k, v in base.yaml_implicit_resolvers.items()}
  loader.add_implicit_resolver(
      'tag:yaml.org,2002:float',
      re.compile(r'^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$'),
      list('-+0123456789.'))
  return loader


class _Yaml12BoolLoader(yaml.SafeLoader):
  """PyYAML's SafeLoader reading only true/false as booleans (YAML 1.2), so `off`, `on`, `yes` and
  `no` stay strings: `runtime.distribution_strategy=off` must not become False."""


_Yaml12BoolLoader.yaml_implicit_resolvers = {
    key: [(tag, regexp) for tag, regexp in resolvers if tag != 'tag:yaml.org,2002:bool']
    for key, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
_Yaml12BoolLoader.add_implicit_resolver(
    'tag:yaml.org,2002:bool', re.compile(r'^(?:true|True|TRUE|false|False|FALSE)$'),
    list('tTfF'))
_OverrideLoader = _float_resolver_loader(_Yaml12BoolLoader, '_OverrideLoader')
_FileLoader = _float_resolver_loader(yaml.SafeLoader, '_FileLoader')


def _load_value(text: str) -> Any:
  return yaml.load(text, Loader=_OverrideLoader)  # pylint: disable=no-value-for-parameter


def read_yaml(file_path: str) -> Dict[str, Any]:
  """Reads a YAML mapping (local or `gs://`); errors name the file (and line for syntax errors).

  `1e-4` is read as a float (YAML 1.1 would give a string).
  """
  # Function-level: keeps TensorFlow out of config parsing (the CLIs' start-up).
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if not tf.io.gfile.exists(file_path):
    raise FileNotFoundError(f'config file not found: {file_path}')
  with tf.io.gfile.GFile(file_path, 'r') as f:
    try:
      data = yaml.load(f, Loader=_FileLoader)  # pylint: disable=no-value-for-parameter
    except yaml.YAMLError as e:
      raise ConfigError('', f'{file_path}: invalid YAML: {e}') from None
  if data is None:
    return {}
  if not isinstance(data, Mapping):
    raise ConfigError('', f'{file_path}: expected a YAML mapping at the top level, found '
                      f'{type(data).__name__}')
  return dict(data)


def _yaml_ready(value: Any) -> Any:
  if isinstance(value, ParamsDict):
    return _yaml_ready(value.as_dict())
  if isinstance(value, Mapping):
    return {k: _yaml_ready(v) for k, v in value.items()}
  if isinstance(value, (list, tuple)):
    return [_yaml_ready(v) for v in value]
  return value


def save_yaml(data: Mapping[str, Any], file_path: str) -> None:
  """Writes a mapping as YAML (tuples as lists), creating parent directories; works with `gs://`."""
  # Function-level: keeps TensorFlow out of config parsing (the CLIs' start-up).
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  directory = os.path.dirname(file_path)
  if directory:
    tf.io.gfile.makedirs(directory)
  with tf.io.gfile.GFile(file_path, 'w') as f:
    yaml.safe_dump(_yaml_ready(dict(data)), f, default_flow_style=False, sort_keys=False)


def read_yaml_to_params_dict(file_path: str) -> ParamsDict:
  """Reads a YAML file into a `ParamsDict` (it compares equal to the plain dict it holds)."""
  return ParamsDict(read_yaml(file_path))


def save_params_dict_to_yaml(params: Union[ParamsDict, Mapping[str, Any]], file_path: str) -> None:
  """Writes a config, `ParamsDict` or dict to YAML (e.g. `model_dir/params.yaml`)."""
  save_yaml(params.as_dict() if isinstance(params, ParamsDict) else params, file_path)


# ---------------------------------------------------------------------------------------------
# Override strings

_BRACKETS = {'[': ']', '{': '}', '(': ')'}


def _split_top_level(text: str, separator: str = ',') -> List[str]:
  """Splits on `separator` outside brackets and quotes."""
  parts, depth, quote, start = [], [], None, 0
  for i, char in enumerate(text):
    if quote:
      if char == quote:
        quote = None
    elif char in '\'"':
      quote = char
    elif char in _BRACKETS:
      depth.append(_BRACKETS[char])
    elif depth and char == depth[-1]:
      depth.pop()
    elif char == separator and not depth:
      parts.append(text[start:i])
      start = i + 1
  if quote or depth:
    raise ConfigError('', f'params_override {text!r}: unbalanced quotes or brackets')
  parts.append(text[start:])
  return [p.strip() for p in parts if p.strip()]


def parse_override_string(text: str) -> Dict[str, Any]:
  """Parses `'a.b=1,c.d=[1, 2],e="x,y"'` into a nested dict; values are read as YAML scalars.

  Booleans are only true/false (YAML 1.2); `1e-4` is a float.

  Raises:
    ConfigError: an item without `=`, an empty key, or a key given two conflicting values.
  """
  result: Dict[str, Any] = {}
  for item in _split_top_level(text):
    key, sep, raw_value = item.partition('=')
    key = key.strip()
    if not sep or not key or any(not part for part in key.split('.')):
      raise ConfigError('', f'params_override item {item!r}: expected key.path=value')
    try:
      value = _load_value(raw_value) if raw_value.strip() else ''
    except yaml.YAMLError as e:
      raise ConfigError(key, f'cannot parse value {raw_value!r}: {e}') from None
    node = result
    parts = key.split('.')
    for i, part in enumerate(parts[:-1]):
      node = node.setdefault(part, {})
      if not isinstance(node, dict):
        raise ConfigError('.'.join(parts[:i + 1]), 'given both a value and sub-keys')
    if isinstance(node.get(parts[-1]), dict):
      raise ConfigError(key, 'given both a value and sub-keys')
    node[parts[-1]] = value
  return result


_CSV_KEY = re.compile(r'([A-Za-z][\w.]*)(?:\[(\d+)\])?')


def _csv_tree(csv_str: str) -> Dict[str, Any]:
  """Parses `a.b=1,a.c[0]=2` into an ordered tree of raw value strings.

  Indexed items (`a.c[0]`) go to lists.
  """
  tree: Dict[str, Any] = {}
  try:
    items = _split_top_level(csv_str)
  except ConfigError as e:
    raise ValueError(str(e)) from None
  for item in items:
    key, sep, value = item.partition('=')
    key, value = key.strip(), value.strip()
    match = _CSV_KEY.fullmatch(key)
    if not sep or not match:
      raise ValueError(f'malformed key=value item {item!r} in {csv_str!r}')
    if value.startswith('[') and '[' in value[1:]:
      raise ValueError(f'nested lists are not supported in key=value strings: {item!r}')
    if '[' in value and not value.startswith('['):
      raise ValueError(f'malformed value in {item!r}')
    if '://' in value and value[:1] not in '\'"':
      value = f"'{value}'"  # A URL such as gs://bucket/x is not a plain YAML flow scalar.
    name, index = match.group(1), match.group(2)
    parts = name.split('.')
    node = tree
    for part in parts[:-1]:
      node = node.setdefault(part, {})
      if not isinstance(node, dict):
        raise ValueError(f'{part!r} is given both a value and sub-keys in {csv_str!r}')
    leaf = parts[-1]
    if index is None:
      node[leaf] = value
    else:
      array = node.setdefault(leaf, _IndexedList())
      if not isinstance(array, _IndexedList):
        raise ValueError(f'{name!r} is given both a value and indexed items in {csv_str!r}')
      array[int(index)] = float(value) if '.' in value else int(value)
  return tree


class _IndexedList(dict):
  """Items of `a[i]=v`, keyed by index until the string is emitted."""


def _emit_json(node: Any, name: str = '') -> str:
  if isinstance(node, _IndexedList):
    size = max(node) + 1
    if sorted(node) != list(range(size)):
      raise ValueError(f'not every item of array {name!r} is given: indices {sorted(node)}')
    return str([node[i] for i in range(size)])
  if isinstance(node, dict):
    return '{' + ', '.join(f'{k} : {_emit_json(v, k)}' for k, v in node.items()) + '}'
  return node


def nested_csv_str_to_json_str(csv_str: str) -> str:
  """Turns `'a=1, b.c=x, d[1]=4, d[0]=3'` into the flow-YAML string `'{a : 1, b : {c : x}, d : [3,
  4]}'`.

  Values are kept as written (quoted strings, numbers, one-level lists); values containing `://`
  (e.g. `gs://bucket/file`) are quoted.

  Raises:
    ValueError: a malformed item, a nested list, or an indexed array with a missing item.
  """
  if not csv_str:
    return ''
  return _emit_json(_csv_tree(csv_str))


def parse_override(overrides: Union[None, str, Mapping[str, Any], ParamsDict]) -> Dict[str, Any]:
  """Turns any accepted override form into a nested dict.

  Args:
    overrides: None or '' (nothing), a mapping or `ParamsDict`, a YAML file path, YAML/JSON mapping
      text, or a `key.path=value,...` string.
  """
  if overrides is None:
    return {}
  if isinstance(overrides, ParamsDict):
    return overrides.as_dict()
  if isinstance(overrides, Mapping):
    return dict(overrides)
  if not isinstance(overrides, str):
    raise ConfigError('', f'params_override: expected a string or mapping, found '
                      f'{type(overrides).__name__}')
  text = overrides.strip()
  if not text:
    return {}
  if (text.endswith(('.yaml', '.yml', '.json')) and '\n' not in text) or os.path.isfile(text):
    return read_yaml(text)
  if '=' not in text or text.startswith('{') or '\n' in text:
    try:
      loaded = yaml.load(text, Loader=_FileLoader)  # pylint: disable=no-value-for-parameter
    except yaml.YAMLError as e:
      raise ConfigError('', f'params_override is neither key=value pairs nor valid '
                        f'YAML/JSON: {e}') from None
    if isinstance(loaded, Mapping):
      return dict(loaded)
    raise ConfigError('', f'params_override {text!r}: expected key.path=value pairs or '
                      'a YAML/JSON mapping')
  return parse_override_string(text)


def override_params_dict(params: ParamsDict,
                         dict_or_string_or_yaml_file: Union[None, str, Mapping[str, Any]],
                         is_strict: bool) -> ParamsDict:
  """Overrides `params` (a `Config` or `ParamsDict`) in place with any form `parse_override`
  accepts; returns `params`.

  Example:
    >>> override_params_dict(params, 'trainer.train_steps=10', is_strict=True)
  """
  params.override(parse_override(dict_or_string_or_yaml_file), is_strict=is_strict)
  return params
