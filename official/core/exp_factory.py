"""The experiment registry: names like `bert/pretraining` -> a factory of `ExperimentConfig`.

Example:
  >>> @register_config_factory('my/experiment')
  ... def my_experiment() -> cfg.ExperimentConfig:
  ...   return cfg.ExperimentConfig(...)
  >>> params = get_exp_config('my/experiment')   # a fresh config on every call

The built-in experiments (`bert/pretraining`, `bert/sentence_prediction`, ...) are registered on
the first lookup of a name not registered yet: installed packages name the modules that register
theirs in the `mlm_garden.experiments` entry-point group (ours: `official.common.registry_imports`,
see setup.py), and those modules are imported then. So `official.core` never imports the layers
above it, and no `import official.common.registry_imports` is needed (it still works, as in Model
Garden, and is what a source checkout that is not installed needs).
"""

import importlib.metadata
import logging
from typing import Callable, List

from official.core import config_definitions as cfg
from official.core import registry

# The entry-point group whose modules register experiments and tasks when imported.
ENTRY_POINT_GROUP = 'mlm_garden.experiments'

_EXPERIMENTS = registry.Registry('experiment')
_entry_points_loaded = False


def _load_entry_points() -> None:
  """Imports the modules of the `mlm_garden.experiments` entry points (once)."""
  global _entry_points_loaded
  if _entry_points_loaded:
    return
  _entry_points_loaded = True
  entry_points = importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)
  if not entry_points:
    logging.info('No %s entry points (is mlm-garden installed? `pip install -e .`); import '
                 'official.common.registry_imports to register the built-in experiments.',
                 ENTRY_POINT_GROUP)
  for entry_point in entry_points:
    entry_point.load()


def register_config_factory(name: str) -> Callable:
  """Decorator registering a function that returns a fresh `ExperimentConfig` under `name`."""
  return _EXPERIMENTS.decorator(name)


def get_exp_config(name: str) -> cfg.ExperimentConfig:
  """A new `ExperimentConfig` of the registered experiment `name`.

  Raises:
    KeyError: an unknown name; the message lists the registered experiments.
  """
  if name not in _EXPERIMENTS:
    _load_entry_points()
  return _EXPERIMENTS.lookup(name)()


def registered_experiments() -> List[str]:
  """The names of all registered experiments, the built-in ones included."""
  _load_entry_points()
  return _EXPERIMENTS.names()
