"""official.core.dataset_options and the inputs that use it: the autotuner is off, elements and
other options unchanged."""

import numpy as np
import tensorflow as tf

from official.core import dataset_options
from official.core import trainer as trainer_lib


def test_without_autotune_keeps_elements_and_other_options():
  options = tf.data.Options()
  options.deterministic = False
  dataset = tf.data.Dataset.range(10).map(lambda x: x * 2).with_options(options)
  result = dataset_options.without_autotune(dataset)
  assert result.options().autotune.enabled is False
  assert result.options().deterministic is False  # kept
  assert dataset.options().autotune.enabled is None  # the input dataset is not changed
  np.testing.assert_array_equal(sorted(result.as_numpy_iterator()), np.arange(10) * 2)


class _Task:
  """A task whose build_inputs takes no input context (Model Garden allows it)."""

  def build_inputs(self, params):
    return tf.data.Dataset.range(params)


class _ContextTask:

  def build_inputs(self, params, input_context=None):
    del input_context
    return tf.data.Dataset.range(params)


def test_trainer_build_inputs_turns_the_autotuner_off_for_both_task_signatures():
  for task in (_Task(), _ContextTask()):
    dataset = trainer_lib.build_inputs(task, 3, None)
    assert dataset.options().autotune.enabled is False
    assert list(dataset.as_numpy_iterator()) == [0, 1, 2]
