"""GELU, the tanh approximation (BERT's and Model Garden's 'gelu')."""

import tensorflow as tf


def gelu(x) -> tf.Tensor:
  """0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) element-wise.

  Args:
    x: a float tensor (or anything `tf.convert_to_tensor` takes), any shape.

  Returns:
    A tensor of x's shape and float dtype.

  Example:
    >>> gelu([1.0]).numpy()
    array([0.841192], dtype=float32)
  """
  return tf.nn.gelu(tf.convert_to_tensor(x), approximate=True)
