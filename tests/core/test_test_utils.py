"""Tests of official/core/test_utils.py: Model Garden's small fake models for trainer tests."""

import numpy as np
import tensorflow as tf

from official.core import test_utils


def test_fake_keras_model_is_two_relu_dense_layers():
  model = test_utils.FakeKerasModel()
  x = tf.constant(np.random.default_rng(0).normal(size=(2, 3)), tf.float32)
  out = model(x)
  dense, dense2 = model.dense, model.dense2
  want = tf.nn.relu(tf.nn.relu(x @ dense.kernel + dense.bias) @ dense2.kernel + dense2.bias)
  np.testing.assert_allclose(out, want, rtol=1e-6)
  assert [v.shape.as_list() for v in model.trainable_variables] == [[3, 4], [4], [4, 4], [4]]


def test_fake_module_is_a_plain_tf_module_of_two_dense_parts():
  module = test_utils.FakeModule(3, name='fake')
  out = module(tf.ones([2, 3]))
  assert out.shape == [2, 4] and (out.numpy() >= 0).all()
  assert not hasattr(module, 'layers')  # not Keras
  assert sorted(v.name for v in module.trainable_variables) == [
      'fake/dense/b:0', 'fake/dense/w:0', 'fake/dense_1/b:0', 'fake/dense_1/w:0']
