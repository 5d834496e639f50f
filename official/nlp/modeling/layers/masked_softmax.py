"""A softmax that gives masked positions zero probability (Model Garden's `MaskedSoftmax`)."""

from typing import Any, Dict, Optional, Sequence

import tensorflow as tf
import tf_keras

# Added to the scores of masked positions: its exp() underflows to exactly 0 in float32.
_MASK_ADDER = -1e9


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class MaskedSoftmax(tf_keras.layers.Layer):
  """Softmax over `normalization_axes` of `scores`, with positions where `mask` is 0 excluded.

  Computed in float32 whatever the dtype policy; the result has the compute dtype.

  Args:
    mask_expansion_axes: where to insert axes into the mask until it has the scores' rank
      (e.g. `[1]`: a [batch, keys] mask against [batch, queries, keys] scores). Default: the
      mask already broadcasts against the scores.
    normalization_axes: the axes the probabilities sum to one over (default: the last axis).

  Call args:
    scores: float [batch, ...].
    mask: optional, 1 = keep, 0 = mask; the scores' shape once expanded (or broadcastable).

  Returns:
    Probabilities of the scores' shape.

  Example:
    >>> MaskedSoftmax(mask_expansion_axes=[1])(tf.zeros([1, 2, 3]), tf.constant([[1, 1, 0]]))
    <tf.Tensor: ... numpy=array([[[0.5, 0.5, 0. ], [0.5, 0.5, 0. ]]], dtype=float32)>
  """

  def __init__(self, mask_expansion_axes: Optional[Sequence[int]] = None,
               normalization_axes: Optional[Sequence[int]] = None, **kwargs):
    super().__init__(**kwargs)
    self.mask_expansion_axes = (list(mask_expansion_axes) if mask_expansion_axes is not None
                                else None)
    self.normalization_axes = (list(normalization_axes) if normalization_axes is not None
                               else [-1])

  def call(self, scores, mask=None):
    logits = tf.cast(scores, tf.float32)
    if mask is not None:
      mask = tf.cast(mask, tf.float32)
      if self.mask_expansion_axes is not None:
        while mask.shape.rank < logits.shape.rank:
          for axis in self.mask_expansion_axes:
            if mask.shape.rank < logits.shape.rank:
              mask = tf.expand_dims(mask, axis)
      logits += (1.0 - mask) * _MASK_ADDER
    if self.normalization_axes == [-1]:
      probs = tf.nn.softmax(logits, axis=-1)
    else:
      probs = tf.exp(logits - tf.reduce_logsumexp(logits, axis=self.normalization_axes,
                                                  keepdims=True))
    return tf.cast(probs, self.compute_dtype)

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.update(mask_expansion_axes=self.mask_expansion_axes,
                  normalization_axes=self.normalization_axes)
    return config
