"""Tests for official/modeling/tf_utils.py."""

import numpy as np
import pytest
import tensorflow as tf

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
