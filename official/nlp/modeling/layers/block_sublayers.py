"""The feed-forward sub-layers of `TransformerEncoderBlock`, computing with its fused kernels.

The block calls its sub-layers, and code that rebuilds the block from them (a Keras model of
`block.call` on symbolic inputs, as differential-privacy libraries build to clip per-example
gradients) calls the same ones: both run the same kernels and give the same bits.

- `MatmulDense`: Keras' `Dense` as one 2-D matmul with the bias added by `tf_utils.bias_add`
  (its gradient summed in float32); with `kernel_halves`, two matmuls against the kernel's halves
  (GeGLU's input and gate), so that the block can feed them to `fused_ops.gated_gelu` apart.
- `GatedActivation`: `activation(first half) * second half` of the last axis (GLU); GELU's
  forms run as `fused_ops.gated_gelu`.

Example:
  >>> dense = MatmulDense(8, kernel_halves=True)
  >>> GatedActivation('exact_gelu')(dense(tf.ones([2, 3, 16]))).shape
  TensorShape([2, 3, 4])
"""

from typing import Any, Dict, Tuple

import tensorflow as tf
import tf_keras

from official.modeling import fused_ops
from official.modeling import tf_utils

# GELU activations computed by `fused_ops.gated_gelu`, by name: whether it is the tanh form.
_FUSED_GELU_APPROXIMATE = {'gelu': True, 'exact_gelu': False}


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class MatmulDense(tf_keras.layers.Dense):
  """`tf_keras.layers.Dense` on [..., in] as one 2-D matmul, its bias added by `tf_utils.bias_add`.

  The same arguments, variables (`kernel` [in, units], `bias` [units]), checkpoints and values as
  Keras' layer up to float rounding; the bias gradient is summed in float32 by a matmul (Keras'
  `BiasAddGrad` sums bfloat16 in bfloat16).

  Args:
    units: the output width.
    kernel_halves: compute the output's two halves (units // 2 each) as two matmuls against the
      kernel's halves and join them; `halves` returns them apart (GeGLU's input and gate).
    **kwargs: `tf_keras.layers.Dense`'s arguments.

  Example:
    >>> MatmulDense(4)(tf.ones([2, 3, 8])).shape
    TensorShape([2, 3, 4])
  """

  def __init__(self, units: int, kernel_halves: bool = False, **kwargs):
    super().__init__(units, **kwargs)
    if kernel_halves and units % 2:
      raise ValueError(f'{self.name}: kernel_halves needs an even number of units, found {units}')
    self.kernel_halves = kernel_halves

  def rows(self, rows: tf.Tensor) -> tf.Tensor:
    """[rows, in] -> [rows, units] in the dtype of `rows` (no activation)."""
    if self.kernel_halves:
      return tf.concat(self.halves(rows), axis=-1)
    return self._affine(rows, tf.cast(self.kernel, rows.dtype),
                        None if self.bias is None else tf.cast(self.bias, rows.dtype))

  def halves(self, rows: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
    """[rows, in] -> two [rows, units // 2]: the matmuls against the kernel's halves (+ bias)."""
    kernels = tf.split(tf.cast(self.kernel, rows.dtype), 2, axis=-1)
    biases = ((None, None) if self.bias is None
              else tf.split(tf.cast(self.bias, rows.dtype), 2))
    first, second = [self._affine(rows, k, b) for k, b in zip(kernels, biases)]
    return first, second

  @staticmethod
  def _affine(rows, kernel, bias):
    product = tf.matmul(rows, kernel)
    return product if bias is None else tf_utils.bias_add(product, bias)

  def call(self, inputs):
    if not isinstance(inputs, tf.Tensor) or inputs.shape.rank is None or inputs.shape.rank < 2:
      return super().call(inputs)  # ragged, sparse or of unknown rank: Keras' computation
    inputs = tf.cast(inputs, self.compute_dtype)
    if inputs.shape.rank == 2:
      outputs = self.rows(inputs)
    else:
      flat = self.rows(tf.reshape(inputs, [-1, int(inputs.shape[-1])]))
      outputs = tf.reshape(flat, tf.concat([tf.shape(inputs)[:-1], [self.units]], axis=0))
    return self.activation(outputs) if self.activation is not None else outputs

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config['kernel_halves'] = self.kernel_halves
    return config


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class GatedActivation(tf_keras.layers.Layer):
  """`activation(x[..., :n]) * x[..., n:]` for x [..., 2n] (a gated linear unit, e.g. GeGLU).

  'gelu' (tanh form) and 'exact_gelu' run as one fused kernel each way (`fused_ops.gated_gelu`,
  float32 inside, one rounding); other activations as TensorFlow ops.

  Args:
    activation: the activation of the first half, a name or function (`tf_utils.get_activation`).

  Example:
    >>> GatedActivation('relu')(tf.constant([[-1.0, 2.0, 3.0, 4.0]])).numpy()
    array([[0., 8.]], dtype=float32)
  """

  def __init__(self, activation: Any, **kwargs):
    super().__init__(**kwargs)
    self.activation = tf_utils.serialize_activation(activation)

  def call(self, inputs):
    inner, gate = tf.split(inputs, 2, axis=-1)
    if self.activation in _FUSED_GELU_APPROXIMATE:
      return fused_ops.gated_gelu(inner, gate,
                                  approximate=_FUSED_GELU_APPROXIMATE[self.activation])
    return tf.cast(tf_utils.get_activation(self.activation)(inner), inputs.dtype) * gate

  def compute_output_shape(self, input_shape):
    input_shape = tf.TensorShape(input_shape)
    return input_shape[:-1].concatenate([input_shape[-1] // 2 if input_shape[-1] else None])

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config['activation'] = self.activation
    return config
