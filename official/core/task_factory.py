"""The task registry: a `TaskConfig` subclass -> the `Task` class that runs it.

Example:
  >>> @register_task_cls(MaskedLMConfig)
  ... class MaskedLMTask(base_task.Task): ...
  >>> task = get_task(params.task, logging_dir=model_dir)
"""

from typing import Callable, Type

from official.core import config_definitions as cfg
from official.core import registry

_TASKS = registry.Registry('task config')


def register_task_cls(task_config_cls: Type[cfg.TaskConfig]) -> Callable:
  """Decorator registering a `Task` class for the config class `task_config_cls`."""
  return _TASKS.decorator(task_config_cls)


def get_task_cls(task_config_cls: Type[cfg.TaskConfig]) -> type:
  """The `Task` class registered for `task_config_cls` (KeyError listing the known ones)."""
  return _TASKS.lookup(task_config_cls)


def get_task(task_config: cfg.TaskConfig, **kwargs):
  """Builds the task registered for `type(task_config)` with `task_config` and `kwargs`."""
  return get_task_cls(type(task_config))(task_config, **kwargs)
