"""`CastToFloat32`: a weightless layer whose outputs are float32 under any dtype policy."""

import tensorflow as tf
import tf_keras


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class CastToFloat32(tf_keras.layers.Layer):
  """The identity in float32: Keras casts a layer's floating inputs to its dtype (autocast), so
  under a mixed policy this layer's outputs are float32, and under float32 it changes nothing.

  The networks and models put it last in their layer graph under a mixed policy only, so that
  their sequence outputs and logits are float32 as Model Garden's are (its blocks end in a float32
  LayerNorm) while our blocks pass the compute dtype to each other.

  Call args:
    inputs: a tensor or a nested structure of tensors (e.g. every layer's output).

  Returns: the same structure, floating tensors in float32 (others unchanged).

  Example:
    >>> CastToFloat32()([tf.ones([2], tf.bfloat16), tf.ones([1], tf.int32)])[0].dtype
    tf.float32
  """

  def __init__(self, **kwargs):
    kwargs['dtype'] = 'float32'
    super().__init__(**kwargs)

  def call(self, inputs):
    return tf.nest.map_structure(tf.identity, inputs)


def mixed_policy() -> bool:
  """Whether the global Keras dtype policy computes in another dtype than float32.

  Example:
    >>> mixed_policy()   # under tf_keras.mixed_precision.set_global_policy('mixed_bfloat16')
    True
  """
  return tf_keras.mixed_precision.global_policy().compute_dtype != 'float32'
