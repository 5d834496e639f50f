"""Mish: x * tanh(softplus(x)) (Misra, 2019)."""

import tensorflow as tf


def mish(x) -> tf.Tensor:
  """x * tanh(softplus(x)) element-wise.

  Args:
    x: a float tensor, any shape.

  Returns:
    A tensor of x's shape and dtype.

  Example:
    >>> mish([0.0]).numpy()
    array([0.], dtype=float32)
  """
  x = tf.convert_to_tensor(x)
  return x * tf.tanh(tf.nn.softplus(x))
