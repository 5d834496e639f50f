"""Talking-heads attention (Shazeer et al. 2020, arXiv:2003.02436) on Keras' MultiHeadAttention."""

import string
from typing import Any, Dict

import tensorflow as tf
import tf_keras

from official.modeling import bfloat16_sums
from official.modeling import tf_utils
from official.nlp.modeling.layers import attention


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class TalkingHeadsAttention(tf_keras.layers.MultiHeadAttention):
  """Multi-head attention whose heads are mixed by a learned [heads, heads] map before and after
  the softmax.

  Scores s[h] = q[h] . k[h] / sqrt(key_dim); logits l[h'] = sum_h s[h] P[h, h'] (P =
  `pre_softmax_weight`); probabilities p = masked softmax(l); mixed m[h'] = sum_h p[h] Q[h, h']
  (Q = `post_softmax_weight`); dropout on m; output as in Keras' layer. The arguments and call
  are those of `tf_keras.layers.MultiHeadAttention` (any `attention_axes`); both mixing matrices
  take `kernel_initializer`, `kernel_regularizer` and `kernel_constraint`. The returned scores are
  the mixed probabilities m (before dropout).

  Example:
    >>> layer = TalkingHeadsAttention(num_heads=4, key_dim=8)
    >>> out, scores = layer(tf.ones([2, 5, 16]), tf.ones([2, 3, 16]),
    ...                     return_attention_scores=True)
    >>> out.shape, scores.shape
    (TensorShape([2, 5, 16]), TensorShape([2, 4, 5, 3]))
  """

  def _build_attention(self, rank):
    super()._build_attention(rank)
    # Scores: [<batch axes>, heads, <query axes>, <key axes>]; the heads axis follows the batch
    # axes (all axes of the projected inputs but the attention axes, heads and channels).
    heads_axis = rank - len(self._attention_axes) - 2
    scores_rank = heads_axis + 1 + 2 * len(self._attention_axes)
    letters = string.ascii_letters[:scores_rank + 1]
    scores, new_heads = letters[:scores_rank], letters[scores_rank]
    mixed = scores[:heads_axis] + new_heads + scores[heads_axis + 1:]
    self._talking_heads_equation = (
        f'{scores},{scores[heads_axis]}{new_heads}->{mixed}')
    self._pre_softmax_weight = self._mixing_weight('pre_softmax_weight')
    self._post_softmax_weight = self._mixing_weight('post_softmax_weight')

  def _mixing_weight(self, name: str):
    return self.add_weight(
        name, shape=(self._num_heads, self._num_heads),
        initializer=tf_utils.clone_initializer(self._kernel_initializer),
        regularizer=self._kernel_regularizer, constraint=self._kernel_constraint, trainable=True)

  def _mix_heads(self, scores, weight):
    return bfloat16_sums.einsum(self._talking_heads_equation, scores, tf.cast(weight, scores.dtype))

  def _compute_attention(self, query, key, value, attention_mask=None, training=None):
    query = query * tf.cast(self._key_dim ** -0.5, query.dtype)
    scores = bfloat16_sums.einsum(self._dot_product_equation, key, query)
    scores = self._mix_heads(scores, self._pre_softmax_weight)
    probabilities = self._mix_heads(self._masked_softmax(scores, attention_mask),
                                    self._post_softmax_weight)
    dropped = self._dropout_layer(probabilities, training=training)
    return bfloat16_sums.einsum(self._combine_equation, dropped, value), probabilities

  def get_config(self) -> Dict[str, Any]:
    return attention.json_config(super().get_config())
