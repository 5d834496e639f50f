"""Spectral normalization of a dense (the SNGP head's pooler) or a 2D convolution layer's kernel."""

from typing import Any, Dict, Sequence, Union

import tensorflow as tf
import tf_keras

_Aggregation = Union[str, tf.VariableAggregation]


def _aggregation(value: _Aggregation) -> tf.VariableAggregation:
  if isinstance(value, str):
    names = [a.name.lower() for a in tf.VariableAggregation]
    if value.lower() not in names:
      raise ValueError(f'`aggregation` must be one of {names}, found {value!r}')
    return tf.VariableAggregation[value.upper()]
  return value


class _SpectralNormWrapper(tf_keras.layers.Wrapper):
  """Power iteration and kernel rescaling shared by the dense and the convolution wrappers.

  Subclasses define the wrapped layer's linear map A (`_forward`, acting on a `v` shaped like
  one input) and its adjoint A' (`_adjoint`, on a `u` shaped like one output), the shapes of
  `v` and `u`, and `_apply`, the layer's output with a given kernel.
  """

  def __init__(self, layer: tf_keras.layers.Layer, iteration: int = 1,
               norm_multiplier: float = 0.95, training: bool = True,
               aggregation: _Aggregation = tf.VariableAggregation.MEAN, **kwargs):
    if iteration < 0:
      raise ValueError(f'`iteration` must be >= 0, found {iteration}')
    if norm_multiplier <= 0:
      raise ValueError(f'`norm_multiplier` must be > 0, found {norm_multiplier}')
    super().__init__(layer, **kwargs)
    self.iteration = iteration
    self.norm_multiplier = norm_multiplier
    self.do_power_iteration = training
    self.aggregation = _aggregation(aggregation)

  def _uv_shapes(self, input_shape) -> Sequence[Sequence[int]]:
    raise NotImplementedError

  def build(self, input_shape):
    if not self.layer.built:
      self.layer.build(input_shape)
    v_shape, u_shape = self._uv_shapes(tf.TensorShape(input_shape))
    self.v = self.add_weight('v', shape=v_shape, trainable=False, aggregation=self.aggregation,
                             initializer=tf_keras.initializers.RandomNormal(stddev=1.0))
    self.u = self.add_weight('u', shape=u_shape, trainable=False, aggregation=self.aggregation,
                             initializer=tf_keras.initializers.RandomNormal(stddev=1.0))
    super().build(input_shape)

  @staticmethod
  def _normalize(x: tf.Tensor) -> tf.Tensor:
    shape = x.shape if x.shape.is_fully_defined() else tf.shape(x)
    return tf.reshape(tf.math.l2_normalize(tf.reshape(x, [1, -1])), shape)

  def normalized_kernel(self, training: bool = False) -> tf.Tensor:
    """W / max(1, sigma / norm_multiplier); a training call also refines and stores u, v."""
    kernel = tf.cast(self.layer.kernel, tf.float32)
    u, v = self.u, self.v
    if training and self.do_power_iteration:
      for _ in range(self.iteration):
        v = self._normalize(self._adjoint(u, kernel))
        u = self._normalize(self._forward(v, kernel))
      u, v = tf.stop_gradient(u), tf.stop_gradient(v)
      self.u.assign(u)
      self.v.assign(v)
    sigma = tf.reduce_sum(u * self._forward(v, kernel))
    return kernel / tf.maximum(1.0, sigma / self.norm_multiplier)

  def update_weights(self, training: bool = True) -> tf.Tensor:
    """Writes the normalized kernel into the wrapped layer's kernel (after `iteration` power
    steps when `training`), e.g. to project it after an optimizer step; returns it."""
    kernel = self.normalized_kernel(training)
    self.layer.kernel.assign(tf.cast(kernel, self.layer.kernel.dtype))
    return kernel

  def call(self, inputs, training=None):
    training = bool(training) if isinstance(training, bool) else False
    kernel = tf.cast(self.normalized_kernel(training), self.compute_dtype)
    outputs = self._apply(inputs, kernel)
    if self.layer.use_bias:
      outputs += tf.cast(self.layer.bias, outputs.dtype)
    if self.layer.activation is not None:
      outputs = self.layer.activation(outputs)
    return outputs

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.update(iteration=self.iteration, norm_multiplier=self.norm_multiplier,
                  training=self.do_power_iteration, aggregation=self.aggregation.name.lower())
    return config


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class SpectralNormalization(_SpectralNormWrapper):
  """Wraps a `Dense` layer so that its kernel's spectral norm is at most `norm_multiplier`.

  The largest singular value sigma of the kernel W [in, out] is estimated by power iteration
  with persistent vectors `v` [1, in] and `u` [1, out] (non-trainable; refined by `iteration`
  steps on every training call). The layer computes `activation(x @ W' + b)` with
  W' = W / max(1, sigma / norm_multiplier); the kernel variable itself is left as trained
  (`update_weights()` writes W' into it).

  Args:
    layer: a `tf_keras.layers.Dense`.
    iteration: power-iteration steps per training call.
    norm_multiplier: the bound on the spectral norm.
    training: run the power iteration on training calls at all.
    aggregation: how `u` and `v` aggregate across replicas (a `tf.VariableAggregation` or its
      name).
    inhere_layer_name: take the wrapped layer's name (so that checkpoints name it alike).

  Example:
    >>> dense = SpectralNormalization(tf_keras.layers.Dense(4), norm_multiplier=0.9)
    >>> dense(tf.ones([2, 3]), training=True).shape
    TensorShape([2, 4])
  """

  def __init__(self, layer: tf_keras.layers.Layer, iteration: int = 1,
               norm_multiplier: float = 0.95, training: bool = True,
               aggregation: _Aggregation = tf.VariableAggregation.MEAN,
               inhere_layer_name: bool = False, **kwargs):
    if not isinstance(layer, tf_keras.layers.Dense):
      raise ValueError(f'SpectralNormalization wraps a Dense layer, found {type(layer).__name__}')
    if inhere_layer_name:
      kwargs.setdefault('name', layer.name)
    super().__init__(layer, iteration=iteration, norm_multiplier=norm_multiplier,
                     training=training, aggregation=aggregation, **kwargs)
    self.inhere_layer_name = inhere_layer_name

  def _uv_shapes(self, input_shape):
    fan_in, fan_out = self.layer.kernel.shape
    return [1, fan_in], [1, fan_out]

  def _forward(self, v, kernel):
    return tf.matmul(v, kernel)

  def _adjoint(self, u, kernel):
    return tf.matmul(u, kernel, transpose_b=True)

  def _apply(self, inputs, kernel):
    return tf.tensordot(inputs, kernel, axes=[[-1], [0]])

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.update(inhere_layer_name=self.inhere_layer_name)
    return config


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class SpectralNormalizationConv2D(_SpectralNormWrapper):
  """Wraps a `Conv2D` layer so that its spectral norm, as a linear map of the whole input image,
  is at most `norm_multiplier` (Gouk et al. 2018; cf. Sedghi et al. 2019).

  As `SpectralNormalization`, with the power iteration run on images: `v` [n, height, width,
  in_channels] and `u` shaped like the layer's output on it, using the convolution and its
  transpose (with the layer's strides, padding and dilation). The input's height and width
  must be known when the layer is built; channels_last, groups=1 only.

  Args:
    layer: a `tf_keras.layers.Conv2D`.
    iteration, norm_multiplier, training, aggregation: as `SpectralNormalization`.
    legacy_mode: n = the (known) batch size of the build shape instead of 1.

  Example:
    >>> conv = SpectralNormalizationConv2D(tf_keras.layers.Conv2D(4, 3), norm_multiplier=0.9)
    >>> conv(tf.ones([2, 8, 8, 3]), training=True).shape
    TensorShape([2, 6, 6, 4])
  """

  def __init__(self, layer: tf_keras.layers.Layer, iteration: int = 1,
               norm_multiplier: float = 0.95, training: bool = True,
               aggregation: _Aggregation = tf.VariableAggregation.MEAN,
               legacy_mode: bool = False, **kwargs):
    if not isinstance(layer, tf_keras.layers.Conv2D):
      raise ValueError(
          f'SpectralNormalizationConv2D wraps a Conv2D layer, found {type(layer).__name__}')
    if layer.data_format != 'channels_last' or layer.groups != 1:
      raise ValueError('SpectralNormalizationConv2D needs a channels_last Conv2D with groups=1, '
                       f'found data_format={layer.data_format!r}, groups={layer.groups}')
    super().__init__(layer, iteration=iteration, norm_multiplier=norm_multiplier,
                     training=training, aggregation=aggregation, **kwargs)
    self.legacy_mode = legacy_mode

  def _uv_shapes(self, input_shape):
    if input_shape.rank != 4 or None in input_shape[1:3]:
      raise ValueError(f'{self.name}: needs inputs [batch, height, width, channels] with a known '
                       f'height and width, found {input_shape}')
    n = input_shape[0] if self.legacy_mode else 1
    if n is None:
      raise ValueError(f'{self.name}: legacy_mode needs a known batch size, found {input_shape}')
    v_shape = tf.TensorShape([n]).concatenate(input_shape[1:])
    u_shape = self.layer.compute_output_shape(v_shape)
    return v_shape.as_list(), u_shape.as_list()

  def _conv_args(self) -> Dict[str, Any]:
    return dict(strides=self.layer.strides, padding=self.layer.padding.upper(),
                dilations=self.layer.dilation_rate)

  def _forward(self, v, kernel):
    return tf.nn.conv2d(v, kernel, **self._conv_args())

  def _adjoint(self, u, kernel):
    return tf.nn.conv2d_transpose(u, kernel, output_shape=self.v.shape.as_list(),
                                  **self._conv_args())

  def _apply(self, inputs, kernel):
    return self.layer.convolution_op(inputs, kernel)

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.update(legacy_mode=self.legacy_mode)
    return config
