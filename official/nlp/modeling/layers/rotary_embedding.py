"""Rotary position embeddings (RoPE, Su et al. 2021) in the rotate-half layout of HF transformers.

A query or key vector x of size `dim` at position p is rotated pairwise: element i (i < dim / 2)
pairs with element i + dim / 2, and the pair turns by the angle p * theta^(-2i / dim):
`x * cos + rotate_half(x) * sin` with `rotate_half([x1, x2]) = [-x2, x1]` and the angles of the
two halves repeated (`[f, f]`), as HF's `apply_rotary_pos_emb` (ModernBERT, Llama, GPT-NeoX),
not the interleaved (GPT-J) layout. A rotation by angle a * p on the query and a * p' on the key
makes their dot product depend only on p - p'. The angles are computed in float32 and cos/sin
are cast to the compute dtype afterwards (as HF does under autocast).
"""

from typing import Any, Dict, Optional, Tuple

import tensorflow as tf
import tf_keras


def rotary_cos_sin(position_ids, dim: int, theta: float = 10000.0,
                   dtype: tf.DType = tf.float32) -> Tuple[tf.Tensor, tf.Tensor]:
  """cos and sin of the rotary angles `position * theta^(-2i / dim)`, the halves repeated.

  Args:
    position_ids: int or float positions, [..., seq] (e.g. [batch, seq] or [1, seq]).
    dim: the size of the rotated vectors (a head's size); even.
    theta: the base of the frequencies (HF's `rope_theta`).
    dtype: the dtype of the results (the angles are float32 whatever it is).

  Returns:
    `(cos, sin)`, each [..., seq, dim].

  Example:
    >>> cos, sin = rotary_cos_sin(tf.range(3)[None], dim=4)
    >>> cos.shape
    TensorShape([1, 3, 4])
  """
  if dim <= 0 or dim % 2:
    raise ValueError(f'rotary embeddings need an even, positive vector size, found dim={dim}')
  if theta <= 0:
    raise ValueError(f'rotary theta must be positive, found {theta}')
  exponents = tf.range(0, dim, 2, dtype=tf.float32) / float(dim)
  inverse_frequency = 1.0 / tf.pow(tf.constant(theta, tf.float32), exponents)  # [dim / 2]
  angles = tf.cast(position_ids, tf.float32)[..., None] * inverse_frequency
  angles = tf.concat([angles, angles], axis=-1)
  return tf.cast(tf.cos(angles), dtype), tf.cast(tf.sin(angles), dtype)


def rotate_half(x: tf.Tensor) -> tf.Tensor:
  """[x1, x2] -> [-x2, x1] on the last axis (x1, x2 its halves).

  Example:
    >>> rotate_half(tf.constant([1.0, 2.0, 3.0, 4.0])).numpy()
    array([-3., -4.,  1.,  2.], dtype=float32)
  """
  first, second = tf.split(x, 2, axis=-1)
  return tf.concat([-second, first], axis=-1)


def apply_rotary(x: tf.Tensor, cos: tf.Tensor, sin: tf.Tensor) -> tf.Tensor:
  """`x * cos + rotate_half(x) * sin`: x rotated by precomputed angles.

  Args:
    x: [..., dim].
    cos, sin: from `rotary_cos_sin`, broadcastable against `x` (the caller inserts the head
      axis, e.g. `cos[:, None]` for x [batch, heads, seq, dim]); cast to x's dtype.

  Returns:
    The rotated x, its shape and dtype.

  Example:
    >>> cos, sin = rotary_cos_sin(tf.constant([[1]]), dim=2)   # angle 1 radian
    >>> apply_rotary(tf.constant([[[1.0, 0.0]]]), cos, sin).numpy().round(4)
    array([[[0.5403, 0.8415]]], dtype=float32)
  """
  cos = tf.cast(cos, x.dtype)
  sin = tf.cast(sin, x.dtype)
  return x * cos + rotate_half(x) * sin


def rotary_embedding(x: tf.Tensor, position_ids=None, theta: float = 10000.0,
                     sequence_axis: int = 1) -> tf.Tensor:
  """`x` [batch, ..., dim] rotated by its positions along `sequence_axis`.

  Args:
    x: rank >= 3, e.g. [batch, seq, heads, dim] (`sequence_axis=1`) or [batch, heads, seq, dim]
      (`sequence_axis=2`).
    position_ids: int [batch, seq] (or [1, seq]); default 0, 1, ..., seq - 1 in every row. Packed
      rows restart the positions at each document.
    theta: the base of the frequencies.
    sequence_axis: the axis of x that `position_ids` index (between 1 and rank - 2).

  Returns:
    The rotated x, its shape and dtype.

  Example:
    >>> rotary_embedding(tf.ones([2, 5, 3, 8])).shape
    TensorShape([2, 5, 3, 8])
  """
  rank = x.shape.rank
  if rank is None or rank < 3 or not 1 <= sequence_axis <= rank - 2:
    raise ValueError(f'rotary_embedding needs x of rank >= 3 with sequence_axis between 1 and '
                     f'rank - 2, found rank {rank} and sequence_axis={sequence_axis}')
  if position_ids is None:
    position_ids = tf.range(tf.shape(x)[sequence_axis])[None, :]
  position_ids = tf.convert_to_tensor(position_ids)
  if position_ids.shape.rank != 2:
    raise ValueError(f'position_ids must be [batch, seq], found shape {position_ids.shape}')
  cos, sin = rotary_cos_sin(position_ids, int(x.shape[-1]), theta, x.dtype)
  # [batch, seq, dim] -> axes of size 1 before the sequence axis and between it and the last.
  shape = tf.concat([tf.shape(cos)[:1], [1] * (sequence_axis - 1), tf.shape(cos)[1:2],
                     [1] * (rank - sequence_axis - 2), tf.shape(cos)[2:]], axis=0)
  return apply_rotary(x, tf.reshape(cos, shape), tf.reshape(sin, shape))


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class RotaryEmbedding(tf_keras.layers.Layer):
  """Rotates query or key vectors by their positions (`rotary_embedding` as a layer, no weights).

  Args:
    theta: the base of the frequencies (HF's `rope_theta`; ModernBERT: 160000 in its global
      layers, 10000 in its local ones).
    sequence_axis: the sequence axis of the inputs (1: [batch, seq, heads, dim]).

  Call args:
    inputs: [batch, ..., dim], any float dtype.
    position_ids: optional int [batch, seq].

  Returns:
    The rotated inputs, their shape, in the compute dtype.

  Example:
    >>> layer = RotaryEmbedding(theta=160000.0)
    >>> layer(tf.ones([2, 5, 3, 8]), position_ids=tf.zeros([2, 5], tf.int32)).shape
    TensorShape([2, 5, 3, 8])
  """

  def __init__(self, theta: float = 10000.0, sequence_axis: int = 1, **kwargs):
    super().__init__(**kwargs)
    self.theta = float(theta)
    self.sequence_axis = sequence_axis

  def call(self, inputs, position_ids: Optional[tf.Tensor] = None):
    inputs = tf.cast(inputs, self.compute_dtype)
    return rotary_embedding(inputs, position_ids, self.theta, self.sequence_axis)

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.update(theta=self.theta, sequence_axis=self.sequence_axis)
    return config
