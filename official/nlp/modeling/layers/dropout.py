"""Dropout with a hashed keep mask (no per-element random numbers)."""

import numbers

import tensorflow as tf
import tf_keras

from official.modeling import fused_ops


def resolve_training(training):
  """A Python bool for `training` when it is known now (None -> Keras' learning phase), else the
  symbolic flag unchanged."""
  if training is None:
    training = tf_keras.backend.learning_phase()
  if isinstance(training, bool) or (isinstance(training, int) and training in (0, 1)):
    return bool(training)
  return training


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class Dropout(tf_keras.layers.Dropout):
  """`tf_keras.layers.Dropout` with a hashed keep mask, applied by one fused kernel each way.

  The mask is a counter-based hash of a two-word seed drawn per call (`fused_ops.dropout`): each
  element is kept with probability `1 - rate` and scaled by `1 / (1 - rate)`, as in Keras, but no
  random number is drawn or stored per element (about 3x cheaper on CPU than Keras' uniform draw).
  The seed comes from this layer's Keras random generator: seeded, and checkpointed with
  `enable_tf_random_generator` (deterministic resume). `dropout_seed` hands a seed to the fused
  kernels of `official.modeling.fused_ops` that apply dropout inside a larger block.

  Args: as `tf_keras.layers.Dropout` (`rate`, `noise_shape`, `seed`).

  Example:
    >>> layer = Dropout(0.1, dtype='mixed_bfloat16')
    >>> layer(tf.ones([2, 3], tf.bfloat16), training=True).dtype
    tf.bfloat16
  """

  def call(self, inputs, training=None):
    if isinstance(self.rate, numbers.Real) and self.rate == 0:
      return tf.identity(inputs)
    training = resolve_training(training)
    if isinstance(training, bool):
      return self._drop(inputs) if training else tf.identity(inputs)
    return tf.cond(tf.cast(training, tf.bool), lambda: self._drop(inputs),
                   lambda: tf.identity(inputs))

  def dropout_seed(self) -> tf.Tensor:
    """A fresh uint32 [2] seed from this layer's generator (see `fused_ops.dropout_seed`)."""
    rng = self._random_generator
    rng._maybe_init()  # pylint: disable=protected-access
    # Keras' three modes (tf_keras.backend.RandomGenerator): a tf.random.Generator (state in the
    # checkpoint), stateless with a fixed seed, or the legacy stateful ops.
    if rng._rng_type == rng.RNG_STATEFUL:  # pylint: disable=protected-access
      return fused_ops.dropout_seed(generator=rng._generator)  # pylint: disable=protected-access
    if rng._rng_type == rng.RNG_STATELESS:  # pylint: disable=protected-access
      return fused_ops.dropout_seed(seed=rng.make_seed_for_stateless_op())
    return fused_ops.dropout_seed(op_seed=rng.make_legacy_seed())

  def _drop(self, inputs):
    if self.noise_shape is None:
      return fused_ops.dropout(inputs, self.dropout_seed(), self.rate)
    keep = fused_ops.keep_mask(self._get_noise_shape(inputs), self.dropout_seed(), self.rate)
    scaled = inputs * tf.cast(1.0 / (1.0 - self.rate), inputs.dtype)
    return tf.where(keep, scaled, tf.zeros_like(scaled))
