"""A random-feature Gaussian-process output layer (the SNGP head's classifier) and its Laplace
posterior covariance."""

import math
from typing import Any, Dict, Optional

import tensorflow as tf
import tf_keras

from official.modeling import tf_utils

_KERNEL_TYPES = ('gaussian', 'laplacian', 'linear')
_LIKELIHOODS = ('gaussian', 'binary_logistic', 'poisson')


def _check_choice(name: str, value: Any, choices) -> None:
  if value not in choices:
    raise ValueError(f'`{name}` must be one of {list(choices)}, found {value!r}')


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class LaplaceRandomFeatureCovariance(tf_keras.layers.Layer):
  """The Laplace posterior of a random-feature model's output weights; the predictive covariance.

  The posterior precision of the output weights, `precision_matrix` [features, features]
  (non-trainable; `ridge_penalty * I` at first), is accumulated over training batches from
  the batch's precision phi' diag(h) phi, where h is the likelihood's curvature at the logits
  (1 for 'gaussian', p (1 - p) for 'binary_logistic', exp(logits) for 'poisson'):
  with momentum > 0 as a moving average of the per-example mean (momentum * P + (1 - momentum)
  * batch / batch_size); otherwise as a plain sum (one pass over the data).
  Outside training, the covariance of the outputs across the batch is
  ridge_penalty * phi @ precision^-1 @ phi'.

  Args:
    momentum: the moving-average factor (<= 0: sum over batches instead).
    ridge_penalty: the prior precision.
    likelihood: 'gaussian', 'binary_logistic' or 'poisson' (the last two need univariate logits).
    **kwargs: Keras layer arguments (name, dtype).

  Call args: inputs: random features phi [batch, features]; logits [batch, 1] (needed by a
    non-Gaussian likelihood); training.

  Returns: [batch, batch]: the identity during training (after updating the precision), the
    predictive covariance otherwise.

  Example:
    >>> cov = LaplaceRandomFeatureCovariance(momentum=-1.0)
    >>> cov(tf.ones([2, 3]), training=True).shape  # precision is now I + phi' phi
    TensorShape([2, 2])
  """

  def __init__(self, momentum: float = 0.999, ridge_penalty: float = 1.0,
               likelihood: str = 'gaussian', name: str = 'laplace_covariance', **kwargs):
    _check_choice('likelihood', likelihood, _LIKELIHOODS)
    super().__init__(name=name, **kwargs)
    self.momentum = momentum
    self.ridge_penalty = ridge_penalty
    self.likelihood = likelihood

  def build(self, input_shape):
    width = input_shape[-1]
    if width is None:
      raise ValueError(f'{self.name}: the feature dimension (last of {input_shape}) must be known')
    self.precision_matrix = self.add_weight(
        'gp_precision_matrix', shape=[int(width), int(width)], trainable=False,
        initializer=tf_keras.initializers.Identity(self.ridge_penalty),
        aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
    super().build(input_shape)

  def compute_output_shape(self, input_shape):
    return tf.TensorShape([input_shape[0], input_shape[0]])

  def update_precision_matrix(self, features: tf.Tensor,
                              logits: Optional[tf.Tensor] = None) -> tf.Tensor:
    """Adds the batch's precision (features [batch, width]) to `precision_matrix`; returns it."""
    features = tf.cast(features, self.precision_matrix.dtype)
    if self.likelihood != 'gaussian':
      if logits is None or logits.shape[-1] != 1:
        raise ValueError(f'likelihood={self.likelihood!r} needs univariate logits [batch, 1], '
                         f'found {None if logits is None else logits.shape}')
      logits = tf.cast(logits, features.dtype)
      if self.likelihood == 'binary_logistic':
        curvature = tf.sigmoid(logits) * (1.0 - tf.sigmoid(logits))
      else:
        curvature = tf.exp(logits)
      features = tf.sqrt(curvature) * features
    batch_precision = tf.matmul(features, features, transpose_a=True)
    if self.momentum > 0:
      batch_precision /= tf.cast(tf.shape(features)[0], features.dtype)
      updated = (self.momentum * self.precision_matrix +
                 (1.0 - self.momentum) * batch_precision)
    else:
      updated = self.precision_matrix + batch_precision
    return self.precision_matrix.assign(updated)

  def compute_predictive_covariance(self, features: tf.Tensor) -> tf.Tensor:
    """ridge * phi @ precision^-1 @ phi' [batch, batch] for features phi [batch, width]."""
    features = tf.cast(features, self.precision_matrix.dtype)
    return self.ridge_penalty * tf.matmul(
        features, tf.linalg.solve(self.precision_matrix, tf.transpose(features)))

  def reset_precision_matrix(self):
    """Back to the prior precision (ridge * I), e.g. at the start of an epoch."""
    width = self.precision_matrix.shape[0]
    self.precision_matrix.assign(
        self.ridge_penalty * tf.eye(width, dtype=self.precision_matrix.dtype))

  def call(self, inputs, logits=None, training=None):
    training = bool(training) if isinstance(training, bool) else False
    if training:
      self.update_precision_matrix(inputs, logits)
      return tf.eye(tf.shape(inputs)[0], dtype=self.precision_matrix.dtype)
    return self.compute_predictive_covariance(inputs)

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.update(momentum=self.momentum, ridge_penalty=self.ridge_penalty,
                  likelihood=self.likelihood)
    return config


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class RandomFeatureGaussianProcess(tf_keras.layers.Layer):
  """Logits of a Gaussian process approximated with random Fourier features, and their covariance.

  features = cos(x W + b) with fixed random W ~ `custom_random_features_initializer` (default
  N(0, 1)) and b ~ U(0, 2 pi), on inputs divided by sqrt(gp_kernel_scale): an RBF kernel
  (optionally LayerNorm first and scaled by sqrt(2 / num_inducing)); the 'linear' kernel uses
  the inputs themselves as features. logits = features @ `gp_output_weights` + `gp_output_bias`.
  The posterior covariance is a `LaplaceRandomFeatureCovariance` (`gp_covariance`).

  Args:
    units: output logits.
    num_inducing: random features.
    gp_kernel_type: 'gaussian' (RBF) or 'linear' (identity features); with
      `use_custom_random_features=False` also 'laplacian'.
    gp_kernel_scale: the kernel's length scale.
    gp_output_bias: the output bias' initial value.
    normalize_input: LayerNorm the inputs first.
    gp_kernel_scale_trainable: train the length scale (only `use_custom_random_features=False`).
    gp_output_bias_trainable: train the output bias.
    gp_cov_momentum: moving-average factor of the precision (<= 0: sum over batches instead).
    gp_cov_ridge_penalty: the prior precision (ridge).
    scale_random_features: scale the features by sqrt(2 / num_inducing).
    use_custom_random_features: features from a fixed Dense layer (else Keras'
      `RandomFourierFeatures`, which carries the length scale itself).
    custom_random_features_initializer: the Dense layer's kernel initializer (None: N(0, 1)).
    custom_random_features_activation: its activation (None: cos).
    l2_regularization: L2 penalty on the output weights.
    gp_cov_likelihood: the likelihood of the Laplace covariance (see
      `LaplaceRandomFeatureCovariance`).
    return_gp_cov: also return the covariance [batch, batch] (identity during training).
    return_random_features: also return the features [batch, num_inducing].
    kernel_initializer: initializer of the output weights.
    **kwargs: Keras layer arguments (name, dtype).

  Call args: inputs [batch, width]; training.

  Returns: logits [batch, units]; or a tuple of it, the covariance (with `return_gp_cov`) and
    the features (with `return_random_features`).

  Example:
    >>> logits, cov = RandomFeatureGaussianProcess(3, num_inducing=64)(tf.ones([4, 8]))
    >>> logits.shape, cov.shape
    (TensorShape([4, 3]), TensorShape([4, 4]))
  """

  def __init__(self, units: int, num_inducing: int = 1024, gp_kernel_type: str = 'gaussian',
               gp_kernel_scale: float = 1.0, gp_output_bias: float = 0.0,
               normalize_input: bool = False, gp_kernel_scale_trainable: bool = False,
               gp_output_bias_trainable: bool = False, gp_cov_momentum: float = 0.999,
               gp_cov_ridge_penalty: float = 1.0, scale_random_features: bool = True,
               use_custom_random_features: bool = True,
               custom_random_features_initializer: Any = None,
               custom_random_features_activation: Any = None, l2_regularization: float = 1e-6,
               gp_cov_likelihood: str = 'gaussian', return_gp_cov: bool = True,
               return_random_features: bool = False, kernel_initializer: Any = 'glorot_uniform',
               name: str = 'random_feature_gaussian_process', **kwargs):
    if use_custom_random_features:
      _check_choice('gp_kernel_type', gp_kernel_type, ('gaussian', 'linear'))
    else:
      _check_choice('gp_kernel_type', gp_kernel_type, ('gaussian', 'laplacian'))
    _check_choice('gp_cov_likelihood', gp_cov_likelihood, _LIKELIHOODS)
    super().__init__(name=name, **kwargs)
    self.units = units
    self.num_inducing = num_inducing
    self.gp_kernel_type = gp_kernel_type
    self.gp_kernel_scale = gp_kernel_scale
    self.gp_output_bias = gp_output_bias
    self.normalize_input = normalize_input
    self.gp_kernel_scale_trainable = gp_kernel_scale_trainable
    self.gp_output_bias_trainable = gp_output_bias_trainable
    self.gp_cov_momentum = gp_cov_momentum
    self.gp_cov_ridge_penalty = gp_cov_ridge_penalty
    self.scale_random_features = scale_random_features
    self.use_custom_random_features = use_custom_random_features
    self.custom_random_features_initializer = tf_keras.initializers.get(
        custom_random_features_initializer or tf_keras.initializers.RandomNormal(stddev=1.0))
    self._activation_arg = custom_random_features_activation
    self.custom_random_features_activation = (
        tf.math.cos if custom_random_features_activation is None
        else tf_keras.activations.get(custom_random_features_activation))
    self.l2_regularization = l2_regularization
    self.gp_cov_likelihood = gp_cov_likelihood
    self.return_gp_cov = return_gp_cov
    self.return_random_features = return_random_features
    self.kernel_initializer = tf_keras.initializers.get(kernel_initializer)

  def build(self, input_shape):
    width = int(input_shape[-1])
    if self.normalize_input:
      self._input_norm_layer = tf_keras.layers.LayerNormalization(name='gp_input_normalization')
      with tf.name_scope(self._input_norm_layer.name):  # variables named `.../<layer>/...`
        self._input_norm_layer.build(input_shape)
    self._random_feature = self._make_random_feature_layer(name='gp_random_feature')
    with tf.name_scope(self._random_feature.name):
      self._random_feature.build([None, width])
    feature_width = width if self.gp_kernel_type == 'linear' else self.num_inducing
    if self.return_gp_cov:
      self._gp_cov_layer = LaplaceRandomFeatureCovariance(
          momentum=self.gp_cov_momentum, ridge_penalty=self.gp_cov_ridge_penalty,
          likelihood=self.gp_cov_likelihood, dtype='float32', name='gp_covariance')
      with tf.name_scope(self._gp_cov_layer.name):
        self._gp_cov_layer.build([None, feature_width])
    self._gp_output_layer = tf_keras.layers.Dense(
        self.units, use_bias=False,
        kernel_regularizer=tf_keras.regularizers.l2(self.l2_regularization),
        kernel_initializer=tf_utils.clone_initializer(self.kernel_initializer),
        name='gp_output_weights')
    with tf.name_scope(self._gp_output_layer.name):
      self._gp_output_layer.build([None, feature_width])
    self._gp_output_bias = self.add_weight(
        'gp_output_bias', shape=[self.units], trainable=self.gp_output_bias_trainable,
        initializer=tf_keras.initializers.Constant(self.gp_output_bias))
    super().build(input_shape)

  def _make_random_feature_layer(self, name: str) -> tf_keras.layers.Layer:
    if not self.use_custom_random_features:
      return tf_keras.layers.experimental.RandomFourierFeatures(
          output_dim=self.num_inducing, kernel_initializer=self.gp_kernel_type,
          scale=self.gp_kernel_scale, trainable=self.gp_kernel_scale_trainable, name=name)
    if self.gp_kernel_type == 'linear':
      return tf_keras.layers.Lambda(lambda x: x, name=name)
    return tf_keras.layers.Dense(
        self.num_inducing, activation=self.custom_random_features_activation, trainable=False,
        kernel_initializer=tf_utils.clone_initializer(self.custom_random_features_initializer),
        bias_initializer=tf.random_uniform_initializer(0.0, 2.0 * math.pi), name=name)

  @property
  def precision(self) -> tf.Variable:
    """The covariance layer's posterior precision [features, features] (`return_gp_cov` only)."""
    return self._gp_cov_layer.precision_matrix

  def features(self, inputs) -> tf.Tensor:
    """The random features [batch, num_inducing] of `inputs`."""
    x = tf.cast(inputs, tf.float32)
    if self.normalize_input:
      x = self._input_norm_layer(x)
    if self.use_custom_random_features:  # (Keras' random features apply the scale themselves.)
      x /= math.sqrt(self.gp_kernel_scale)
    features = tf.cast(self._random_feature(x), tf.float32)
    if self.scale_random_features:
      features *= math.sqrt(2.0 / self.num_inducing)
    return features

  def call(self, inputs, training=None):
    training = bool(training) if isinstance(training, bool) else False
    features = self.features(inputs)
    logits = self._gp_output_layer(features) + self._gp_output_bias
    outputs = (logits,)
    if self.return_gp_cov:
      outputs += (self._gp_cov_layer(features, logits=logits, training=training),)
    if self.return_random_features:
      outputs += (features,)
    return outputs if len(outputs) > 1 else logits

  def reset_covariance_matrix(self):
    """Back to the prior precision (ridge * I), e.g. at the start of an epoch."""
    self._gp_cov_layer.reset_precision_matrix()

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    activation = self._activation_arg
    if activation is not None and not isinstance(activation, str):
      activation = tf_keras.activations.serialize(activation)
    config.update(units=self.units, num_inducing=self.num_inducing,
                  gp_kernel_type=self.gp_kernel_type, gp_kernel_scale=self.gp_kernel_scale,
                  gp_output_bias=self.gp_output_bias, normalize_input=self.normalize_input,
                  gp_kernel_scale_trainable=self.gp_kernel_scale_trainable,
                  gp_output_bias_trainable=self.gp_output_bias_trainable,
                  gp_cov_momentum=self.gp_cov_momentum,
                  gp_cov_ridge_penalty=self.gp_cov_ridge_penalty,
                  scale_random_features=self.scale_random_features,
                  use_custom_random_features=self.use_custom_random_features,
                  custom_random_features_initializer=tf_keras.initializers.serialize(
                      self.custom_random_features_initializer),
                  custom_random_features_activation=activation,
                  l2_regularization=self.l2_regularization,
                  gp_cov_likelihood=self.gp_cov_likelihood, return_gp_cov=self.return_gp_cov,
                  return_random_features=self.return_random_features,
                  kernel_initializer=tf_keras.initializers.serialize(self.kernel_initializer))
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
