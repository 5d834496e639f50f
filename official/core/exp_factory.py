"""The experiment registry: names like `bert/pretraining` -> a factory of `ExperimentConfig`.

Example:
  >>> @register_config_factory('my/experiment')
  ... def my_experiment() -> cfg.ExperimentConfig:
  ...   return cfg.ExperimentConfig(...)
  >>> params = get_exp_config('my/experiment')   # a fresh config on every call
"""

from typing import Callable, List

from official.core import config_definitions as cfg
from official.core import registry

_EXPERIMENTS = registry.Registry('experiment')


def register_config_factory(name: str) -> Callable:
  """Decorator registering a function that returns a fresh `ExperimentConfig` under `name`."""
  return _EXPERIMENTS.decorator(name)


def get_exp_config(name: str) -> cfg.ExperimentConfig:
  """A new `ExperimentConfig` of the registered experiment `name`.

  Raises:
    KeyError: an unknown name; the message lists the registered experiments.
  """
  return _EXPERIMENTS.lookup(name)()


def registered_experiments() -> List[str]:
  """The names of all registered experiments."""
  return _EXPERIMENTS.names()
