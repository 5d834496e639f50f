"""`Float32SumEinsumDense`: Keras' `EinsumDense` whose einsum adds in float32 on every CPU."""

import tf_keras

from official.modeling import bfloat16_sums


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class Float32SumEinsumDense(tf_keras.layers.EinsumDense):
  """`tf_keras.layers.EinsumDense` computed with `bfloat16_sums.einsum`.

  The same arguments, variables, checkpoints and config as Keras' layer. Under mixed bfloat16 on
  a CPU where TensorFlow runs Eigen's kernels (AVX2 only), Keras' einsum adds the products in
  bfloat16; this one adds them in float32 and rounds once, as oneDNN does on AVX-512 CPUs, so
  its results do not depend on the CPU beyond the order of float32 additions. Elsewhere (and in
  float32) it is Keras' computation unchanged.

  Example:
    >>> layer = Float32SumEinsumDense('btw,wd->btd', output_shape=[None, 4], bias_axes='d')
    >>> layer(tf.ones([2, 3, 8])).shape
    TensorShape([2, 3, 4])
  """

  def call(self, inputs):
    outputs = bfloat16_sums.einsum(self.equation, inputs, self.kernel)
    if self.bias is not None:
      outputs += self.bias
    if self.activation is not None:
      outputs = self.activation(outputs)
    return outputs
