"""Tests for official/core/savedmodel_checkpoint_manager.py."""

import os

import numpy as np
import pytest
import tensorflow as tf

from official.core import checkpointing
from official.core import savedmodel_checkpoint_manager as scm


class _Scale(tf.Module):
  """y = w * x, with a serving signature."""

  def __init__(self):
    super().__init__()
    self.w = tf.Variable(2.0)

  @tf.function(input_signature=[tf.TensorSpec([], tf.float32)])
  def __call__(self, x):
    return self.w * x

  @property
  def saved_model_signatures(self):
    return {'serving_default': self.__call__}


def _manager(directory, max_to_keep=2, modules=None):
  module = _Scale()
  checkpoint = tf.train.Checkpoint(module=module)
  modules = {'scale': module} if modules is None else modules
  return scm.SavedModelCheckpointManager(checkpoint, str(directory), max_to_keep,
                                         modules_to_export=modules), module


def test_each_checkpoint_gets_its_savedmodels_and_old_ones_go(tmp_path):
  manager, module = _manager(tmp_path)
  paths = []
  for step in (1, 2, 3):
    module.w.assign(float(step))
    paths.append(manager.save(checkpoint_number=step))
  assert manager.savedmodels == [scm.make_saved_modules_directory_name(p) for p in paths[1:]]
  assert manager.latest_savedmodel == f'{tmp_path}/ckpt-3_saved_modules'
  assert not os.path.exists(f'{tmp_path}/ckpt-1_saved_modules')
  assert not [p for p in os.listdir(tmp_path) if p.endswith('_temp')]
  loaded = tf.saved_model.load(os.path.join(manager.latest_savedmodel, 'scale'))
  np.testing.assert_allclose(loaded.signatures['serving_default'](x=tf.constant(2.0))['output_0'],
                             6.0)
  # A new manager on the same directory finds them.
  again, _ = _manager(tmp_path)
  assert sorted(again.get_existing_savedmodels()) == manager.savedmodels


def test_without_modules_only_the_checkpoint_is_written(tmp_path):
  manager, _ = _manager(tmp_path, modules={})
  assert manager.save() == f'{tmp_path}/ckpt-1'
  assert manager.latest_savedmodel is None


def test_nonfinite_weights_are_not_saved(tmp_path):
  manager, module = _manager(tmp_path)
  module.w.assign(float('nan'))
  with pytest.raises(checkpointing.TrainingStopped, match='NaN or Inf'):
    manager.save()
  assert manager.get_existing_savedmodels() == []


def test_wait_returns_the_next_newer_savedmodel(tmp_path):
  manager, _ = _manager(tmp_path, max_to_keep=3)
  for step in (5, 9):
    manager.save(checkpoint_number=step)
  first = manager.wait_for_new_savedmodel(None, seconds_to_sleep=0.01, timeout=1)
  assert manager.get_savedmodel_number_from_path(first) == 5
  second = manager.wait_for_new_savedmodel(first, seconds_to_sleep=0.01, timeout=1)
  assert second.endswith('ckpt-9_saved_modules')
  assert manager.wait_for_new_savedmodel(second, seconds_to_sleep=0.01, timeout=0.05) is None
  assert manager.get_savedmodel_number_from_path('/tmp/other') is None


def test_iterator_yields_in_order_and_asks_timeout_fn(tmp_path):
  manager, _ = _manager(tmp_path, max_to_keep=3)
  for step in (1, 2):
    manager.save(checkpoint_number=step)
  calls = []

  def timeout_fn():
    calls.append(1)
    return len(calls) >= 2

  paths = list(manager.savedmodels_iterator(timeout=0.01, timeout_fn=timeout_fn))
  assert [manager.get_savedmodel_number_from_path(p) for p in paths] == [1, 2]
  assert len(calls) == 2
