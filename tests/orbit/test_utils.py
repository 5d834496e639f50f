"""Tests for orbit/utils: global step, datasets, values, epochs, summaries."""

import os

import numpy as np
import pytest
import tensorflow as tf

import orbit
from official.nlp.tools import training_curves


def test_create_global_step():
  step = orbit.utils.create_global_step()
  assert step.name == 'global_step:0' and step.dtype == tf.int64 and not step.trainable
  assert step.aggregation == tf.VariableAggregation.ONLY_FIRST_REPLICA


def test_make_distributed_dataset_passes_the_input_context():
  strategy = tf.distribute.OneDeviceStrategy('/cpu:0')
  contexts = []

  def build(n, input_context=None):
    contexts.append(input_context)
    return tf.data.Dataset.range(n).batch(2)

  batches = [b.numpy().tolist() for b in orbit.utils.make_distributed_dataset(strategy, build, 4)]
  assert batches == [[0, 1], [2, 3]]
  assert isinstance(contexts[0], tf.distribute.InputContext)
  from_dataset = orbit.utils.make_distributed_dataset(strategy, tf.data.Dataset.range(2))
  assert [int(x) for x in from_dataset] == [0, 1]
  with pytest.raises(ValueError, match='expected a tf.data.Dataset or a function'):
    orbit.utils.make_distributed_dataset(strategy, 3)


def test_get_value():
  assert orbit.utils.get_value(tf.constant(2.5)) == 2.5
  assert orbit.utils.get_value('x') == 'x'


def test_epoch_helper():
  step = orbit.utils.create_global_step()
  helper = orbit.utils.EpochHelper(3, step)
  assert helper.epoch_begin() and not helper.epoch_begin()
  step.assign(2)
  assert not helper.epoch_end() and helper.batch_index == 2 and helper.current_epoch == 0
  step.assign(3)
  assert helper.epoch_end() and helper.current_epoch == 1
  with pytest.raises(ValueError, match='call epoch_begin first'):
    helper.epoch_end()


def test_summary_manager_writes_nested_scalars_lazily(tmp_path):
  step = orbit.utils.create_global_step()
  manager = orbit.utils.SummaryManager(str(tmp_path / 'logs'), orbit.utils.scalar_summary, step)
  manager.summary_writer()  # nothing written yet, but the writer (and directory) exist now
  step.assign(7)
  manager.write_summaries({'loss': np.float32(0.5), 'squad': {'f1': tf.constant(88.0)},
                           'image': np.zeros([2, 2])})
  manager.flush()
  top = training_curves.read_scalars(str(tmp_path / 'logs'))
  assert top == {'loss': [(7, 0.5)]}   # the image is skipped
  assert training_curves.read_scalars(str(tmp_path / 'logs' / 'squad')) == {'f1': [(7, 88.0)]}
  disabled = orbit.utils.SummaryManager(None, orbit.utils.scalar_summary)
  disabled.write_summaries({'loss': 1.0})
  assert not os.path.exists(tmp_path / 'None')


def test_tf_summary_scalar_works_without_tensorboard(tmp_path):
  writer = tf.summary.create_file_writer(str(tmp_path))
  with writer.as_default(step=3):
    tf.summary.scalar('x', 1.25)
  writer.flush()
  assert training_curves.read_scalars(str(tmp_path)) == {'x': [(3, 1.25)]}
