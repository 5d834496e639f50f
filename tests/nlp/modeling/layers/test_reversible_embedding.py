"""Tests for official/nlp/modeling/layers/reversible_embedding.py (Keras-NLP API)."""

import numpy as np
import tensorflow as tf

from official.nlp.modeling import layers
from tests import testing


def test_tied_reverse_uses_the_transposed_table():
  embedding = layers.ReversibleEmbedding(20, 8)
  ids = tf.constant([[1, 2, 3]])
  hidden = embedding(ids)
  np.testing.assert_allclose(hidden[0], embedding.embeddings.numpy()[[1, 2, 3]])
  logits = embedding(hidden, reverse=True)
  assert logits.shape == (1, 3, 20)
  np.testing.assert_allclose(logits, hidden.numpy() @ embedding.embeddings.numpy().T, atol=1e-5)
  assert len(embedding.weights) == 1


def test_untied_reverse_uses_its_own_kernel():
  embedding = layers.ReversibleEmbedding(20, 8, tie_weights=False)
  embedding(tf.constant([[1]]))
  assert embedding.reverse_embeddings.shape == (8, 20)
  x = np.random.default_rng(0).normal(size=(2, 8)).astype(np.float32)
  np.testing.assert_allclose(embedding(x, reverse=True), x @ embedding.reverse_embeddings.numpy(),
                             atol=1e-5)


def test_round_trips():
  for tie_weights in (True, False):
    testing.run_layer_test(layers.ReversibleEmbedding,
                           dict(input_dim=20, output_dim=8, tie_weights=tie_weights),
                           [tf.constant([[1, 2, 3]])], (1, 3, 8))
