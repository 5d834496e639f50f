"""`MatMulWithMargin`: in-batch similarity logits of two encodings, with an additive margin."""

from typing import Any, Dict, Tuple

import tensorflow as tf
import tf_keras


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class MatMulWithMargin(tf_keras.layers.Layer):
  """Dot products of every left encoding with every right encoding of a batch.

  Row i of the left logits scores left example i against every right example of the batch; the
  pair (i, i) is the positive one, so the margin is subtracted on the diagonal only (additive
  margin softmax, Yang et al. 2019): `left = scale * (L @ R^T - margin * I)`, `right = left^T`.

  Args:
    logit_scale: multiplies the logits.
    logit_margin: subtracted from the positive (diagonal) dot products before scaling.

  Call args:
    left_encoded: [batch, dim].
    right_encoded: [batch, dim] (the same batch size).

  Returns:
    `(left_logits, right_logits)`, each [batch, batch]; `right_logits` is the transpose.

  Example:
    >>> left, right = MatMulWithMargin(logit_scale=2.0, logit_margin=0.5)(
    ...     tf.constant([[1.0, 0.0], [0.0, 1.0]]), tf.constant([[1.0, 0.0], [1.0, 1.0]]))
    >>> left.numpy()
    array([[1., 2.],
           [0., 1.]], dtype=float32)
  """

  def __init__(self, logit_scale: float = 1.0, logit_margin: float = 0.0, **kwargs):
    super().__init__(**kwargs)
    self.logit_scale = logit_scale
    self.logit_margin = logit_margin

  def call(self, left_encoded: tf.Tensor, right_encoded: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
    if left_encoded.shape.rank not in (None, 2) or right_encoded.shape.rank not in (None, 2):
      raise ValueError(f'{self.name} expects left_encoded and right_encoded of shape [batch, dim], '
                       f'found {left_encoded.shape} and {right_encoded.shape}')
    dots = tf.matmul(left_encoded, right_encoded, transpose_b=True)
    if self.logit_margin:
      dots -= self.logit_margin * tf.eye(tf.shape(dots)[0], tf.shape(dots)[1], dtype=dots.dtype)
    left_logits = self.logit_scale * dots
    return left_logits, tf.transpose(left_logits)

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.update(logit_scale=self.logit_scale, logit_margin=self.logit_margin)
    return config
