"""Nested dicts of configs and logs: flatten them, read a leaf, map the leaves.

Example:
  >>> flatten({'task': {'model': {'hidden_size': 256}}})   # {'task.model.hidden_size': 256}
  >>> unflatten({'task.model.hidden_size': 256})           # {'task': {'model': {...: 256}}}
  >>> get_leaf_nested_dict({'a': {'b': 1}}, ['a', 'b'])     # 1
"""

from typing import Any, Callable, Dict, List, Mapping

import numpy as np


def flatten(tree: Any, separator: str = '.', prefix: str = '') -> Dict[str, Any]:
  """`{'a': {'b': 1}}` -> `{'a.b': 1}`: one key per leaf, the path joined by `separator`.

  Lists are leaves. An empty dict gives no key.

  Example:
    >>> flatten({'eval': {'loss': 0.5}, 'step': 3}, separator='-')   # {'eval-loss': 0.5, 'step': 3}
  """
  if not isinstance(tree, dict):
    return {prefix: tree}
  flat = {}
  for key, value in tree.items():
    flat.update(flatten(value, separator, f'{prefix}{separator}{key}' if prefix else str(key)))
  return flat


def unflatten(dotted: Mapping[str, Any], separator: str = '.') -> Dict[str, Any]:
  """`{'a.b': 1}` -> `{'a': {'b': 1}}`, the inverse of `flatten`; nested mappings pass through
  (their keys may be dotted too) and merge with the dotted keys of the same path.

  Example:
    >>> unflatten({'trainer.train_steps': 5, 'task': {'train_data.seq_length': 8}})
    {'trainer': {'train_steps': 5}, 'task': {'train_data': {'seq_length': 8}}}
  """
  nested: Dict[str, Any] = {}
  for key, value in dotted.items():
    node = nested
    parts = key.split(separator)
    for part in parts[:-1]:
      node = node.setdefault(part, {})
    if isinstance(value, Mapping):
      node.setdefault(parts[-1], {}).update(unflatten(value, separator))
    else:
      node[parts[-1]] = value
  return nested


def get_leaf_nested_dict(d: Dict[str, Any], keys: List[str]) -> Any:
  """The leaf at path `keys` of the nested dict `d`.

  Raises:
    KeyError: the path does not exist ('Path not exist while traversing ...'), or ends at a dict
      rather than a leaf ('The value extracted with keys ... is not a leaf').

  Example:
    >>> get_leaf_nested_dict({'a': {'b': 1}}, ['a', 'b'])   # 1
  """
  node = d
  for i, key in enumerate(keys):
    if not isinstance(node, dict) or key not in node:
      raise KeyError(f'Path not exist while traversing the dictionary: {keys[:i + 1]} (of {keys}) '
                     f'is missing in {d}')
    node = node[key]
  if isinstance(node, dict):
    raise KeyError(f'The value extracted with keys {keys} is not a leaf of the dictionary: '
                   f'{node}')
  return node


def cast_leaf_nested_dict(d: Dict[str, Any], cast_fn: Callable[[Any], Any]) -> Dict[str, Any]:
  """A copy of the nested dict `d` with `cast_fn` applied to every leaf.

  Example:
    >>> cast_leaf_nested_dict({'a': {'b': '1'}}, int)   # {'a': {'b': 1}}
  """
  return {k: cast_leaf_nested_dict(v, cast_fn) if isinstance(v, dict) else cast_fn(v)
          for k, v in d.items()}


def scalar_leaves(d: Dict[str, Any]) -> Dict[str, Any]:
  """`d` without the leaves that are not single numbers (images, vectors), as floats.

  Example:
    >>> scalar_leaves({'loss': np.float32(0.5), 'hist': [1, 2]})   # {'loss': 0.5}
  """
  kept = {}
  for key, value in d.items():
    if isinstance(value, dict):
      kept[key] = scalar_leaves(value)
      continue
    array = np.asarray(value.numpy() if hasattr(value, 'numpy') else value)
    if array.size == 1 and (np.issubdtype(array.dtype, np.number) or array.dtype == bool):
      kept[key] = float(array.reshape(()))
  return kept
