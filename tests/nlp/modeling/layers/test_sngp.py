"""Tests for the SNGP head: spectral_normalization.py, gaussian_process.py and
`cls_head.GaussianProcessClassificationHead`."""

import numpy as np
import tensorflow as tf
import tf_keras

from official.nlp.modeling import layers
from official.nlp.modeling import models
from official.nlp.modeling import networks
from official.nlp.modeling.layers import gaussian_process
from tests import testing


def test_spectral_normalization_bounds_the_largest_singular_value():
  dense = tf_keras.layers.Dense(6, kernel_initializer=tf_keras.initializers.RandomNormal(
      stddev=3.0, seed=1))
  wrapped = layers.SpectralNormalization(dense, iteration=5, norm_multiplier=0.9)
  x = tf.random.normal([4, 5], seed=2)
  for _ in range(4):  # power iteration converges over training calls
    wrapped(x, training=True)
  kernel = wrapped.normalized_kernel().numpy()
  raw_sigma = np.linalg.svd(dense.kernel.numpy(), compute_uv=False)[0]
  assert raw_sigma > 1.0
  np.testing.assert_allclose(np.linalg.svd(kernel, compute_uv=False)[0], 0.9, rtol=1e-3)
  np.testing.assert_allclose(wrapped(x), x.numpy() @ kernel + dense.bias.numpy(), atol=1e-5)
  assert len(wrapped.weights) == 4 and len(wrapped.trainable_weights) == 2


def test_gaussian_process_logits_and_covariance_match_numpy():
  layer = layers.RandomFeatureGaussianProcess(3, num_inducing=16, gp_cov_momentum=-1,
                                              gp_cov_ridge_penalty=2.0)
  x = tf.random.normal([5, 4], seed=3)
  logits, cov = layer(x, training=True)  # adds phi' phi to the precision
  assert cov.shape == (5, 5)
  phi = layer.features(x).numpy()
  w = layer._gp_output_layer.kernel.numpy()  # pylint: disable=protected-access
  np.testing.assert_allclose(logits, phi @ w, atol=1e-5)
  precision = 2.0 * np.eye(16) + phi.T @ phi
  np.testing.assert_allclose(layer.precision.numpy(), precision, atol=1e-4)
  logits, cov = layer(x, training=False)
  np.testing.assert_allclose(cov, 2.0 * phi @ np.linalg.solve(precision, phi.T), atol=1e-4)
  layer.reset_covariance_matrix()
  np.testing.assert_allclose(layer.precision.numpy(), 2.0 * np.eye(16))


def test_mean_field_logits():
  logits = tf.constant([[2.0, -4.0], [1.0, 1.0]])
  cov = tf.constant([[3.0, 0.5], [0.5, 0.0]])
  np.testing.assert_allclose(gaussian_process.mean_field_logits(logits, cov, 1.0),
                             [[1.0, -2.0], [1.0, 1.0]], atol=1e-6)
  assert gaussian_process.mean_field_logits(logits, cov, None) is logits


def test_gp_head_outputs_covariance_and_round_trips():
  features = tf.random.normal([4, 6, 8], seed=4)
  head = layers.GaussianProcessClassificationHead(inner_dim=5, num_classes=3, num_inducing=32,
                                                  temperature=1.0, name='sngp')
  logits, cov = head(features, return_covmat=True)
  assert logits.shape == (4, 3) and cov.shape == (4, 4) and logits.dtype == tf.float32
  assert set(head.checkpoint_items) == {'pooler_dense'}
  assert len(head.weights) == 11  # pooler kernel, bias, u, v; GP norm (2), features (2), ...
  # Training logits ignore the temperature; inference logits are divided by sqrt(1 + var).
  # (Without spectral normalization, whose power iteration moves on every training call.)
  plain = layers.GaussianProcessClassificationHead(inner_dim=5, num_classes=3, num_inducing=32,
                                                   use_spec_norm=False, temperature=2.0)
  tempered = plain(features, training=True)
  plain.temperature = None
  np.testing.assert_allclose(plain(features, training=True), tempered, atol=1e-6)
  raw, cov = plain(features, training=False, return_covmat=True)
  plain.temperature = 2.0
  np.testing.assert_allclose(
      plain(features, training=False),
      raw / np.sqrt(1.0 + 2.0 * np.diag(cov.numpy()))[:, None], atol=1e-5)
  config = head.get_config()
  assert config['num_inducing'] == 32 and config['norm_multiplier'] == 0.99
  testing.run_layer_test(layers.GaussianProcessClassificationHead,
                         dict(inner_dim=5, num_classes=3, num_inducing=32), [features], (4, 3),
                         expected_output_dtype=tf.float32)


def test_bert_classifier_serializes_a_gp_head():
  encoder = networks.BertEncoder(vocab_size=30, hidden_size=16, num_layers=1,
                                 num_attention_heads=2, inner_dim=32, max_sequence_length=8)
  head = layers.GaussianProcessClassificationHead(inner_dim=0, num_classes=2, num_inducing=16)
  classifier = models.BertClassifier(encoder, num_classes=2, cls_head=head)
  ids = tf.ones([2, 4], tf.int32)
  assert classifier([ids, ids, 0 * ids]).shape == (2, 2)
  rebuilt = models.BertClassifier.from_config(classifier.get_config())
  assert isinstance(rebuilt.classifier, layers.GaussianProcessClassificationHead)
  assert rebuilt.get_config() == classifier.get_config()
