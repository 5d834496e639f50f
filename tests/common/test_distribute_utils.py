"""Tests for official/common/distribute_utils.py."""

import json
import os

import pytest
import tensorflow as tf

from official.common import distribute_utils


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
