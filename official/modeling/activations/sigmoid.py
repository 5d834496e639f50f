"""A piecewise-linear sigmoid."""

import tensorflow as tf


def hard_sigmoid(features) -> tf.Tensor:
  """relu6(x + 3) / 6 element-wise: 0 below -3, 1 above 3, linear between.

  Args:
    features: a float tensor, any shape.

  Returns:
    A tensor of the input's shape and dtype.

  Example:
    >>> hard_sigmoid([-4.0, 0.0, 4.0]).numpy()
    array([0. , 0.5, 1. ], dtype=float32)
  """
  features = tf.convert_to_tensor(features)
  return tf.nn.relu6(features + 3.0) * (1.0 / 6.0)
