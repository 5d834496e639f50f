"""The data-loader registry: a data config class -> the loader class that reads it.

Every loader of `official.nlp.data` registers its config class when its module is imported, so
`get_data_loader(config)` works for any config of an imported module.

Example:
  >>> @register_data_loader_cls(MyDataConfig)
  ... class MyDataLoader:
  ...   def __init__(self, params): ...
  ...   def load(self, input_context=None): ...
  >>> dataset = get_data_loader(MyDataConfig(input_path='x.tfrecord')).load()
"""

from typing import Any, Callable, Type

from official.core import config_definitions as cfg
from official.core import registry

_LOADERS = registry.Registry('data config')


def register_data_loader_cls(data_config_cls: Type[cfg.DataConfig]) -> Callable:
  """Decorator registering a loader class (built as `loader_cls(config)`) for `data_config_cls`."""
  return _LOADERS.decorator(data_config_cls)


def get_data_loader(data_config: cfg.DataConfig) -> Any:
  """The registered loader of `type(data_config)`, built with `data_config`.

  Raises:
    KeyError: no loader is registered for the config's class (listing the registered ones).
  """
  return _LOADERS.lookup(type(data_config))(data_config)
