"""Spectral normalization of a dense layer's kernel (the SNGP head's pooler)."""

from typing import Any, Dict

import tensorflow as tf
import tf_keras


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class SpectralNormalization(tf_keras.layers.Wrapper):
  """Wraps a `Dense` layer so that its kernel's spectral norm is at most `norm_multiplier`.

  The largest singular value sigma of the kernel W [in, out] is estimated by power iteration
  with persistent vectors `v` [1, in] and `u` [1, out] (non-trainable; refined by `iteration`
  steps on every training call). The layer computes `activation(x @ W' + b)` with
  W' = W / max(1, sigma / norm_multiplier); the kernel variable itself is left as trained.

  Args:
    layer: a `tf_keras.layers.Dense`.
    iteration: power-iteration steps per training call.
    norm_multiplier: the bound on the spectral norm.
    inhere_layer_name: take the wrapped layer's name (so that checkpoints name it alike).

  Example:
    >>> dense = SpectralNormalization(tf_keras.layers.Dense(4), norm_multiplier=0.9)
    >>> dense(tf.ones([2, 3]), training=True).shape
    TensorShape([2, 4])
  """

  def __init__(self, layer: tf_keras.layers.Layer, iteration: int = 1,
               norm_multiplier: float = 0.95, inhere_layer_name: bool = False, **kwargs):
    if not isinstance(layer, tf_keras.layers.Dense):
      raise ValueError(f'SpectralNormalization wraps a Dense layer, found {type(layer).__name__}')
    if inhere_layer_name:
      kwargs.setdefault('name', layer.name)
    super().__init__(layer, **kwargs)
    self.iteration = iteration
    self.norm_multiplier = norm_multiplier
    self.inhere_layer_name = inhere_layer_name

  def build(self, input_shape):
    if not self.layer.built:
      self.layer.build(input_shape)
    fan_in, fan_out = self.layer.kernel.shape
    normal = tf_keras.initializers.RandomNormal(stddev=1.0)
    self.v = self.add_weight('v', shape=[1, fan_in], initializer=normal, trainable=False)
    self.u = self.add_weight('u', shape=[1, fan_out], initializer=normal, trainable=False)
    super().build(input_shape)

  def normalized_kernel(self, training: bool = False) -> tf.Tensor:
    """W / max(1, sigma / norm_multiplier); a training call also refines and stores u, v."""
    kernel = tf.cast(self.layer.kernel, tf.float32)
    u, v = self.u, self.v
    if training:
      for _ in range(self.iteration):
        v = tf.math.l2_normalize(tf.matmul(u, kernel, transpose_b=True))
        u = tf.math.l2_normalize(tf.matmul(v, kernel))
      u, v = tf.stop_gradient(u), tf.stop_gradient(v)
      self.u.assign(u)
      self.v.assign(v)
    sigma = tf.reshape(tf.matmul(tf.matmul(v, kernel), u, transpose_b=True), [])
    return kernel / tf.maximum(1.0, sigma / self.norm_multiplier)

  def call(self, inputs, training=None):
    training = bool(training) if isinstance(training, bool) else False
    kernel = tf.cast(self.normalized_kernel(training), self.compute_dtype)
    outputs = tf.tensordot(inputs, kernel, axes=[[-1], [0]])
    if self.layer.use_bias:
      outputs += tf.cast(self.layer.bias, outputs.dtype)
    if self.layer.activation is not None:
      outputs = self.layer.activation(outputs)
    return outputs

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.update(iteration=self.iteration, norm_multiplier=self.norm_multiplier,
                  inhere_layer_name=self.inhere_layer_name)
    return config
