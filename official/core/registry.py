"""A small name -> object registry with errors that list what is registered."""

from typing import Any, Callable, Dict, TypeVar

_T = TypeVar('_T')


class Registry:
  """Maps names (or classes) to objects; duplicate registration and unknown lookups fail clearly.

  Example:
    >>> experiments = Registry('experiment')
    >>> experiments.register('bert/pretraining', factory)
    >>> experiments.lookup('bert/pretraining')
  """

  def __init__(self, kind: str):
    self.kind = kind
    self._items: Dict[Any, Any] = {}

  def register(self, key: Any, value: Any) -> None:
    """Adds `value` under `key`; a key registered twice raises KeyError."""
    if key in self._items and self._items[key] is not value:
      raise KeyError(f'{self.kind} {_name(key)!r} is already registered')
    self._items[key] = value

  def decorator(self, key: Any) -> Callable[[_T], _T]:
    """Returns a decorator that registers what it decorates under `key`."""
    def register(value: _T) -> _T:
      self.register(key, value)
      return value
    return register

  def lookup(self, key: Any) -> Any:
    """The object registered under `key`; an unknown key raises KeyError listing the known ones."""
    if key not in self._items:
      known = ', '.join(sorted(_name(k) for k in self._items)) or '(none)'
      raise KeyError(f'unknown {self.kind} {_name(key)!r}; registered: {known}')
    return self._items[key]

  def __contains__(self, key: Any) -> bool:
    return key in self._items

  def names(self):
    """The registered keys' names, sorted."""
    return sorted(_name(k) for k in self._items)


def _name(key: Any) -> str:
  return key.__name__ if isinstance(key, type) else str(key)


def _split(reg_key: Any):
  """A string key 'a/b/c' is a path into nested dicts; any other key is one level."""
  if isinstance(reg_key, str):
    parts = reg_key.split('/')
    if not all(parts):
      raise KeyError(f'registry key {reg_key!r} has an empty path component')
    return parts
  return [reg_key]


def register(registered_collection: Dict[Any, Any], reg_key: Any) -> Callable[[_T], _T]:
  """A decorator registering what it decorates in the nested dict `registered_collection`.

  A string key with slashes, `'a/b'`, registers under `collection['a']['b']` (Model Garden's
  hierarchical registry); other keys (e.g. classes) are one level.

  Raises:
    KeyError (when decorating): the key is taken, or a prefix of it is already an object.

  Example:
    >>> collection = {}
    >>> @register(collection, 'functions/loss')
    ... def loss(): ...
    >>> lookup(collection, 'functions/loss') is loss   # True
  """
  *parents, leaf = _split(reg_key)

  def decorator(value: _T) -> _T:
    node = registered_collection
    for i, part in enumerate(parents):
      child = node.setdefault(part, {})
      if not isinstance(child, dict):
        prefix = '/'.join(parents[:i + 1])
        raise KeyError(f'cannot register {reg_key!r}: {prefix!r} is already registered as an '
                       'object, not a collection')
      node = child
    if leaf in node:
      raise KeyError(f'{_name(reg_key) if not isinstance(reg_key, str) else reg_key!r} is already '
                     'registered')
    node[leaf] = value
    return value

  return decorator


def lookup(registered_collection: Dict[Any, Any], reg_key: Any) -> Any:
  """The object registered under `reg_key` (a path for string keys).

  Raises:
    LookupError: nothing is registered there (naming the missing part and the keys that exist).
  """
  node = registered_collection
  for part in _split(reg_key):
    if not isinstance(node, dict) or part not in node:
      known = sorted(_name(k) for k in node) if isinstance(node, dict) else []
      raise LookupError(f'registration key {_name(part)!r} of {_name(reg_key)!r} not found; '
                        f'registered here: {known or "(none)"}')
    node = node[part]
  return node
