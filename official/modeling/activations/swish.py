"""Swish variants and the identity."""

import tensorflow as tf


def simple_swish(features) -> tf.Tensor:
  """x * sigmoid(x) element-wise (SiLU).

  Args:
    features: a float tensor, any shape.

  Returns:
    A tensor of the input's shape and dtype.

  Example:
    >>> simple_swish([0.0]).numpy()
    array([0.], dtype=float32)
  """
  features = tf.convert_to_tensor(features)
  return features * tf.sigmoid(features)


def hard_swish(features) -> tf.Tensor:
  """x * relu6(x + 3) / 6 element-wise (MobileNetV3's cheap swish).

  Args:
    features: a float tensor, any shape.

  Returns:
    A tensor of the input's shape and dtype.

  Example:
    >>> hard_swish([-4.0, 4.0]).numpy()
    array([-0.,  4.], dtype=float32)
  """
  features = tf.convert_to_tensor(features)
  return features * tf.nn.relu6(features + 3.0) * (1.0 / 6.0)


def identity(features) -> tf.Tensor:
  """The input unchanged (as a tensor).

  Example:
    >>> identity([1.0]).numpy()
    array([1.], dtype=float32)
  """
  return tf.identity(tf.convert_to_tensor(features))
