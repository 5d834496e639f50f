"""Overrides from strings, YAML/JSON text or files: what `--params_override` accepts.

Example:
  >>> parse_override_string('task.train_data.global_batch_size=64,trainer.train_steps=10')
  {'task': {'train_data': {'global_batch_size': 64}}, 'trainer': {'train_steps': 10}}
  >>> override_params_dict(params, 'trainer.optimizer_config.learning_rate.polynomial.power=0.5',
  ...                      is_strict=True)
"""

import os
import re
from typing import Any, Dict, List, Mapping, Union

import yaml

from official.modeling.hyperparams import base_config

_BRACKETS = {'[': ']', '{': '}', '(': ')'}


class _Yaml12BoolLoader(yaml.SafeLoader):
  """PyYAML's SafeLoader reading only true/false as booleans (YAML 1.2), so `off`, `on`, `yes` and
  `no` stay strings: `runtime.distribution_strategy=off` must not become False."""


_Yaml12BoolLoader.yaml_implicit_resolvers = {
    key: [(tag, regexp) for tag, regexp in resolvers if tag != 'tag:yaml.org,2002:bool']
    for key, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
_Yaml12BoolLoader.add_implicit_resolver(
    'tag:yaml.org,2002:bool', re.compile(r'^(?:true|True|TRUE|false|False|FALSE)$'),
    list('tTfF'))


def _load_value(text: str) -> Any:
  return yaml.load(text, Loader=_Yaml12BoolLoader)  # pylint: disable=no-value-for-parameter


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
    raise base_config.ConfigError('', f'params_override {text!r}: unbalanced quotes or brackets')
  parts.append(text[start:])
  return [p.strip() for p in parts if p.strip()]


def parse_override_string(text: str) -> Dict[str, Any]:
  """Parses `'a.b=1,c.d=[1, 2],e="x,y"'` into a nested dict; values are read as YAML scalars.

  Raises:
    ConfigError: an item without `=`, an empty key, or a key given two conflicting values.
  """
  result: Dict[str, Any] = {}
  for item in _split_top_level(text):
    key, sep, raw_value = item.partition('=')
    key = key.strip()
    if not sep or not key or any(not part for part in key.split('.')):
      raise base_config.ConfigError('', f'params_override item {item!r}: expected key.path=value')
    try:
      value = _load_value(raw_value) if raw_value.strip() else ''
    except yaml.YAMLError as e:
      raise base_config.ConfigError(key, f'cannot parse value {raw_value!r}: {e}') from None
    node = result
    parts = key.split('.')
    for i, part in enumerate(parts[:-1]):
      node = node.setdefault(part, {})
      if not isinstance(node, dict):
        raise base_config.ConfigError('.'.join(parts[:i + 1]), 'given both a value and sub-keys')
    if isinstance(node.get(parts[-1]), dict):
      raise base_config.ConfigError(key, 'given both a value and sub-keys')
    node[parts[-1]] = value
  return result


def parse_override(overrides: Union[None, str, Mapping[str, Any]]) -> Dict[str, Any]:
  """Turns any accepted override form into a nested dict.

  Args:
    overrides: None or '' (nothing), a mapping, a YAML file path, YAML/JSON mapping text, or a
      `key.path=value,...` string.
  """
  if overrides is None:
    return {}
  if isinstance(overrides, Mapping):
    return dict(overrides)
  if not isinstance(overrides, str):
    raise base_config.ConfigError('', f'params_override: expected a string or mapping, found '
                                  f'{type(overrides).__name__}')
  text = overrides.strip()
  if not text:
    return {}
  if (text.endswith(('.yaml', '.yml', '.json')) and '\n' not in text) or os.path.isfile(text):
    return base_config.read_yaml(text)
  if '=' not in text or text.startswith('{') or '\n' in text:
    try:
      loaded = yaml.safe_load(text)
    except yaml.YAMLError as e:
      raise base_config.ConfigError('', f'params_override is neither key=value pairs nor valid '
                                    f'YAML/JSON: {e}') from None
    if isinstance(loaded, Mapping):
      return dict(loaded)
    raise base_config.ConfigError('', f'params_override {text!r}: expected key.path=value pairs or '
                                  'a YAML/JSON mapping')
  return parse_override_string(text)


def override_params_dict(params: base_config.Config,
                         dict_or_string_or_yaml_file: Union[None, str, Mapping[str, Any]],
                         is_strict: bool) -> base_config.Config:
  """Overrides `params` in place with any form `parse_override` accepts; returns `params`."""
  params.override(parse_override(dict_or_string_or_yaml_file), is_strict=is_strict)
  return params


def read_yaml_to_params_dict(file_path: str) -> Dict[str, Any]:
  """Reads a YAML file into a nested dict."""
  return base_config.read_yaml(file_path)


def save_params_dict_to_yaml(params: base_config.Config, file_path: str) -> None:
  """Writes a config to YAML (e.g. `model_dir/params.yaml`)."""
  params.to_yaml(file_path)

