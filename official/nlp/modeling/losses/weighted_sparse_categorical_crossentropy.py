"""The weighted mean of per-example sparse categorical cross-entropies (Model Garden's `loss`)."""

from typing import Any, Optional

import tensorflow as tf
import tf_keras

from official.modeling import tf_utils


def loss(labels: Any, predictions: Any, weights: Optional[Any] = None,
         from_logits: bool = False) -> tf.Tensor:
  """Cross-entropy of integer labels against class scores, averaged with optional weights.

  With `weights`, the result is `sum(weights * losses) / sum(weights)` (0 when every weight is
  0); without, the plain mean. Labels one rank short of `predictions` are expected; labels of the
  same rank (Keras' trailing axis of size 1) are squeezed first.

  Args:
    labels: int [...] class ids in [0, num_classes) (or [..., 1]).
    predictions: float [..., num_classes]: probabilities, or logits with `from_logits`.
    weights: optional [...] weights, the shape of `labels` (e.g. `masked_lm_weights`).
    from_logits: whether `predictions` are logits.

  Returns:
    A scalar, in the dtype of `predictions`.

  Raises:
    RuntimeError: the ranks of `labels`, `predictions` and `weights` do not fit (Model Garden's
      error type).

  Example:
    >>> loss(labels=[[2, 0]], predictions=tf.math.log([[[.2, .3, .5], [.6, .2, .2]]]),
    ...      weights=[[1., 0.]], from_logits=True).numpy()   # -log(0.5)
    0.6931472
  """
  predictions = tf.convert_to_tensor(predictions)
  labels = tf.cast(labels, tf.int32)
  if labels.shape.rank == predictions.shape.rank:
    labels = tf.squeeze(labels, [-1])
  if weights is not None:
    weights = tf.convert_to_tensor(weights)
    if weights.shape.rank != labels.shape.rank:
      raise RuntimeError(f'weights and labels must be of the same rank: weights.shape is '
                         f'{weights.shape}, labels.shape is {labels.shape}')
  if labels.shape.rank != predictions.shape.rank - 1:
    raise RuntimeError(f'labels must have a rank of one less than predictions: labels.shape is '
                       f'{labels.shape}, predictions.shape is {predictions.shape}')
  if from_logits:
    losses = tf.cast(tf_utils.sparse_softmax_cross_entropy(labels, predictions), predictions.dtype)
  else:
    losses = tf_keras.losses.sparse_categorical_crossentropy(labels, predictions)
  if weights is None:
    return tf.reduce_mean(losses)
  weights = tf.cast(weights, losses.dtype)
  return tf.math.divide_no_nan(tf.reduce_sum(losses * weights), tf.reduce_sum(weights))
