"""A random-feature Gaussian-process output layer (the SNGP head's classifier)."""

import math
from typing import Any, Dict, Optional

import tensorflow as tf
import tf_keras

from official.modeling import tf_utils


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class RandomFeatureGaussianProcess(tf_keras.layers.Layer):
  """Logits of a Gaussian process approximated with random Fourier features, and their covariance.

  features = cos(x W + b) with fixed random W ~ N(0, 1 / kernel scale) and b ~ U(0, 2 pi)
  (an RBF kernel; optionally LayerNorm first and scaled by sqrt(2 / num_inducing));
  logits = features @ `gp_output_weights` + `gp_output_bias`. The posterior precision of the
  output weights, ridge * I + features' features, is kept as a moving average over training
  batches (`gp_precision_matrix`); outside training the covariance of the logits across the
  batch is ridge * features @ precision^-1 @ features'.

  Args:
    units: output logits.
    num_inducing: random features.
    gp_kernel_scale: the RBF length scale.
    gp_output_bias: the (fixed) output bias value.
    normalize_input: LayerNorm the inputs first.
    gp_cov_momentum: moving-average factor of the precision (< 0: sum over batches instead).
    gp_cov_ridge_penalty: the prior precision (ridge).
    scale_random_features: scale the features by sqrt(2 / num_inducing).
    l2_regularization: L2 penalty on the output weights.
    return_gp_cov: also return the covariance [batch, batch] (identity during training).
    kernel_initializer: initializer of the output weights.

  Call args: inputs [batch, width]; training.

  Returns: logits [batch, units], and with `return_gp_cov` the covariance [batch, batch].

  Example:
    >>> logits, cov = RandomFeatureGaussianProcess(3, num_inducing=64)(tf.ones([4, 8]))
    >>> logits.shape, cov.shape
    (TensorShape([4, 3]), TensorShape([4, 4]))
  """

  def __init__(self, units: int, num_inducing: int = 1024, gp_kernel_scale: float = 1.0,
               gp_output_bias: float = 0.0, normalize_input: bool = False,
               gp_cov_momentum: float = 0.999, gp_cov_ridge_penalty: float = 1.0,
               scale_random_features: bool = True, l2_regularization: float = 1e-6,
               return_gp_cov: bool = True, kernel_initializer: Any = 'glorot_uniform',
               custom_random_features_initializer: Any = 'random_normal', **kwargs):
    super().__init__(**kwargs)
    self.units = units
    self.num_inducing = num_inducing
    self.gp_kernel_scale = gp_kernel_scale
    self.gp_output_bias = gp_output_bias
    self.normalize_input = normalize_input
    self.gp_cov_momentum = gp_cov_momentum
    self.gp_cov_ridge_penalty = gp_cov_ridge_penalty
    self.scale_random_features = scale_random_features
    self.l2_regularization = l2_regularization
    self.return_gp_cov = return_gp_cov
    self.kernel_initializer = tf_keras.initializers.get(kernel_initializer)
    self.custom_random_features_initializer = tf_keras.initializers.get(
        custom_random_features_initializer)

  def build(self, input_shape):
    width = int(input_shape[-1])
    if self.normalize_input:
      self._input_norm_layer = tf_keras.layers.LayerNormalization(name='gp_input_normalization')
      with tf.name_scope(self._input_norm_layer.name):  # variables named `.../<layer>/...`
        self._input_norm_layer.build(input_shape)
    self._random_feature = tf_keras.layers.Dense(
        self.num_inducing, activation=tf.math.cos, trainable=False,
        kernel_initializer=tf_utils.clone_initializer(self.custom_random_features_initializer),
        bias_initializer=tf.random_uniform_initializer(0.0, 2.0 * math.pi),
        name='gp_random_feature')
    with tf.name_scope(self._random_feature.name):
      self._random_feature.build([None, width])
    if self.return_gp_cov:
      self.precision = self.add_weight(
          'gp_precision_matrix', shape=[self.num_inducing, self.num_inducing], trainable=False,
          initializer=tf_keras.initializers.Identity(self.gp_cov_ridge_penalty))
    self._gp_output_layer = tf_keras.layers.Dense(
        self.units, use_bias=False,
        kernel_regularizer=tf_keras.regularizers.l2(self.l2_regularization),
        kernel_initializer=tf_utils.clone_initializer(self.kernel_initializer),
        name='gp_output_weights')
    with tf.name_scope(self._gp_output_layer.name):
      self._gp_output_layer.build([None, self.num_inducing])
    self._gp_output_bias = self.add_weight(
        'gp_output_bias', shape=[self.units], trainable=False,
        initializer=tf_keras.initializers.Constant(self.gp_output_bias))
    super().build(input_shape)

  def features(self, inputs) -> tf.Tensor:
    """The random features [batch, num_inducing] of `inputs`."""
    x = tf.cast(inputs, tf.float32)
    if self.normalize_input:
      x = self._input_norm_layer(x)
    features = self._random_feature(x / math.sqrt(self.gp_kernel_scale))
    if self.scale_random_features:
      features *= math.sqrt(2.0 / self.num_inducing)
    return features

  def call(self, inputs, training=None):
    training = bool(training) if isinstance(training, bool) else False
    features = self.features(inputs)
    logits = self._gp_output_layer(features) + self._gp_output_bias
    if not self.return_gp_cov:
      return logits
    batch = tf.shape(features)[0]
    if training:
      batch_precision = tf.matmul(features, features, transpose_a=True)
      if self.gp_cov_momentum > 0:
        batch_precision /= tf.cast(batch, tf.float32)
        updated = (self.gp_cov_momentum * self.precision +
                   (1.0 - self.gp_cov_momentum) * batch_precision)
      else:
        updated = self.precision + batch_precision
      self.precision.assign(updated)
      return logits, tf.eye(batch, dtype=logits.dtype)
    covariance = self.gp_cov_ridge_penalty * tf.matmul(
        features, tf.linalg.solve(self.precision, tf.transpose(features)))
    return logits, covariance

  def reset_covariance_matrix(self):
    """Back to the prior precision (ridge * I), e.g. at the start of an epoch."""
    self.precision.assign(self.gp_cov_ridge_penalty * tf.eye(self.num_inducing))

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.update(units=self.units, num_inducing=self.num_inducing,
                  gp_kernel_scale=self.gp_kernel_scale, gp_output_bias=self.gp_output_bias,
                  normalize_input=self.normalize_input, gp_cov_momentum=self.gp_cov_momentum,
                  gp_cov_ridge_penalty=self.gp_cov_ridge_penalty,
                  scale_random_features=self.scale_random_features,
                  l2_regularization=self.l2_regularization, return_gp_cov=self.return_gp_cov,
                  kernel_initializer=tf_keras.initializers.serialize(self.kernel_initializer),
                  custom_random_features_initializer=tf_keras.initializers.serialize(
                      self.custom_random_features_initializer))
    return config


def mean_field_logits(logits: tf.Tensor, covariance_matrix: Optional[tf.Tensor] = None,
                      mean_field_factor: Optional[float] = 1.0) -> tf.Tensor:
  """Logits / sqrt(1 + factor * variance): the mean-field approximation of the posterior mean of
  softmax (variance = the covariance's diagonal, or 1 without one). None or a negative factor
  returns the logits unchanged.

  Example:
    >>> mean_field_logits(tf.constant([[2.0]]), tf.constant([[3.0]]), 1.0).numpy()
    array([[1.]], dtype=float32)
  """
  if mean_field_factor is None or mean_field_factor < 0:
    return logits
  variances = (tf.linalg.diag_part(covariance_matrix) if covariance_matrix is not None
               else tf.ones(tf.shape(logits)[:1], logits.dtype))
  scale = tf.sqrt(1.0 + mean_field_factor * tf.cast(variances, logits.dtype))
  return logits / scale[:, None]
