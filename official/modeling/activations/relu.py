"""ReLU capped at 6."""

import tensorflow as tf


def relu6(features) -> tf.Tensor:
  """min(max(x, 0), 6) element-wise.

  Args:
    features: a float tensor, any shape.

  Returns:
    A tensor of the input's shape and dtype.

  Example:
    >>> relu6([-1.0, 3.0, 9.0]).numpy()
    array([0., 3., 6.], dtype=float32)
  """
  return tf.nn.relu6(tf.convert_to_tensor(features))
