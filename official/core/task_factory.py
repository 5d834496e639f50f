"""The task registry: a `TaskConfig` subclass -> the `Task` class that runs it.

Example:
  >>> @register_task_cls(MaskedLMConfig)
  ... class MaskedLMTask(base_task.Task): ...
  >>> task = get_task(params.task, logging_dir=model_dir)
  >>> task = get_task(MaskedLMTask, params.task)  # the class given explicitly
"""

from typing import Callable, Dict, Optional, Type, Union

from official.core import base_task
from official.core import config_definitions as cfg
from official.core import registry

_TASKS = registry.Registry('task config')


def register_task_cls(task_config_cls: Type[cfg.TaskConfig]) -> Callable:
  """Decorator registering a `Task` class for the config class `task_config_cls`."""
  return _TASKS.decorator(task_config_cls)


def get_task_cls(task_config_cls: Type[cfg.TaskConfig]) -> type:
  """The `Task` class registered for `task_config_cls` (KeyError listing the known ones)."""
  return _TASKS.lookup(task_config_cls)


def registered_tasks() -> Dict[type, type]:
  """Every registered `{task config class: Task class}`, in registration order."""
  return dict(_TASKS._items)  # pylint: disable=protected-access


def get_task(task_config: Union[cfg.TaskConfig, type], config: Optional[cfg.TaskConfig] = None,
             **kwargs):
  """Builds a task: `get_task(config)` (the class registered for `type(config)`) or
  `get_task(TaskClass, config)` (that class).

  Args:
    task_config: a task config, or a `Task` subclass.
    config: the task config when the first argument is a class.
    **kwargs: more constructor arguments (`logging_dir`, `name`).

  Returns:
    The task.

  Raises:
    KeyError: no task is registered for the config's class (listing the known ones).
    TypeError: a class that is not a `Task`, or a config given twice.

  Example:
    >>> task = get_task(params.task, logging_dir=model_dir)
    >>> task = get_task(MaskedLMTask, params.task)
  """
  if isinstance(task_config, type):
    if not issubclass(task_config, base_task.Task):
      raise TypeError(f'get_task: {task_config.__name__} is not a Task subclass (give a task '
                      'config, or a Task class and its config)')
    if config is None:
      config = kwargs.pop('params', None)
    return task_config(config, **kwargs)
  if config is not None:
    raise TypeError(f'get_task: a config was given twice ({type(task_config).__name__} and '
                    f'{type(config).__name__}); give get_task(config) or '
                    'get_task(TaskClass, config)')
  return get_task_cls(type(task_config))(task_config, **kwargs)
