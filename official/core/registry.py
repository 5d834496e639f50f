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
    """The object registered under `key`; unknown keys raise KeyError listing the registered ones."""
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
