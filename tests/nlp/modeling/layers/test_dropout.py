"""Tests for official/nlp/modeling/layers/dropout.py."""

import numpy as np
import tensorflow as tf
import tf_keras

from official.nlp.modeling import layers
from tests import testing


def test_keeps_one_minus_rate_and_scales_the_kept_values():
  layer = layers.Dropout(0.25)
  out = layer(tf.ones([200, 500]), training=True).numpy()
  kept = out != 0
  np.testing.assert_allclose(out[kept], 1 / 0.75, rtol=1e-6)
  assert abs(kept.mean() - 0.75) < 0.01  # 100k draws: the standard deviation is 0.0014


def test_bfloat16_inputs_keep_their_dtype_and_the_gradient_is_the_mask():
  layer = layers.Dropout(0.5, dtype='mixed_bfloat16')  # the layers' policy under bfloat16 runs
  x = tf.ones([64, 64], tf.bfloat16)
  with tf.GradientTape() as tape:
    tape.watch(x)
    out = layer(x, training=True)
    total = tf.reduce_sum(tf.cast(out, tf.float32))
  grad = tape.gradient(total, x)
  assert out.dtype == tf.bfloat16
  np.testing.assert_array_equal(tf.cast(grad, tf.float32), tf.cast(out, tf.float32))
  assert set(np.unique(tf.cast(out, tf.float32))) == {0.0, 2.0}


def test_inference_and_rate_zero_are_identity():
  x = tf.random.normal([3, 4])
  np.testing.assert_array_equal(layers.Dropout(0.5)(x, training=False), x)
  np.testing.assert_array_equal(layers.Dropout(0.0)(x, training=True), x)
  np.testing.assert_array_equal(layers.Dropout(0.5)(x), x)  # learning phase 0 by default


def test_seeded_tf_random_generator_is_reproducible():
  tf_keras.backend.experimental.enable_tf_random_generator()
  try:
    first = layers.Dropout(0.5, seed=7)(tf.ones([8, 8]), training=True)
    second = layers.Dropout(0.5, seed=7)(tf.ones([8, 8]), training=True)
  finally:
    tf_keras.backend.experimental.disable_tf_random_generator()
  np.testing.assert_array_equal(first, second)


def test_noise_shape_broadcasts_the_mask():
  out = layers.Dropout(0.5, noise_shape=[4, 1])(tf.ones([4, 6]), training=True).numpy()
  assert all(len(set(row)) == 1 for row in out)


def test_round_trip():
  testing.run_layer_test(layers.Dropout, dict(rate=0.1), [tf.ones([2, 3])], (2, 3))
