"""A piecewise-linear sigmoid."""

import tensorflow as tf


# Model Garden's factor (not exactly 1/6): outputs equal Model Garden's, e.g. 1.00002 above 3.
_ONE_SIXTH = 0.16667


def hard_sigmoid(features) -> tf.Tensor:
  """relu6(x + 3) * 0.16667 element-wise: 0 below -3, about 1 above 3, linear between.

  The factor is Model Garden's rounded 1/6, so that results match its layers exactly; `hard_swish`
  uses the exact 1/6, as Model Garden's does.

  Args:
    features: a float tensor, any shape.

  Returns:
    A tensor of the input's shape and dtype.

  Example:
    >>> hard_sigmoid([-4.0, 0.0, 4.0]).numpy()
    array([0.     , 0.50001, 1.00002], dtype=float32)
  """
  features = tf.convert_to_tensor(features)
  return tf.nn.relu6(features + 3.0) * _ONE_SIXTH
