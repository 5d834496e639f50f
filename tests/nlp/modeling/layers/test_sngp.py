"""Tests for the SNGP head: spectral_normalization.py, gaussian_process.py and
`cls_head.GaussianProcessClassificationHead`."""

import numpy as np
import pytest
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


@pytest.mark.slow
def test_bert_classifier_serializes_a_gp_head():
  encoder = networks.BertEncoder(**testing.tiny_kwargs(vocab_size=30, num_layers=1,
                                                       max_sequence_length=8))
  head = layers.GaussianProcessClassificationHead(inner_dim=0, num_classes=2, num_inducing=16)
  classifier = models.BertClassifier(encoder, num_classes=2, cls_head=head)
  ids = tf.ones([2, 4], tf.int32)
  assert classifier([ids, ids, 0 * ids]).shape == (2, 2)
  rebuilt = models.BertClassifier.from_config(classifier.get_config())
  assert isinstance(rebuilt.classifier, layers.GaussianProcessClassificationHead)
  assert rebuilt.get_config() == classifier.get_config()


def test_laplace_covariance_updates_match_numpy():
  phi = np.random.RandomState(0).normal(size=(6, 4)).astype(np.float32)
  logits = np.random.RandomState(1).normal(size=(6, 1)).astype(np.float32)
  cov = gaussian_process.LaplaceRandomFeatureCovariance(momentum=0.9, ridge_penalty=2.0)
  assert cov(phi, training=True).numpy().tolist() == np.eye(6).tolist()
  expected = 0.9 * 2.0 * np.eye(4) + 0.1 * phi.T @ phi / 6
  np.testing.assert_allclose(cov.precision_matrix.numpy(), expected, atol=1e-5)
  np.testing.assert_allclose(cov(phi), 2.0 * phi @ np.linalg.solve(expected, phi.T), atol=1e-4)
  cov.reset_precision_matrix()
  np.testing.assert_allclose(cov.precision_matrix.numpy(), 2.0 * np.eye(4))

  logistic = gaussian_process.LaplaceRandomFeatureCovariance(momentum=-1.0,
                                                              likelihood='binary_logistic')
  logistic(phi, logits=logits, training=True)
  p = 1.0 / (1.0 + np.exp(-logits))
  np.testing.assert_allclose(logistic.precision_matrix.numpy(),
                             np.eye(4) + phi.T @ (p * (1 - p) * phi), atol=1e-5)
  with pytest.raises(ValueError, match='univariate logits'):
    logistic(phi, logits=np.zeros([6, 2], np.float32), training=True)
  with pytest.raises(ValueError, match="`likelihood` must be one of .*found 'probit'"):
    gaussian_process.LaplaceRandomFeatureCovariance(likelihood='probit')
  testing.run_layer_test(gaussian_process.LaplaceRandomFeatureCovariance,
                         dict(momentum=0.5, likelihood='poisson'), [phi], (6, 6))


def test_gaussian_process_kernels_and_extra_outputs():
  x = tf.random.normal([5, 3], seed=5)
  linear = layers.RandomFeatureGaussianProcess(2, gp_kernel_type='linear',
                                               scale_random_features=False,
                                               return_random_features=True)
  logits, cov, features = linear(x, training=True)
  np.testing.assert_allclose(features, x, atol=1e-6)
  cov_layer = linear._gp_cov_layer  # pylint: disable=protected-access
  assert cov_layer.precision_matrix.shape == (3, 3)
  assert linear.precision is cov_layer.precision_matrix
  assert logits.shape == (5, 2) and cov.shape == (5, 5)
  # The default N(0, 1) random features approximate the RBF kernel exp(-|x - y|^2 / 2).
  rbf = layers.RandomFeatureGaussianProcess(1, num_inducing=8192, return_gp_cov=False,
                                            return_random_features=True)
  _, phi = rbf(0.5 * x)
  sq = np.sum(((0.5 * x.numpy())[:, None] - (0.5 * x.numpy())[None]) ** 2, axis=-1)
  np.testing.assert_allclose(phi.numpy() @ phi.numpy().T, np.exp(-sq / 2), atol=0.06)
  keras_features = layers.RandomFeatureGaussianProcess(2, num_inducing=8,
                                                       use_custom_random_features=False,
                                                       gp_kernel_type='laplacian')
  assert keras_features(x)[0].shape == (5, 2)
  with pytest.raises(ValueError, match="`gp_kernel_type` must be one of .*found 'laplacian'"):
    layers.RandomFeatureGaussianProcess(2, gp_kernel_type='laplacian')
  testing.run_layer_test(layers.RandomFeatureGaussianProcess,
                         dict(units=2, num_inducing=8, gp_cov_likelihood='gaussian',
                              return_random_features=True, custom_random_features_activation='tanh',
                              gp_output_bias_trainable=True),
                         [x], [(5, 2), (5, 5), (5, 8)])


def test_spectral_normalization_update_weights_and_config():
  dense = tf_keras.layers.Dense(3, kernel_initializer=tf_keras.initializers.RandomNormal(
      stddev=3.0, seed=6))
  wrapped = layers.SpectralNormalization(dense, iteration=50, norm_multiplier=0.8)
  x = tf.random.normal([2, 4], seed=7)
  wrapped(x)
  kernel = wrapped.update_weights().numpy()
  np.testing.assert_allclose(dense.kernel.numpy(), kernel)
  np.testing.assert_allclose(np.linalg.svd(kernel, compute_uv=False)[0], 0.8, rtol=1e-3)
  frozen = layers.SpectralNormalization(tf_keras.layers.Dense(3), training=False)
  frozen(x)
  u = frozen.u.numpy()
  frozen(x, training=True)
  np.testing.assert_array_equal(frozen.u.numpy(), u)
  with pytest.raises(ValueError, match='`aggregation` must be one of'):
    layers.SpectralNormalization(tf_keras.layers.Dense(3), aggregation='median')
  testing.run_layer_test(layers.SpectralNormalization,
                         dict(layer=tf_keras.layers.Dense(3), aggregation='sum', training=False),
                         [x], (2, 3))


def _conv_matrix(conv, input_shape):
  """The explicit matrix [in, out] of a bias-free convolution on images of `input_shape`."""
  size = int(np.prod(input_shape))
  basis = np.eye(size, dtype=np.float32).reshape([size] + list(input_shape))
  return tf.nn.conv2d(basis, conv.kernel, strides=conv.strides,
                      padding=conv.padding.upper()).numpy().reshape(size, -1)


def test_spectral_normalization_conv2d_bounds_the_operator_norm():
  for strides, padding in [(1, 'valid'), (2, 'same')]:
    conv = tf_keras.layers.Conv2D(3, 3, strides=strides, padding=padding,
                                  kernel_initializer=tf_keras.initializers.RandomNormal(
                                      stddev=2.0, seed=8))
    wrapped = layers.SpectralNormalizationConv2D(conv, iteration=100, norm_multiplier=0.9)
    x = tf.random.normal([2, 6, 6, 2], seed=9)
    wrapped(x, training=True)
    assert wrapped.v.shape == (1, 6, 6, 2) and wrapped.u.shape == (1,) + conv(x).shape[1:]
    assert np.linalg.svd(_conv_matrix(conv, [6, 6, 2]), compute_uv=False)[0] > 1.0
    kernel = wrapped.normalized_kernel().numpy()
    expected = tf.nn.conv2d(x, kernel, strides=strides, padding=padding.upper()) + conv.bias
    np.testing.assert_allclose(wrapped(x), expected, atol=1e-5)
    wrapped.update_weights(training=False)
    sigma = np.linalg.svd(_conv_matrix(conv, [6, 6, 2]), compute_uv=False)[0]
    np.testing.assert_allclose(sigma, 0.9, rtol=1e-3)
  with pytest.raises(ValueError, match='wraps a Conv2D layer, found Dense'):
    layers.SpectralNormalizationConv2D(tf_keras.layers.Dense(3))
  with pytest.raises(ValueError, match='known height and width'):
    layers.SpectralNormalizationConv2D(tf_keras.layers.Conv2D(3, 3)).build([None, None, None, 2])
  testing.run_layer_test(layers.SpectralNormalizationConv2D,
                         dict(layer=tf_keras.layers.Conv2D(3, 2, activation='relu'),
                              legacy_mode=True), [tf.ones([2, 4, 4, 1])], (2, 3, 3, 3))
