"""Tests for official/modeling/tf_utils.py."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official.modeling import tf_utils


def test_gelu_is_the_tanh_approximation():
  x = np.linspace(-4, 4, 17).astype(np.float32)
  expected = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
  np.testing.assert_allclose(tf_utils.get_activation('gelu')(x), expected, atol=1e-6)
  assert not np.allclose(tf_utils.get_activation('exact_gelu')(x), expected, atol=1e-6)


def test_names_round_trip_and_errors():
  for name in ('gelu', 'relu', 'tanh', 'linear'):
    assert tf_utils.serialize_activation(tf_utils.get_activation(name)) in (name, 'identity')
  assert tf_utils.get_activation(None)(3.0) == 3.0
  with pytest.raises(ValueError, match="unknown activation 'nope'"):
    tf_utils.get_activation('nope')


def test_identity_names_and_callables():
  x = tf.constant([-1.0, 2.0])
  for identifier in (None, 'linear', 'identity'):
    np.testing.assert_allclose(tf_utils.get_activation(identifier)(x), [-1.0, 2.0])
  np.testing.assert_allclose(tf_utils.get_activation('relu')(x), [0.0, 2.0])
  np.testing.assert_allclose(tf_utils.get_activation('tanh')(x), np.tanh([-1.0, 2.0]), atol=1e-6)
  custom = lambda t: 2 * t
  assert tf_utils.get_activation(custom) is custom


def test_unknown_name_lists_known_ones():
  with pytest.raises(ValueError, match='known: .*exact_gelu.*gelu'):
    tf_utils.get_activation('gelu_fast_nonexistent')


def test_serialize_activation_names():
  assert tf_utils.serialize_activation(None) is None
  assert tf_utils.serialize_activation('gelu') == 'gelu'
  assert tf_utils.serialize_activation(tf_utils.get_activation('exact_gelu')) == 'exact_gelu'


def test_clone_initializer_gives_an_equal_but_separate_instance():
  initializer = tf_keras.initializers.TruncatedNormal(stddev=0.02, seed=7)
  clone = tf_utils.clone_initializer(initializer)
  assert clone is not initializer and clone.get_config() == initializer.get_config()
  np.testing.assert_allclose(clone([3, 2]), initializer([3, 2]))
  assert tf_utils.clone_initializer('zeros') == 'zeros'
