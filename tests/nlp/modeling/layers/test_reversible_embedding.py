"""Tests for official/nlp/modeling/layers/reversible_embedding.py (Keras-NLP API)."""

import numpy as np
import tensorflow as tf
import tf_keras

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


def test_reverse_accepts_any_leading_shape_and_mixed_precision():
  tf_keras.mixed_precision.set_global_policy('mixed_bfloat16')
  try:
    embedding = layers.ReversibleEmbedding(20, 8)
    hidden = embedding(tf.constant([[1, 2, 3]]))
    flat = embedding(tf.ones([4, 8]), reverse=True)
    deep = embedding(tf.ones([2, 3, 5, 8]), reverse=True)
  finally:
    tf_keras.mixed_precision.set_global_policy('float32')
  assert hidden.dtype == tf.bfloat16 and embedding.embeddings.dtype == tf.float32
  assert flat.shape == (4, 20) and deep.shape == (2, 3, 5, 20) and deep.dtype == tf.bfloat16
