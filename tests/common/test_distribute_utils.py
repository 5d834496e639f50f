"""Tests for official/common/distribute_utils.py."""

import json
import os

import pytest
import tensorflow as tf

from official.common import distribute_utils
from official.core import config_definitions


def test_off_means_the_default_strategy():
  assert distribute_utils.get_distribution_strategy('off') is tf.distribute.get_strategy()
  with pytest.raises(ValueError, match='When 2 GPUs are specified'):
    distribute_utils.get_distribution_strategy('off', num_gpus=2)


def test_bad_arguments_name_the_problem():
  with pytest.raises(ValueError, match='`num_gpus` can not be negative'):
    distribute_utils.get_distribution_strategy(num_gpus=-1)
  with pytest.raises(ValueError, match="must be a string but got: False. If you meant to pass the "
                                       "string 'off'"):
    distribute_utils.get_distribution_strategy(False)
  with pytest.raises(ValueError, match='`OneDeviceStrategy` can not be used for more than one'):
    distribute_utils.get_distribution_strategy('one_device', num_gpus=2)
  with pytest.raises(ValueError, match='`multi_worker_mirrored`, valid values'):
    distribute_utils.get_distribution_strategy('multi_worker_mirrored', all_reduce_alg='magic')


def test_get_strategy_scope():
  one = distribute_utils.get_distribution_strategy('one_device')
  with distribute_utils.get_strategy_scope(one):
    assert tf.distribute.get_strategy() is one
  with distribute_utils.get_strategy_scope(None):
    assert tf.distribute.get_strategy() is not one


def test_one_device_and_mirrored_on_cpu():
  one = distribute_utils.get_distribution_strategy('one_device')
  assert isinstance(one, tf.distribute.OneDeviceStrategy)
  mirrored = distribute_utils.get_distribution_strategy('Mirrored')
  assert isinstance(mirrored, tf.distribute.MirroredStrategy)
  assert mirrored.num_replicas_in_sync == len(tf.config.list_logical_devices('CPU'))


def test_unknown_strategy_and_all_reduce_are_named():
  with pytest.raises(ValueError, match=r"unknown strategy 'horovod'; expected one of \['off'"):
    distribute_utils.get_distribution_strategy('horovod')
  with pytest.raises(ValueError, match="all_reduce_alg: 'magic'"):
    distribute_utils.get_distribution_strategy('mirrored', all_reduce_alg='magic')


def test_configure_cluster_writes_tf_config(monkeypatch):
  monkeypatch.delenv('TF_CONFIG', raising=False)
  assert distribute_utils.configure_cluster(None, -1) == 1
  assert distribute_utils.configure_cluster('127.0.0.1:1000,127.0.0.1:1001', 1) == 2
  tf_config = json.loads(os.environ['TF_CONFIG'])
  assert tf_config == {'cluster': {'worker': ['127.0.0.1:1000', '127.0.0.1:1001']},
                       'task': {'type': 'worker', 'index': 1}}
  assert distribute_utils.configure_cluster(None) == 2
  with pytest.raises(ValueError, match=r'task_index must be in \[0, 2\)'):
    distribute_utils.configure_cluster('a:1,b:2', 5)


def _runtime(**fields) -> config_definitions.RuntimeConfig:
  """A RuntimeConfig with `fields` set (Model Garden's defaults otherwise)."""
  runtime = config_definitions.RuntimeConfig()
  runtime.override(fields, is_strict=True)
  return runtime


def test_strategy_from_runtime_one_device_mirrored_and_off(monkeypatch):
  monkeypatch.delenv('TF_CONFIG', raising=False)
  one = distribute_utils.strategy_from_runtime(_runtime(distribution_strategy='one_device'))
  assert isinstance(one, tf.distribute.OneDeviceStrategy)
  mirrored = distribute_utils.strategy_from_runtime(_runtime())  # Model Garden's default
  assert isinstance(mirrored, tf.distribute.MirroredStrategy)
  assert mirrored.num_replicas_in_sync == len(tf.config.list_logical_devices('CPU'))
  assert distribute_utils.strategy_from_runtime(
      _runtime(distribution_strategy='off')) is tf.distribute.get_strategy()
  assert 'TF_CONFIG' not in os.environ  # no worker_hosts: no cluster written


def test_strategy_from_runtime_passes_all_reduce_alg_and_num_packs():
  mirrored = distribute_utils.strategy_from_runtime(
      _runtime(distribution_strategy='mirrored', all_reduce_alg='hierarchical_copy', num_packs=3))
  ops = mirrored.extended._cross_device_ops  # pylint: disable=protected-access
  assert isinstance(ops, tf.distribute.HierarchicalCopyAllReduce)
  assert ops._num_packs == 3  # pylint: disable=protected-access
  with pytest.raises(ValueError, match="all_reduce_alg: 'ring' is not valid"):
    distribute_utils.strategy_from_runtime(_runtime(all_reduce_alg='ring'))


def test_strategy_from_runtime_writes_the_cluster_before_building(monkeypatch):
  monkeypatch.delenv('TF_CONFIG', raising=False)
  built = []

  def fake_multi_worker(communication_options):  # a real one would wait for its peers
    built.append((json.loads(os.environ['TF_CONFIG']), communication_options.implementation))
    return 'strategy'

  monkeypatch.setattr(tf.distribute, 'MultiWorkerMirroredStrategy', fake_multi_worker)
  runtime = _runtime(distribution_strategy='multi_worker_mirrored', all_reduce_alg='ring',
                     worker_hosts='127.0.0.1:1000,127.0.0.1:1001', task_index=1)
  assert distribute_utils.strategy_from_runtime(runtime) == 'strategy'
  assert built == [({'cluster': {'worker': ['127.0.0.1:1000', '127.0.0.1:1001']},
                     'task': {'type': 'worker', 'index': 1}},
                    tf.distribute.experimental.CommunicationImplementation.RING)]
  with pytest.raises(ValueError, match=r'task_index must be in \[0, 2\)'):
    distribute_utils.strategy_from_runtime(
        _runtime(distribution_strategy='multi_worker_mirrored', worker_hosts='a:1,b:2'))
