"""Tests for orbit/utils/tpu_summaries.py."""

import tensorflow as tf

from orbit.utils import tpu_summaries


def _recorded_scalars(logdir: str) -> list:
  values = []
  for path in tf.io.gfile.glob(f'{logdir}/*'):
    for event in tf.compat.v1.train.summary_iterator(path):
      for value in event.summary.value:
        values.append((value.tag, event.step))
  return values


def test_records_only_when_summaries_should_be_recorded(tmp_path):
  calls = []

  @tpu_summaries.OptionalSummariesFunction
  def step(x):
    calls.append(1)  # one call per trace
    tf.summary.scalar('x', x, step=tf.cast(x, tf.int64))
    return x * 2.0

  writer = tf.summary.create_file_writer(str(tmp_path))
  with writer.as_default():
    with tf.summary.record_if(False):
      assert float(step(tf.constant(1.0))) == 2.0
    with tf.summary.record_if(True):
      assert float(step(tf.constant(2.0))) == 4.0
    with tf.summary.record_if(False):
      step(tf.constant(3.0))
  writer.flush()
  assert _recorded_scalars(str(tmp_path)) == [('x', 2)]
  assert len(calls) == 2  # one trace each for the silent and the recording function


def test_works_as_a_method_decorator():

  class Counter(tf.Module):

    def __init__(self):
      super().__init__()
      self.total = tf.Variable(0)

    @tpu_summaries.OptionalSummariesFunction
    def add(self, n):
      self.total.assign_add(n)
      return self.total

  counter = Counter()
  counter.add(tf.constant(2))
  counter.add(tf.constant(3))
  assert int(counter.total.numpy()) == 5
