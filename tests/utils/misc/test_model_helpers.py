"""Tests for official/utils/misc/model_helpers.py."""

import types

import numpy as np
import pytest
import tensorflow as tf

from official.utils.misc import model_helpers


@pytest.mark.parametrize('threshold, metric, expected', [(0.54, 1, True), (0.54, 0.1, False),
                                                         (0.54, 0.54, True), (0, -0.5, False),
                                                         (None, 5, False), (None, None, False)])
def test_past_stop_threshold(threshold, metric, expected):
  assert model_helpers.past_stop_threshold(threshold, metric) is expected


def test_past_stop_threshold_names_the_bad_argument():
  with pytest.raises(ValueError, match=r"stop_threshold: expected a number, found str \('a'\)"):
    model_helpers.past_stop_threshold('a', 1)
  with pytest.raises(ValueError, match='eval_metric: expected a number, found NoneType'):
    model_helpers.past_stop_threshold(0.5, None)


def test_synthetic_data_repeats_constants_of_the_given_structure():
  dataset = model_helpers.generate_synthetic_data(
      {'ids': tf.TensorShape([3]), 'extra': [tf.TensorShape([])]}, input_value=7,
      input_dtype=tf.int32, label_shape=tf.TensorShape([2]), label_value=0.5)
  elements = list(dataset.take(2).as_numpy_iterator())
  assert len(elements) == 2
  inputs, labels = elements[1]
  np.testing.assert_array_equal(inputs['ids'], [7, 7, 7])
  assert inputs['ids'].dtype == np.int32 and inputs['extra'][0] == 7
  np.testing.assert_allclose(labels, [0.5, 0.5])


def test_synthetic_inputs_only():
  element = next(iter(model_helpers.generate_synthetic_data(tf.TensorShape([2]), 1.5)))
  assert not isinstance(element, tuple)
  np.testing.assert_allclose(element.numpy(), [1.5, 1.5])


def test_apply_clean(tmp_path):
  (tmp_path / 'run').mkdir()
  model_helpers.apply_clean(types.SimpleNamespace(clean=False, model_dir=str(tmp_path / 'run')))
  assert (tmp_path / 'run').exists()
  model_helpers.apply_clean(types.SimpleNamespace(clean=True, model_dir=str(tmp_path / 'run')))
  assert not (tmp_path / 'run').exists()
