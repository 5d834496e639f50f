"""Tests of official/core/trainer_inputs.py: the trainer's training and validation inputs."""

import logging

import tensorflow as tf

from official.core import trainer as trainer_lib
from official.core import trainer_inputs


class _Task:
  """A task whose dataset is 0, 1, 2, ... (`data` elements), sharded over the pipelines."""

  def __init__(self):
    self.contexts = []

  def build_inputs(self, data, input_context=None):
    self.contexts.append(input_context)
    dataset = tf.data.Dataset.range(data)
    if input_context is not None and input_context.num_input_pipelines > 1:
      dataset = dataset.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    return dataset


class _Strategy:
  """What the inputs use of a strategy of `replicas` replicas fed by `pipelines` pipelines: each
  pipeline's dataset, as `distribute_datasets_from_function` would build it."""

  def __init__(self, replicas, pipelines=1):
    self.num_replicas_in_sync, self.pipelines = replicas, pipelines

  def distribute_datasets_from_function(self, dataset_fn):
    contexts = [tf.distribute.InputContext(self.pipelines, i, self.num_replicas_in_sync)
                for i in range(self.pipelines)]
    return [list(dataset_fn(c).as_numpy_iterator()) for c in contexts]


def test_build_inputs_is_importable_from_the_trainer():
  assert trainer_lib.build_inputs is trainer_inputs.build_inputs


def test_build_inputs_passes_the_context_when_the_signature_cannot_be_read(monkeypatch):
  class Builtin:
    build_inputs = staticmethod(lambda data, ctx: tf.data.Dataset.range(data))

  def unreadable(_):
    raise ValueError('no signature')

  monkeypatch.setattr(trainer_inputs.inspect, 'signature', unreadable)
  dataset = trainer_inputs.build_inputs(Builtin(), 2, None)
  assert list(dataset.as_numpy_iterator()) == [0, 1]
  assert dataset.options().autotune.enabled is False


def test_one_replica_reads_a_checkpointable_iterator(tmp_path):
  task = _Task()
  iterator = trainer_inputs.train_iterator(_Strategy(1), task, 10)
  assert task.contexts == [None]
  assert [int(next(iterator)) for _ in range(3)] == [0, 1, 2]
  checkpoint = tf.train.Checkpoint(iterator=iterator)
  path = checkpoint.save(str(tmp_path / 'it'))
  assert [int(next(iterator)) for _ in range(2)] == [3, 4]
  checkpoint.restore(path)
  assert int(next(iterator)) == 3  # resumes where the checkpoint left off


def test_several_replicas_skip_the_batches_of_the_restored_steps(caplog):
  task = _Task()
  with caplog.at_level(logging.INFO):
    iterator = trainer_inputs.train_iterator(_Strategy(4, pipelines=2), task, 40,
                                             accumulation_steps=3, skip_steps=2)
  # Each pipeline feeds 2 replicas; a step reads 3 micro-batches: 2 steps are 12 of its elements.
  assert list(iterator) == [list(range(24, 40, 2)), list(range(25, 40, 2))]
  assert [(c.num_input_pipelines, c.input_pipeline_id) for c in task.contexts] == [(2, 0), (2, 1)]
  assert "skipping the first 2 steps' batches" in caplog.text
  caplog.clear()
  with caplog.at_level(logging.INFO):
    fresh = trainer_inputs.train_iterator(_Strategy(4, pipelines=2), _Task(), 8)
  assert list(fresh) == [[0, 2, 4, 6], [1, 3, 5, 7]] and 'skipping' not in caplog.text


def test_validation_reads_every_pipeline_from_the_start():
  assert trainer_inputs.validation_dataset(_Strategy(2, pipelines=2), _Task(), 5) == [[0, 2, 4],
                                                                                      [1, 3]]
