"""The [batch, from, to] attention mask of a [batch, to] padding mask (Model Garden's names)."""

from typing import Optional

import tensorflow as tf
import tf_keras


def get_mask(inputs: tf.Tensor, to_mask: tf.Tensor, dtype: Optional[tf.DType] = None) -> tf.Tensor:
  """Repeats the padding mask `to_mask` for every position of `inputs`.

  Args:
    inputs: the attending sequence, [batch, from_length] or [batch, from_length, ...].
    to_mask: [batch, to_length], 1 for positions to attend to and 0 for padding.
    dtype: the mask's dtype (default: `inputs.dtype`).

  Returns:
    [batch, from_length, to_length]: row i is `to_mask` for every i.

  Example:
    >>> get_mask(tf.zeros([1, 2, 4]), tf.constant([[1, 0, 1]])).numpy()
    array([[[1., 0., 1.],
            [1., 0., 1.]]], dtype=float32)
  """
  inputs, to_mask = tf.convert_to_tensor(inputs), tf.convert_to_tensor(to_mask)
  dtype = inputs.dtype if dtype is None else tf.as_dtype(dtype)
  if to_mask.shape.rank is not None and to_mask.shape.rank != 2:
    raise ValueError(f'to_mask must be [batch, to_length], found shape {to_mask.shape}')
  shape = tf.shape(inputs)
  rows = tf.cast(to_mask, dtype)[:, None, :]
  mask = tf.broadcast_to(rows, tf.stack([shape[0], shape[1], tf.shape(to_mask)[1]]))
  mask.set_shape([inputs.shape[0], inputs.shape[1], to_mask.shape[1]])
  return mask


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class SelfAttentionMask(tf_keras.layers.Layer):
  """`get_mask` as a Keras layer: a [batch, to] padding mask -> a [batch, from, to] attention mask.

  Call args:
    inputs: the attending sequence [batch, from_length, ...], or the list `[inputs, to_mask]`.
    to_mask: [batch, to_length] (1 = token, 0 = padding).

  Returns:
    [batch, from_length, to_length] in the inputs' dtype (the layer's compute dtype for float
    inputs).

  Example:
    >>> SelfAttentionMask()(tf.zeros([2, 3, 8]), tf.ones([2, 3], tf.int32)).shape
    TensorShape([2, 3, 3])
  """

  def call(self, inputs, to_mask=None):
    if isinstance(inputs, (list, tuple)) and to_mask is None:
      if len(inputs) != 2:
        raise ValueError(f'{self.name} takes [inputs, to_mask], found a list of {len(inputs)}')
      inputs, to_mask = inputs
    if to_mask is None:
      raise ValueError(f'{self.name} needs to_mask ([batch, to_length]); found None')
    return get_mask(inputs, to_mask)
