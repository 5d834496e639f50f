"""Tests for official/nlp/modeling/losses/weighted_sparse_categorical_crossentropy.py."""

import numpy as np
import pytest
import tensorflow as tf

from official.nlp.modeling import losses
from official.nlp.modeling.losses import weighted_sparse_categorical_crossentropy as wscce


def _log_softmax(x):
  x = x - x.max(-1, keepdims=True)
  return x - np.log(np.exp(x).sum(-1, keepdims=True))


def test_weighted_mean_matches_numpy_for_logits_and_probabilities():
  rng = np.random.default_rng(0)
  logits = rng.normal(size=(3, 4, 6)).astype(np.float32)
  labels = rng.integers(0, 6, size=(3, 4))
  weights = rng.integers(0, 2, size=(3, 4)).astype(np.float32)
  per_example = -np.take_along_axis(_log_softmax(logits), labels[..., None], -1)[..., 0]
  expected = (per_example * weights).sum() / weights.sum()
  np.testing.assert_allclose(wscce.loss(labels, logits, weights, from_logits=True), expected,
                             rtol=1e-5)
  probabilities = np.exp(_log_softmax(logits))
  np.testing.assert_allclose(wscce.loss(labels, probabilities, weights), expected, rtol=1e-4)
  # Without weights: the plain mean; the package exposes Model Garden's alias.
  np.testing.assert_allclose(
      losses.weighted_sparse_categorical_crossentropy_loss(labels, logits, from_logits=True),
      per_example.mean(), rtol=1e-5)


def test_labels_with_a_trailing_axis_are_squeezed_and_zero_weights_give_zero():
  logits = tf.constant([[2.0, 0.0, -1.0], [0.5, 0.5, 3.0]])
  squeezed = wscce.loss([[0], [2]], logits, from_logits=True)
  np.testing.assert_allclose(squeezed, wscce.loss([0, 2], logits, from_logits=True))
  assert float(wscce.loss([0, 2], logits, weights=[0.0, 0.0], from_logits=True)) == 0.0


def test_rank_errors_name_the_shapes():
  with pytest.raises(RuntimeError, match=r'weights and labels must be of the same rank: '
                     r'weights.shape is \(3,\), labels.shape is \(3, 10\)'):
    wscce.loss(np.zeros((3, 10), np.int32), np.zeros((3, 10, 5)), weights=np.ones(3))
  with pytest.raises(RuntimeError, match=r'labels must have a rank of one less than predictions'):
    wscce.loss(np.zeros((3,), np.int32), np.zeros((3, 10, 5)))
