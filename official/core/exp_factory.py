"""The experiment registry: names like `bert/pretraining` -> a factory of `ExperimentConfig`.

Example:
  >>> @register_config_factory('my/experiment')
  ... def my_experiment() -> cfg.ExperimentConfig:
  ...   return cfg.ExperimentConfig(...)
  >>> params = get_exp_config('my/experiment')   # a fresh config on every call

The built-in experiments (`bert/pretraining`, `bert/sentence_prediction`, ...) are registered on
the first lookup of a name not registered yet: no `import official.common.registry_imports` is
needed (it still works, as in Model Garden).
"""

from typing import Callable, List

from official.core import config_definitions as cfg
from official.core import registry

_EXPERIMENTS = registry.Registry('experiment')


def _register_builtins() -> None:
  """Imports the modules that register the built-in experiments and tasks (once)."""
  from official.common import registry_imports  # pylint: disable=g-import-not-at-top,unused-import


def register_config_factory(name: str) -> Callable:
  """Decorator registering a function that returns a fresh `ExperimentConfig` under `name`."""
  return _EXPERIMENTS.decorator(name)


def get_exp_config(name: str) -> cfg.ExperimentConfig:
  """A new `ExperimentConfig` of the registered experiment `name`.

  Raises:
    KeyError: an unknown name; the message lists the registered experiments.
  """
  if name not in _EXPERIMENTS:
    _register_builtins()
  return _EXPERIMENTS.lookup(name)()


def registered_experiments() -> List[str]:
  """The names of all registered experiments, the built-in ones included."""
  _register_builtins()
  return _EXPERIMENTS.names()
