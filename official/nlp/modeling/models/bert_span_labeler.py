"""`BertSpanLabeler`: an encoder with a span head (extractive question answering, SQuAD)."""

from typing import Any, Dict

import tensorflow as tf
import tf_keras

from official.modeling import tf_utils
from official.nlp.modeling.models import bert_classifier
from official.nlp.modeling.models import functional_model
from official.nlp.modeling.networks.span_labeling import SpanLabeling


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class BertSpanLabeler(functional_model.FunctionalModel):
  """Answer-span scorer on a BERT encoder, a functional Keras model (Model Garden's constructor,
  graph and outputs).

  The graph: the encoder on its own `inputs`, its `sequence_output` through a `SpanLabeling` head
  (layer `span_labeling`, a dense layer of width 2) giving a start and an end logit per position,
  then two identity layers naming the outputs `start_positions` and `end_positions` (float32).

  Args:
    network: an encoder with `inputs` (dict or list outputs).
    initializer: initializer of the head's kernel.
    output: 'logits', or 'predictions' for log-probabilities over the positions.

  Call args:
    inputs: dict with the encoder's inputs (`input_word_ids`, `input_mask`, `input_type_ids` int
      [batch, seq]; other keys are ignored), or a list of them in `inputs` order.

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
    initializer = tf_keras.initializers.get(initializer)
    sequence_output, _ = bert_classifier.sequence_and_pooled(network)
    span_labeling = SpanLabeling(
        input_width=int(sequence_output.shape[-1]), output=output,
        initializer=tf_utils.clone_initializer(initializer), name='span_labeling')
    start_logits, end_logits = span_labeling(sequence_output)
    # Identity layers that name the outputs (Model Garden's); float32 whatever the policy.
    start_logits = tf_keras.layers.Lambda(tf.identity, name='start_positions',
                                          dtype='float32')(start_logits)
    end_logits = tf_keras.layers.Lambda(tf.identity, name='end_positions',
                                        dtype='float32')(end_logits)
    super().__init__(inputs=network.inputs, outputs=[start_logits, end_logits], **kwargs)
    # Model Garden's attributes, then `encoder` (the key of checkpoints written before this model
    # was functional, which still restore).
    self._network = network
    self.encoder = network
    self.span_labeling = span_labeling
    object.__setattr__(self, '_labeler_config', dict(
        initializer=tf_keras.initializers.serialize(initializer), output=output))

  @property
  def checkpoint_items(self) -> Dict[str, tf.Module]:
    """`{'encoder': network}` for partial restore."""
    return {'encoder': self._network}

  def get_config(self) -> Dict[str, Any]:
    return dict(self._labeler_config, network=tf_keras.layers.serialize(self._network),
                name=self.name)

  @classmethod
  def from_config(cls, config: Dict[str, Any], custom_objects=None):
    config = dict(config)
    config['network'] = tf_keras.layers.deserialize(config['network'],
                                                    custom_objects=custom_objects)
    return cls(**config)
