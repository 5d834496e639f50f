"""Tests for official/modeling/activations (Model Garden's activation functions)."""

import numpy as np

from official.modeling import activations


def test_activations_match_numpy():
  x = np.linspace(-5, 5, 21).astype(np.float32)
  gelu = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
  np.testing.assert_allclose(activations.gelu(x), gelu, atol=1e-6)
  np.testing.assert_allclose(activations.relu6(x), np.clip(x, 0, 6))
  hard_sigmoid = np.clip(x + 3, 0, 6) / 6
  # Model Garden's rounded factor in hard_sigmoid, the exact 1/6 in hard_swish (as in Model Garden).
  np.testing.assert_allclose(activations.hard_sigmoid(x), np.clip(x + 3, 0, 6) * 0.16667, atol=1e-6)
  np.testing.assert_allclose(activations.hard_swish(x), x * hard_sigmoid, atol=1e-6)
  np.testing.assert_allclose(activations.simple_swish(x), x / (1 + np.exp(-x)), atol=1e-6)
  np.testing.assert_allclose(activations.mish(x), x * np.tanh(np.log1p(np.exp(x))), atol=1e-5)
  np.testing.assert_allclose(activations.identity(x), x)
  # Model Garden's reference values of its gelu.
  np.testing.assert_allclose(activations.gelu([[0.25, 0.0, -0.25], [-1.0, -2.0, 3.0]]),
                             [[0.14967535, 0.0, -0.10032465], [-0.15880796, -0.04540223,
                                                               2.9963627]], atol=1e-6)
