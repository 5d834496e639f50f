"""Tests for official/core/{registry,exp_factory,task_factory}.py."""

import dataclasses

import pytest

from official.core import config_definitions as cfg
from official.core import exp_factory
from official.core import registry
from official.core import task_factory
from tests.core import toy_task


def test_registry_rejects_duplicates_and_lists_known_names():
  things = registry.Registry('thing')
  things.register('a', 1)
  things.register('a', 1)  # the same object again is fine
  with pytest.raises(KeyError, match="thing 'a' is already registered"):
    things.register('a', 2)
  with pytest.raises(KeyError, match="unknown thing 'b'; registered: a"):
    things.lookup('b')


def test_get_exp_config_returns_fresh_configs():
  first = exp_factory.get_exp_config('test/toy_regression')
  first.trainer.train_steps = 999
  assert exp_factory.get_exp_config('test/toy_regression').trainer.train_steps == 20
  assert 'test/toy_regression' in exp_factory.registered_experiments()
  with pytest.raises(KeyError,
                     match="unknown experiment 'nope'; registered: .*test/toy_regression"):
    exp_factory.get_exp_config('nope')


def test_get_task_by_config_class():
  task = task_factory.get_task(toy_task.ToyTaskConfig(), logging_dir='/tmp/x')
  assert isinstance(task, toy_task.ToyRegressionTask)
  assert task.logging_dir == '/tmp/x'

  @dataclasses.dataclass
  class Unregistered(cfg.TaskConfig):
    pass

  with pytest.raises(KeyError, match="unknown task config 'Unregistered'"):
    task_factory.get_task(Unregistered())
