"""Tests for official/nlp/modeling/layers/masked_lm_head.py (Keras-NLP API)."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official.nlp.modeling import layers
from tests import testing
from tests.nlp.modeling import numpy_bert


def test_tied_head_matches_numpy():
  embedding = layers.ReversibleEmbedding(30, 8)
  embedding(tf.constant([[0]]))
  head = layers.MaskedLMHead(vocabulary_size=30, token_embedding=embedding,
                             intermediate_activation='relu', activation='softmax')
  inputs = np.random.default_rng(0).normal(size=(2, 6, 8)).astype(np.float32)
  positions = np.array([[0, 5], [2, 3]], np.int32)
  probs = head(inputs, positions).numpy()
  assert probs.shape == (2, 2, 30)
  kernel, bias = [v.numpy() for v in head.intermediate_dense.weights]
  gamma, beta = [v.numpy() for v in head.layer_norm.weights]
  x = np.maximum(np.take_along_axis(inputs, positions[..., None], 1) @ kernel + bias, 0)
  x = numpy_bert.layer_norm(x, gamma, beta, eps=1e-5)
  logits = x @ embedding.embeddings.numpy().T + head.output_bias.numpy()
  np.testing.assert_allclose(probs, numpy_bert.softmax(logits), atol=1e-5)


def test_untied_head_round_trip():
  testing.run_layer_test(layers.MaskedLMHead, dict(vocabulary_size=30),
                         [tf.random.normal([2, 6, 8]), tf.constant([[1, 2], [3, 4]])], (2, 2, 30))


def test_tied_head_config_round_trip():
  embedding = layers.ReversibleEmbedding(30, 8)
  head = layers.MaskedLMHead(vocabulary_size=30, token_embedding=embedding)
  head(tf.random.normal([1, 4, 8]), tf.constant([[1]]))
  rebuilt = layers.MaskedLMHead.from_config(head.get_config())
  assert rebuilt.token_embedding.input_dim == 30 and rebuilt.get_config() == head.get_config()


def test_vocabulary_mismatch_raises():
  with pytest.raises(ValueError, match='input_dim 30 != vocabulary_size 31'):
    layers.MaskedLMHead(vocabulary_size=31, token_embedding=layers.ReversibleEmbedding(30, 8))


def test_untied_head_matches_numpy():
  head = layers.MaskedLMHead(vocabulary_size=30, intermediate_activation='gelu',
                             bias_initializer='ones')
  inputs = np.random.default_rng(1).normal(size=(2, 6, 8)).astype(np.float32)
  positions = np.array([[0, 5, 1], [2, 3, 3]], np.int32)
  logits = head(inputs, positions).numpy()
  assert logits.shape == (2, 3, 30) and logits.dtype == np.float32
  kernel, bias = [v.numpy() for v in head.intermediate_dense.weights]
  gamma, beta = [v.numpy() for v in head.layer_norm.weights]
  x = numpy_bert.gelu_tanh(np.take_along_axis(inputs, positions[..., None], 1) @ kernel + bias)
  x = numpy_bert.layer_norm(x, gamma, beta, eps=1e-5)
  expected = x @ head.output_kernel.numpy() + head.output_bias.numpy()
  np.testing.assert_allclose(logits, expected, atol=1e-5)


def test_mixed_bfloat16_logits_are_float32():
  tf_keras.mixed_precision.set_global_policy('mixed_bfloat16')
  try:
    embedding = layers.ReversibleEmbedding(30, 8)
    hidden = embedding(tf.constant([[1, 2, 3, 4]]))
    head = layers.MaskedLMHead(vocabulary_size=30, token_embedding=embedding)
    logits = head(hidden, tf.constant([[1, 2]]))
  finally:
    tf_keras.mixed_precision.set_global_policy('float32')
  assert hidden.dtype == tf.bfloat16
  assert logits.dtype == tf.float32 and logits.shape == (1, 2, 30)
  assert all(v.dtype == tf.float32 for v in head.weights)
