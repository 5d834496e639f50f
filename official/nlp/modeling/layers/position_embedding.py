"""Position embeddings: learned absolute, sinusoidal (relative attention), T5 relative bias."""

import math
from typing import Any, Dict, Optional

import tensorflow as tf
import tf_keras


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class PositionEmbedding(tf_keras.layers.Layer):
  """The learned position embeddings of an input's positions, broadcast to the input's shape.

  Args:
    max_length: the longest sequence (rows of the table).
    initializer: the table's initializer.
    seq_axis: the input's sequence axis (the table's width is the input's last axis).

  Call args:
    inputs: [batch, seq, width] (or any rank, the sequence on `seq_axis`).
    broadcast: False returns the rows shaped to broadcast against the input ([1, seq, width])
      without materializing the input's shape (what the encoder adds them with).
    position_ids: int [batch, seq]: the rows to look up instead of 0..seq - 1 (packed rows
      restart them at each document); the result is [batch, seq, width]. Inputs of rank 3 with
      the sequence on axis 1 only.

  Example:
    >>> PositionEmbedding(max_length=32)(tf.zeros([2, 5, 16])).shape
    TensorShape([2, 5, 16])
  """

  def __init__(self, max_length: int, initializer: Any = 'glorot_uniform', seq_axis: int = 1,
               **kwargs):
    super().__init__(**kwargs)
    self.max_length = max_length
    self.initializer = tf_keras.initializers.get(initializer)
    self.seq_axis = seq_axis

  def build(self, input_shape):
    self.embeddings = self.add_weight('embeddings', shape=[self.max_length, int(input_shape[-1])],
                                      initializer=self.initializer)
    super().build(input_shape)

  def call(self, inputs, broadcast: bool = True, position_ids=None):
    rank = inputs.shape.rank
    if position_ids is not None:
      if rank != 3 or self.seq_axis not in (1, -2):
        raise ValueError(f'{self.name}: position_ids need inputs [batch, seq, width] with the '
                         f'sequence on axis 1; found rank {rank}, seq_axis {self.seq_axis}')
      return tf.cast(tf.gather(self.embeddings, tf.cast(position_ids, tf.int32)),
                     self.compute_dtype)
    length = tf.shape(inputs)[self.seq_axis]
    rows = tf.cast(self.embeddings[:length], self.compute_dtype)
    if rank != 3 or self.seq_axis not in (1, -2):
      shape = [1] * rank
      shape[self.seq_axis] = length
      shape[-1] = int(self.embeddings.shape[-1])
      rows = tf.reshape(rows, shape)
    else:
      rows = rows[None]
    return tf.broadcast_to(rows, tf.shape(inputs)) if broadcast else rows

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.update(max_length=self.max_length, seq_axis=self.seq_axis,
                  initializer=tf_keras.initializers.serialize(self.initializer))
    return config


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class RelativePositionEmbedding(tf_keras.layers.Layer):
  """Sinusoidal position signals [length, hidden_size] (the Transformer's fixed embeddings).

  Position p, channel i < hidden_size / 2: sin(p * t_i); channel hidden_size / 2 + i:
  cos(p * t_i), with inverse timescales t_i spaced geometrically from 1 / min_timescale down
  to 1 / max_timescale.

  Args:
    hidden_size: width of the signals (even).
    min_timescale: the shortest timescale.
    max_timescale: the longest timescale.

  Call args:
    inputs: [batch, length, ...] whose length is used, or None with `length` given.
    length: the number of positions when `inputs` is None.

  Example:
    >>> RelativePositionEmbedding(hidden_size=4)(None, length=2).shape
    TensorShape([2, 4])
  """

  def __init__(self, hidden_size: int, min_timescale: float = 1.0,
               max_timescale: float = 1.0e4, **kwargs):
    # Fixed signals: computed in float32 whatever the policy.
    kwargs.setdefault('dtype', 'float32')
    super().__init__(**kwargs)
    self.hidden_size = hidden_size
    self.min_timescale = min_timescale
    self.max_timescale = max_timescale

  def call(self, inputs, length: Optional[int] = None):
    if inputs is None and length is None:
      raise ValueError('RelativePositionEmbedding needs inputs or a length')
    if inputs is not None:
      length = tf.shape(inputs)[1]
    positions = tf.cast(tf.range(length), tf.float32)
    channels = self.hidden_size // 2
    step = math.log(self.max_timescale / self.min_timescale) / max(channels - 1, 1)
    inverse = self.min_timescale * tf.exp(tf.range(channels, dtype=tf.float32) * -step)
    angles = positions[:, None] * inverse[None, :]
    return tf.concat([tf.sin(angles), tf.cos(angles)], axis=1)

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.update(hidden_size=self.hidden_size, min_timescale=self.min_timescale,
                  max_timescale=self.max_timescale)
    return config


def _relative_position_bucket(relative_position: tf.Tensor, bidirectional: bool = True,
                              num_buckets: int = 32, max_distance: int = 128) -> tf.Tensor:
  """T5's bucket of each relative position (key - query): exact for small distances, then
  logarithmic up to `max_distance`; with `bidirectional`, half the buckets are for keys after
  the query. Returns int32 buckets in [0, num_buckets)."""
  distance = -relative_position  # > 0: the key is before the query
  bucket = tf.zeros_like(relative_position)
  if bidirectional:
    num_buckets //= 2
    bucket += tf.cast(distance < 0, relative_position.dtype) * num_buckets
    distance = tf.abs(distance)
  else:
    distance = tf.maximum(distance, 0)
  exact = num_buckets // 2
  far = exact + tf.cast(
      tf.math.log(tf.cast(tf.maximum(distance, 1), tf.float32) / exact) /
      math.log(max_distance / exact) * (num_buckets - exact), relative_position.dtype)
  far = tf.minimum(far, num_buckets - 1)
  return bucket + tf.where(distance < exact, distance, far)


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class RelativePositionBias(tf_keras.layers.Layer):
  """T5's learned relative position bias [batch, heads, query_length, key_length].

  Each head has one learned scalar per relative-position bucket (`_relative_position_bucket`),
  held in the variable `rel_embedding` [num_buckets, num_heads].

  Args:
    num_heads: attention heads.
    relative_attention_num_buckets: buckets.
    relative_attention_max_distance: distances beyond this share the last bucket.
    bidirectional: separate buckets for keys after the query (encoders) or not (decoders).
    embeddings_initializer: the table's initializer.

  Call args:
    query: [batch, query_length, ...]; key: [batch, key_length, ...].

  Example:
    >>> RelativePositionBias(num_heads=2)(tf.zeros([3, 4, 8]), tf.zeros([3, 5, 8])).shape
    TensorShape([3, 2, 4, 5])
  """

  def __init__(self, num_heads: int, relative_attention_num_buckets: int = 32,
               relative_attention_max_distance: int = 128, bidirectional: bool = True,
               embeddings_initializer: Any = None, **kwargs):
    super().__init__(**kwargs)
    self.num_heads = num_heads
    self.relative_attention_num_buckets = relative_attention_num_buckets
    self.relative_attention_max_distance = relative_attention_max_distance
    self.bidirectional = bidirectional
    self.embeddings_initializer = tf_keras.initializers.get(
        embeddings_initializer or tf_keras.initializers.TruncatedNormal(stddev=1.0))

  def build(self, input_shape):
    self._relative_attention_bias = self.add_weight(
        'rel_embedding', shape=[self.relative_attention_num_buckets, self.num_heads],
        initializer=self.embeddings_initializer)
    super().build(input_shape)

  def call(self, query, key):
    batch = tf.shape(query)[0]
    query_length, key_length = tf.shape(query)[1], tf.shape(key)[1]
    relative = tf.range(key_length)[None, :] - tf.range(query_length)[:, None]
    buckets = _relative_position_bucket(
        relative, bidirectional=self.bidirectional,
        num_buckets=self.relative_attention_num_buckets,
        max_distance=self.relative_attention_max_distance)
    values = tf.gather(tf.cast(self._relative_attention_bias, self.compute_dtype), buckets)
    values = tf.transpose(values, [2, 0, 1])[None]  # [1, heads, query, key]
    return tf.broadcast_to(values, tf.stack([batch, self.num_heads, query_length, key_length]))

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.update(num_heads=self.num_heads,
                  relative_attention_num_buckets=self.relative_attention_num_buckets,
                  relative_attention_max_distance=self.relative_attention_max_distance,
                  bidirectional=self.bidirectional,
                  embeddings_initializer=tf_keras.initializers.serialize(
                      self.embeddings_initializer))
    return config
