"""Tests for official/modeling/optimization/keras_optimizers.py."""

import numpy as np
import tensorflow as tf
import tf_keras

from official.modeling.optimization import keras_optimizers


def test_sgd_momentum_matches_numpy_and_tf_keras():
  grads = [np.array([1.0, -2.0], np.float32), np.array([0.5, 0.5], np.float32)]
  ours, theirs = tf.Variable([1.0, 1.0]), tf.Variable([1.0, 1.0])
  opt = keras_optimizers.SGD(0.1, momentum=0.9, nesterov=True)
  ref = tf_keras.optimizers.SGD(0.1, momentum=0.9, nesterov=True)
  w, m = np.array([1.0, 1.0]), np.zeros(2)
  for g in grads:
    opt.apply_gradients([(tf.constant(g), ours)])
    ref.apply_gradients([(tf.constant(g), theirs)])
    m = 0.9 * m - 0.1 * g
    w = w + 0.9 * m - 0.1 * g
  np.testing.assert_allclose(ours.numpy(), w, rtol=1e-6)
  np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


def test_adam_config_round_trip():
  opt = keras_optimizers.Adam(1e-3, beta_2=0.98, global_clipnorm=1.0)
  restored = tf_keras.optimizers.deserialize(tf_keras.optimizers.serialize(opt),
                                             use_legacy_optimizer=False)
  assert type(restored) is keras_optimizers.Adam
  assert restored.get_config() == opt.get_config()
