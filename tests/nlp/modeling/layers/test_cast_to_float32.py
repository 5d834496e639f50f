"""Tests for official/nlp/modeling/layers/cast_to_float32.py."""

import tensorflow as tf
import tf_keras

from official.nlp.modeling import layers
from official.nlp.modeling.layers import cast_to_float32


def test_casts_floating_tensors_of_a_structure_to_float32():
  values = [tf.constant([1.5, -2.0], tf.bfloat16), tf.constant([3], tf.int32)]
  cast, kept = layers.CastToFloat32()(values)
  assert cast.dtype == tf.float32 and cast.numpy().tolist() == [1.5, -2.0]
  assert kept.dtype == tf.int32


def test_mixed_policy_and_symbolic_use():
  assert not cast_to_float32.mixed_policy()
  tf_keras.mixed_precision.set_global_policy('mixed_bfloat16')
  try:
    assert cast_to_float32.mixed_policy()
    inputs = tf_keras.Input(shape=(3,))
    hidden = tf_keras.layers.Dense(2)(inputs)  # bfloat16 under the policy
    model = tf_keras.Model(inputs, layers.CastToFloat32()(hidden))
  finally:
    tf_keras.mixed_precision.set_global_policy('float32')
  assert hidden.dtype == tf.bfloat16 and model(tf.ones([1, 3])).dtype == tf.float32
  config = layers.CastToFloat32(name='x').get_config()
  assert layers.CastToFloat32.from_config(config).dtype == 'float32'
