"""Small helpers of model scripts: a stop threshold, constant synthetic data, `--clean`.

Example:
  >>> past_stop_threshold(0.75, eval_metric=0.78)        # True: stop training
  >>> dataset = generate_synthetic_data(tf.TensorShape([128]), input_value=1,
  ...                                   input_dtype=tf.int32, label_shape=tf.TensorShape([]))
"""

import logging
import numbers
from typing import Any, Optional

import tensorflow as tf


def past_stop_threshold(stop_threshold: Optional[float], eval_metric: Any) -> bool:
  """Whether `eval_metric` reached `stop_threshold` (`>=`); always False without a threshold.

  Args:
    stop_threshold: the threshold, or None (never stop).
    eval_metric: the evaluation metric (a Python number).

  Raises:
    ValueError: `stop_threshold` or `eval_metric` is not a number.

  Example:
    >>> past_stop_threshold(54, 100)    # True
    >>> past_stop_threshold(None, 100)  # False
  """
  if stop_threshold is None:
    return False
  if not isinstance(stop_threshold, numbers.Number):
    raise ValueError(f'stop_threshold: expected a number, found {type(stop_threshold).__name__} '
                     f'({stop_threshold!r})')
  if not isinstance(eval_metric, numbers.Number):
    raise ValueError(f'eval_metric: expected a number, found {type(eval_metric).__name__} '
                     f'({eval_metric!r})')
  if eval_metric >= stop_threshold:
    logging.info('Stop threshold %s reached: the metric is %s', stop_threshold, eval_metric)
    return True
  return False


def generate_synthetic_data(input_shape: Any, input_value: Any = 0,
                            input_dtype: Optional[tf.DType] = None, label_shape: Any = None,
                            label_value: Any = 0,
                            label_dtype: Optional[tf.DType] = None) -> tf.data.Dataset:
  """An endless dataset repeating one constant element (to time a model without its input).

  Args:
    input_shape: a `tf.TensorShape`, or a nested structure (dicts, lists) of them.
    input_value: the value of every input element.
    input_dtype: the inputs' dtype (None: inferred from `input_value`).
    label_shape: like `input_shape` for the labels; None: no labels.
    label_value: the value of every label element.
    label_dtype: the labels' dtype (None: inferred from `label_value`).

  Returns:
    A dataset of `inputs`, or of `(inputs, labels)` with `label_shape`.

  Example:
    >>> generate_synthetic_data({'ids': tf.TensorShape([4])}, input_value=1)
  """
  def constants(shapes: Any, value: Any, dtype: Optional[tf.DType]) -> Any:
    return tf.nest.map_structure(lambda shape: tf.constant(value, dtype, shape), shapes)

  element = constants(input_shape, input_value, input_dtype)
  if label_shape:
    element = (element, constants(label_shape, label_value, label_dtype))
  return tf.data.Dataset.from_tensors(element).repeat()


def apply_clean(flags_obj: Any) -> None:
  """With `--clean`, deletes `--model_dir` (when it exists)."""
  if flags_obj.clean and tf.io.gfile.exists(flags_obj.model_dir):
    logging.info('--clean: deleting %s', flags_obj.model_dir)
    tf.io.gfile.rmtree(flags_obj.model_dir)
