"""A Keras LayerNormalization that runs as one fused kernel each way (`fused_ops.layer_norm`)."""

import tensorflow as tf
import tf_keras

from official.modeling import fused_ops


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class FusedLayerNormalization(tf_keras.layers.LayerNormalization):
  """`tf_keras.layers.LayerNormalization` whose last-axis case is `fused_ops.layer_norm`.

  The same arguments, variables (`gamma`, `beta`), checkpoints and values (float32 statistics, up
  to float rounding) as the Keras layer; the output is in the layer's compute dtype, as the Keras
  layer's. Normalizing over the last axis with a scale, it runs one XLA kernel forward and one
  backward instead of TensorFlow's ~15 ops of moments and batch-norm arithmetic each way; other
  axes, and `scale=False`, use the Keras layer's computation. Inputs are not cast to the compute
  dtype first: the kernel reads bfloat16 directly and computes in float32.

  Used for the encoders' embedding and final norms, the masked-LM head's transform norm and the
  transformer blocks' norms.

  Args:
    output_in_input_dtype: return the output in the dtype of the inputs, not the compute dtype
      (a float32 norm inside a bfloat16 block: the kernel rounds once, no cast after it); only on
      the fused (last-axis) case.
    **kwargs: `tf_keras.layers.LayerNormalization`'s arguments.

  Example:
    >>> norm = FusedLayerNormalization(epsilon=1e-12)
    >>> norm(tf.constant([[1.0, 3.0]])).numpy().round(3)
    array([[-1.,  1.]], dtype=float32)
  """

  def __init__(self, output_in_input_dtype: bool = False, **kwargs):
    super().__init__(autocast=False, **kwargs)
    self.output_in_input_dtype = output_in_input_dtype

  def call(self, inputs):
    inputs = tf.convert_to_tensor(inputs)
    rank = inputs.shape.rank
    # A norm built for another width is left to Keras' computation, which raises TensorFlow's
    # InvalidArgumentError as Keras' layer does (e.g. a block's shared pre-LN norm on a wider
    # key/value input).
    if (self.scale and rank is not None and list(self.axis) == [rank - 1]
        and self.gamma.shape[-1] == inputs.shape[-1]):
      dtype = inputs.dtype if self.output_in_input_dtype else self.compute_dtype
      return fused_ops.layer_norm(inputs, self.gamma, self.beta if self.center else None,
                                  self.epsilon, dtype=dtype)
    return super().call(tf.cast(inputs, self.compute_dtype))

  def get_config(self):
    config = super().get_config()
    if self.output_in_input_dtype:  # configs of the default stay Keras' layer's
      config['output_in_input_dtype'] = True
    return config
