"""`Classification`: Model Garden's dense classifier network over a pooled vector (deprecated there
in favour of `layers.ClassificationHead`)."""

from typing import Any, Dict

import tensorflow as tf
import tf_keras

_OUTPUTS = ('logits', 'predictions')


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class Classification(tf_keras.Model):
  """A functional network: one dense layer `predictions/transform/logits` of `num_classes` units.

  With `num_classes == 1` the single output is a regression value. Checkpoint layout and
  constructor are Model Garden's.

  Args:
    input_width: width of the input vector (e.g. the encoder's hidden size).
    num_classes: output units.
    initializer: kernel initializer.
    output: 'logits', or 'predictions' for log-probabilities (log-softmax; float32 under
      `mixed_bfloat16`).

  Call args:
    inputs: float [batch, input_width].

  Returns:
    float [batch, num_classes].

  Attributes:
    logits: the symbolic logits (before the log-softmax), so that
      `tf_keras.Model(net.inputs, net.logits)` gives them.

  Example:
    >>> net = Classification(input_width=16, num_classes=3, output='predictions')
    >>> net(tf.zeros([2, 16])).shape
    TensorShape([2, 3])
  """

  def __init__(self, input_width: int, num_classes: int, initializer: Any = 'glorot_uniform',
               output: str = 'logits', **kwargs):
    if output not in _OUTPUTS:
      raise ValueError(f'Unknown `output` value "{output}": Classification output must be one of '
                       f'{list(_OUTPUTS)}')
    cls_output = tf_keras.Input(shape=(input_width,), name='cls_output', dtype=tf.float32)
    logits = tf_keras.layers.Dense(num_classes, kernel_initializer=initializer,
                                   name='predictions/transform/logits')(cls_output)
    outputs = logits
    if output == 'predictions':
      # Log-softmax in bfloat16 loses too much for a cross-entropy: keep it in float32 there.
      policy = tf_keras.mixed_precision.global_policy()
      dtype = tf.float32 if policy.name == 'mixed_bfloat16' else policy
      outputs = tf_keras.layers.Activation(tf.nn.log_softmax, dtype=dtype)(logits)
    super().__init__(inputs=[cls_output], outputs=outputs, **kwargs)
    # Set without Keras' tracking: the config holds no variables (and adds no checkpoint keys).
    object.__setattr__(self, '_network_config', dict(
        input_width=input_width, num_classes=num_classes,
        initializer=tf_keras.initializers.serialize(tf_keras.initializers.get(initializer)),
        output=output))
    self.logits = logits

  def get_config(self) -> Dict[str, Any]:
    return dict(self._network_config)

  @classmethod
  def from_config(cls, config: Dict[str, Any], custom_objects=None):
    return cls(**config)
