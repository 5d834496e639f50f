"""`SpanLabeling`: start and end logits of an answer span from a sequence of hidden states; and
`XLNetSpanLabeling`, XLNet's SQuAD 2.0 head (beam search over starts, answerability)."""

from typing import Any, Dict, Optional, Tuple

import tensorflow as tf
import tf_keras

from official.modeling import bfloat16_sums
from official.modeling import tf_utils

_OUTPUTS = ('logits', 'predictions')


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class SpanLabeling(tf_keras.Model):
  """A dense layer of width 2 over every position: column 0 scores a span start, column 1 an end.

  A functional network with Model Garden's constructor and layout (one dense layer
  `predictions/transform/logits`).

  Args:
    input_width: the hidden size of the sequence it reads.
    activation: activation of the dense layer (None: linear logits).
    initializer: initializer of the dense kernel.
    output: 'logits', or 'predictions' for log-probabilities over the positions (log-softmax).

  Call args:
    inputs: float [batch, seq, input_width] (another width raises Keras' input-shape error).

  Returns:
    `[start, end]`: float [batch, seq] each.

  Attributes:
    start_logits, end_logits: the symbolic logits (before any log-softmax), so that
      `tf_keras.Model(net.inputs, [net.start_logits, net.end_logits])` gives them.

  Example:
    >>> start, end = SpanLabeling(input_width=16)(tf.zeros([2, 8, 16]))
    >>> start.shape
    TensorShape([2, 8])
  """

  def __init__(self, input_width: int, activation: Optional[Any] = None,
               initializer: Any = 'glorot_uniform', output: str = 'logits', **kwargs):
    if output not in _OUTPUTS:
      raise ValueError(f'Unknown `output` value "{output}": SpanLabeling output must be one of '
                       f'{list(_OUTPUTS)}')
    initializer = tf_keras.initializers.get(initializer)
    sequence_data = tf_keras.Input(shape=(None, input_width), name='sequence_data',
                                   dtype=tf.float32)
    logits = tf_keras.layers.Dense(2, activation=activation, kernel_initializer=initializer,
                                   name='predictions/transform/logits')(sequence_data)
    start_logits, end_logits = logits[..., 0], logits[..., 1]
    outputs = [start_logits, end_logits]
    if output == 'predictions':
      outputs = [tf_keras.layers.Activation(tf.nn.log_softmax)(x) for x in outputs]
    super().__init__(inputs=[sequence_data], outputs=outputs, **kwargs)
    # Set without Keras' tracking: the config holds no variables (and adds no checkpoint keys).
    object.__setattr__(self, '_network_config', dict(
        input_width=input_width,
        activation=tf_keras.activations.serialize(tf_keras.activations.get(activation)),
        initializer=tf_keras.initializers.serialize(initializer), output=output))
    self.start_logits = start_logits
    self.end_logits = end_logits

  @property
  def dense(self) -> tf_keras.layers.Dense:
    """The dense layer `predictions/transform/logits` (looked up: an attribute would add a second
    checkpoint key for its variables)."""
    return self.get_layer('predictions/transform/logits')

  def _trackable_children(self, save_type='checkpoint', **kwargs):
    children = super()._trackable_children(save_type, **kwargs)
    if save_type == 'checkpoint':
      # mlm-garden's earlier key of the layer (a subclassed layer's `dense`), after Model Garden's
      # `layer_with_weights-0`: saves keep Model Garden's keys, older checkpoints still restore.
      children.setdefault('dense', self.dense)
    return children

  def get_config(self) -> Dict[str, Any]:
    return dict(self._network_config)

  @classmethod
  def from_config(cls, config: Dict[str, Any], custom_objects=None):
    return cls(**config)


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class XLNetSpanLabeling(tf_keras.layers.Layer):
  """XLNet's SQuAD 2.0 head: span start, span end given the start, and answerability.

  The start logits are a dense layer per position. The end logits read each position together
  with the start token's hidden state: the true start (`start_positions`) in training, else each
  of the `start_n_top` best starts (beam search). The answerability logit reads the CLS token
  (`class_index`) and the start-probability-weighted hidden state. Positions outside
  `paragraph_mask` get logits of -1e30. Sub-layers and their names are Model Garden's.

  Args:
    input_width: the hidden size of the sequence.
    start_n_top: start candidates kept by the beam search (> 1).
    end_n_top: end candidates kept per start candidate.
    activation: activation of the inner dense layers.
    dropout_rate: dropout before the answerability logit.
    initializer: kernel initializer.

  Call args:
    sequence_data: float [batch, seq, input_width].
    class_index: int [batch] position of the CLS token.
    paragraph_mask: float [batch, seq], 1 where an answer may be.
    start_positions: int [batch] true starts (training).
    training: with `start_positions`, score the ends of the true start only.

  Returns:
    dict: `start_logits`, `start_predictions` (log-softmax) [batch, seq]; `end_logits`,
    `end_predictions` [batch, seq] (true start) or [batch, start_n_top, seq] (beam search);
    `class_logits` [batch]; and unless training, `start_top_predictions`, `start_top_index`
    [batch, start_n_top], `end_top_predictions`, `end_top_index` [batch, start_n_top * end_n_top].

  Example:
    >>> head = XLNetSpanLabeling(input_width=8, start_n_top=2, end_n_top=2)
    >>> out = head(tf.zeros([2, 5, 8]), class_index=tf.zeros([2], tf.int32),
    ...            paragraph_mask=tf.ones([2, 5]))
    >>> out['end_top_index'].shape
    TensorShape([2, 4])
  """

  def __init__(self, input_width: int, start_n_top: int = 5, end_n_top: int = 5,
               activation: Any = 'tanh', dropout_rate: float = 0.0,
               initializer: Any = 'glorot_uniform', **kwargs):
    super().__init__(**kwargs)
    if start_n_top <= 1:
      raise ValueError(f'XLNetSpanLabeling start_n_top must be greater than 1, found '
                       f'{start_n_top}')
    initializer = tf_keras.initializers.get(initializer)
    # Plain values, set untracked (no checkpoint keys).
    object.__setattr__(self, '_head_config', dict(
        input_width=input_width, start_n_top=start_n_top, end_n_top=end_n_top,
        activation=tf_utils.serialize_activation(activation), dropout_rate=dropout_rate,
        initializer=tf_keras.initializers.serialize(initializer)))

    def dense(units, name, **kwargs):
      return tf_keras.layers.Dense(
          units, kernel_initializer=tf_utils.clone_initializer(initializer),
          name=f'predictions/transform/{name}', **kwargs)

    self.start_logits_dense = dense(1, 'start_logits')
    self.end_logits_inner_dense = dense(input_width, 'end_logits/inner', activation=activation)
    self.end_logits_layer_norm = tf_keras.layers.LayerNormalization(
        axis=-1, epsilon=1e-12, name='predictions/transform/end_logits/layernorm')
    self.end_logits_output_dense = dense(1, 'end_logits/output')
    self.answer_logits_inner = dense(input_width, 'answer_logits/inner', activation=activation)
    self.answer_logits_dropout = tf_keras.layers.Dropout(dropout_rate)
    self.answer_logits_output = dense(1, 'answer_logits/output', use_bias=False)

  def end_logits(self, inputs: tf.Tensor) -> tf.Tensor:
    """End logits of [batch, seq, 2 * width] -> [batch, seq], or [batch, seq, k, 2 * width] ->
    [batch, seq, k]."""
    # Always 4-D through the layers (the LayerNorm's axis is fixed by its first input's rank).
    per_start = inputs.shape.rank == 4
    x = inputs if per_start else inputs[:, :, None]
    x = self.end_logits_layer_norm(self.end_logits_inner_dense(x))
    logits = tf.squeeze(self.end_logits_output_dense(x), axis=-1)
    return logits if per_start else tf.squeeze(logits, axis=2)

  def call(self, sequence_data, class_index, paragraph_mask=None, start_positions=None,
           training=False):
    seq_length = tf.shape(sequence_data)[1]
    if paragraph_mask is None:
      paragraph_mask = tf.ones(tf.shape(sequence_data)[:2], tf.float32)
    paragraph_mask = tf.cast(paragraph_mask, tf.float32)
    start_logits = tf.squeeze(self.start_logits_dense(sequence_data), axis=-1)
    start_predictions, start_logits = _masked_log_softmax(start_logits, paragraph_mask)

    outputs = {}
    if training and start_positions is not None:
      start_index = tf.cast(tf.reshape(start_positions, [-1]), tf.int32)
      start_features = tf.gather(sequence_data, start_index, batch_dims=1)  # [batch, width]
      start_features = tf.tile(start_features[:, None], [1, seq_length, 1])
      end_logits = self.end_logits(tf.concat([sequence_data, start_features], axis=-1))
      end_mask = paragraph_mask
    else:
      start_n_top = self._head_config['start_n_top']
      top_predictions, top_index = tf.nn.top_k(start_predictions, k=start_n_top)
      start_features = tf.gather(sequence_data, top_index, batch_dims=1)  # [batch, k, width]
      start_features = tf.tile(start_features[:, None], [1, seq_length, 1, 1])
      ends = tf.tile(sequence_data[:, :, None], [1, 1, start_n_top, 1])
      end_logits = self.end_logits(tf.concat([ends, start_features], axis=-1))
      end_logits = tf.transpose(end_logits, [0, 2, 1])  # [batch, k, seq]
      end_mask = paragraph_mask[:, None, :]
      if not training:
        outputs.update(start_top_predictions=top_predictions, start_top_index=top_index)
    end_predictions, end_logits = _masked_log_softmax(end_logits, end_mask)
    if not training:
      end_top_predictions, end_top_index = tf.nn.top_k(end_predictions,
                                                        k=self._head_config['end_n_top'])
      candidates = self._head_config['start_n_top'] * self._head_config['end_n_top']
      outputs.update(end_top_predictions=tf.reshape(end_top_predictions, [-1, candidates]),
                     end_top_index=tf.reshape(end_top_index, [-1, candidates]))

    class_features = tf.gather(sequence_data, tf.cast(tf.reshape(class_index, [-1]), tf.int32),
                               batch_dims=1)
    start_probabilities = tf.nn.softmax(start_logits, axis=-1)
    start_summary = bfloat16_sums.einsum('blh,bl->bh', sequence_data,
                              tf.cast(start_probabilities, sequence_data.dtype))
    answer = self.answer_logits_inner(tf.concat([start_summary, class_features], axis=-1))
    answer = self.answer_logits_dropout(answer, training=training)
    outputs.update(start_predictions=start_predictions, end_predictions=end_predictions,
                   start_logits=start_logits, end_logits=end_logits,
                   class_logits=tf.squeeze(self.answer_logits_output(answer), axis=-1))
    return outputs

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.update(self._head_config)
    return config


def _masked_log_softmax(logits: tf.Tensor, mask: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
  """(log-softmax, logits) with the positions outside `mask` at -1e30 (in float32)."""
  masked = tf.cast(logits, tf.float32) * mask - 1e30 * (1.0 - mask)
  return tf.nn.log_softmax(masked, axis=-1), masked
