"""Tests for official/nlp/modeling/layers/fused_layer_norm.py."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official.nlp.modeling import layers


def _values_and_gradients(layer, x, upstream):
  with tf.GradientTape() as tape:
    tape.watch(x)
    out = layer(x)
    total = tf.reduce_sum(tf.cast(out, tf.float32) * upstream)
  return [out] + tape.gradient(total, [x] + layer.trainable_variables)


@pytest.mark.parametrize('center', [True, False])
def test_matches_keras_layer_norm_values_and_gradients(center):
  rng = np.random.default_rng(0)
  x = tf.constant(rng.normal(size=(3, 5, 16)) * 3 + 1, tf.float32)
  upstream = tf.constant(rng.normal(size=(3, 5, 16)), tf.float32)
  kwargs = dict(epsilon=1e-5, center=center, beta_initializer='random_normal',
                gamma_initializer='random_normal')
  fused, keras = layers.FusedLayerNormalization(**kwargs), tf_keras.layers.LayerNormalization(
      **kwargs)
  fused.build(x.shape)
  keras.build(x.shape)
  keras.set_weights(fused.get_weights())
  ours, want = (_values_and_gradients(layer, x, upstream) for layer in (fused, keras))
  assert len(ours) == len(want) == (4 if center else 3)
  for a, b in zip(ours, want):
    np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
  assert [v.name for v in fused.weights] == [v.name for v in keras.weights]


def test_bfloat16_input_gives_the_float32_output_of_a_float32_policy():
  x = tf.random.normal([4, 32], seed=1)
  norm = layers.FusedLayerNormalization(dtype=tf.float32)
  out = norm(tf.cast(x, tf.bfloat16))
  want = tf_keras.layers.LayerNormalization(dtype=tf.float32)(tf.cast(tf.cast(x, tf.bfloat16),
                                                                      tf.float32))
  assert out.dtype == tf.float32
  np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)
  tf_keras.mixed_precision.set_global_policy('mixed_bfloat16')
  try:
    mixed = layers.FusedLayerNormalization()
    assert mixed(x).dtype == tf.bfloat16 and mixed.gamma.dtype == tf.float32
  finally:
    tf_keras.mixed_precision.set_global_policy('float32')


def test_other_axes_use_the_keras_computation():
  x = tf.random.normal([2, 3, 8], seed=2)
  fused = layers.FusedLayerNormalization(axis=1)
  keras = tf_keras.layers.LayerNormalization(axis=1)
  np.testing.assert_allclose(fused(x), keras(x), rtol=1e-5, atol=1e-6)
  no_scale = layers.FusedLayerNormalization(scale=False)
  np.testing.assert_allclose(no_scale(x), tf_keras.layers.LayerNormalization(scale=False)(x),
                             rtol=1e-5, atol=1e-6)


def test_config_round_trip_and_functional_graph():
  norm = layers.FusedLayerNormalization(epsilon=1e-12, center=False, name='final_layer_norm')
  clone = layers.FusedLayerNormalization.from_config(norm.get_config())
  assert clone.get_config() == norm.get_config() and not clone.center
  inputs = tf_keras.Input(shape=(None, 8))
  model = tf_keras.Model(inputs, layers.FusedLayerNormalization()(inputs))
  x = tf.random.normal([2, 5, 8], seed=3)
  np.testing.assert_allclose(model(x), tf_keras.layers.LayerNormalization()(x), rtol=1e-5,
                             atol=1e-5)
  restored = tf_keras.Model.from_config(model.get_config())
  assert isinstance(restored.layers[-1], layers.FusedLayerNormalization)


def test_output_in_input_dtype_rounds_once_in_the_kernel():
  x = tf.cast(tf.random.normal([4, 32], seed=3), tf.bfloat16)
  norm = layers.FusedLayerNormalization(dtype=tf.float32, output_in_input_dtype=True)
  out = norm(x)
  assert out.dtype == tf.bfloat16
  np.testing.assert_array_equal(out, tf.cast(layers.FusedLayerNormalization(dtype=tf.float32)(x),
                                             tf.bfloat16))
  config = norm.get_config()
  assert config['output_in_input_dtype'] is True
  assert layers.FusedLayerNormalization.from_config(config).output_in_input_dtype
  assert 'output_in_input_dtype' not in layers.FusedLayerNormalization().get_config()


def test_a_norm_built_for_another_width_raises_tensorflows_error():
  norm = layers.FusedLayerNormalization()
  norm(tf.ones([2, 16]))
  with pytest.raises(tf.errors.InvalidArgumentError):
    norm(tf.ones([2, 32]))
