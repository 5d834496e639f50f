"""`SpanLabeling`: start and end logits of an answer span from a sequence of hidden states."""

from typing import Any, Dict, Optional, Tuple

import tensorflow as tf
import tf_keras

_OUTPUTS = ('logits', 'predictions')


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class SpanLabeling(tf_keras.layers.Layer):
  """A dense layer of width 2 over every position: column 0 scores a span start, column 1 an end.

  Model Garden's constructor and weight name (`predictions/transform/logits`).

  Args:
    input_width: the hidden size of the sequence it reads.
    activation: activation of the dense layer (None: linear logits).
    initializer: initializer of the dense kernel.
    output: 'logits', or 'predictions' for log-probabilities over the positions (log-softmax).

  Call args:
    sequence_data: float [batch, seq, input_width].

  Returns:
    `(start, end)`: float [batch, seq] each.

  Example:
    >>> start, end = SpanLabeling(input_width=16)(tf.zeros([2, 8, 16]))
    >>> start.shape
    TensorShape([2, 8])
  """

  def __init__(self, input_width: int, activation: Optional[Any] = None,
               initializer: Any = 'glorot_uniform', output: str = 'logits', **kwargs):
    super().__init__(**kwargs)
    if output not in _OUTPUTS:
      raise ValueError(f'SpanLabeling output must be one of {list(_OUTPUTS)}, found {output!r}')
    self._input_width = input_width
    self._activation = activation
    self._initializer = tf_keras.initializers.get(initializer)
    self._output = output
    self.dense = tf_keras.layers.Dense(2, activation=activation,
                                       kernel_initializer=self._initializer,
                                       name='predictions/transform/logits')

  def build(self, input_shape):
    if input_shape[-1] is not None and int(input_shape[-1]) != self._input_width:
      raise ValueError(f'SpanLabeling input_width is {self._input_width} but the sequence has '
                       f'width {input_shape[-1]}')
    self.dense.build(input_shape)
    super().build(input_shape)

  def call(self, sequence_data: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
    logits = self.dense(sequence_data)
    start, end = logits[..., 0], logits[..., 1]
    if self._output == 'predictions':
      start, end = tf.nn.log_softmax(start, axis=-1), tf.nn.log_softmax(end, axis=-1)
    return start, end

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.update(input_width=self._input_width,
                  activation=tf_keras.activations.serialize(
                      tf_keras.activations.get(self._activation)),
                  initializer=tf_keras.initializers.serialize(self._initializer),
                  output=self._output)
    return config
