"""`BertSpanLabeler`: an encoder with a span head (extractive question answering, SQuAD)."""

from typing import Any, Dict, List

import tensorflow as tf
import tf_keras

from official.core import task_model
from official.modeling import tf_utils
from official.nlp.modeling.models.bert_classifier import _encoder_outputs
from official.nlp.modeling.networks.span_labeling import SpanLabeling


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class BertSpanLabeler(task_model.TaskStepsMixin, tf_keras.Model):
  """Answer-span scorer on a BERT encoder (Model Garden's constructor and outputs).

  The encoder's `sequence_output` goes through a `SpanLabeling` head (layer `span_labeling`, a
  dense layer of width 2) giving a start and an end logit per position.

  Args:
    network: a `BertEncoder` (dict or list outputs).
    initializer: initializer of the head's kernel.
    output: 'logits', or 'predictions' for log-probabilities over the positions.

  Call args:
    inputs: dict with `input_word_ids`, `input_mask`, `input_type_ids` int [batch, seq].

  Returns:
    `[start_logits, end_logits]`: float32 [batch, seq] each (Model Garden returns this list too).

  Example:
    >>> labeler = BertSpanLabeler(encoder)
    >>> start, end = labeler(dict(input_word_ids=ids, input_mask=ids, input_type_ids=0 * ids))
    >>> start.shape
    TensorShape([2, 8])
  """

  def __init__(self, network: tf_keras.Model, initializer: Any = 'glorot_uniform',
               output: str = 'logits', **kwargs):
    super().__init__(**kwargs)
    self.encoder = network
    self._initializer = tf_keras.initializers.get(initializer)
    self._output = output
    config = network.get_config() if hasattr(network, 'get_config') else {}
    if 'hidden_size' not in config:
      raise ValueError(f'network {network.name!r}: cannot read hidden_size from its get_config()')
    self.span_labeling = SpanLabeling(
        input_width=int(config['hidden_size']), output=output,
        initializer=tf_utils.clone_initializer(self._initializer), name='span_labeling')

  def call(self, inputs, training=None) -> List[tf.Tensor]:
    sequence_output = _encoder_outputs(self.encoder, inputs, training=training)['sequence_output']
    start, end = self.span_labeling(sequence_output)
    return [tf.cast(start, tf.float32), tf.cast(end, tf.float32)]

  @property
  def checkpoint_items(self) -> Dict[str, tf.Module]:
    """`{'encoder': network}` for partial restore."""
    return {'encoder': self.encoder}

  def get_build_config(self):
    # Built by calling on int ids; Keras' generic rebuild from shapes feeds floats.
    return None

  def get_config(self) -> Dict[str, Any]:
    return {'network': tf_keras.layers.serialize(self.encoder),
            'initializer': tf_keras.initializers.serialize(self._initializer),
            'output': self._output, 'name': self.name}

  @classmethod
  def from_config(cls, config: Dict[str, Any], custom_objects=None):
    config = dict(config)
    config['network'] = tf_keras.layers.deserialize(config['network'],
                                                    custom_objects=custom_objects)
    return cls(**config)
