"""`BertTokenClassifier`: an encoder with a per-token classification head (tagging)."""

from typing import Any, Dict

import tensorflow as tf
import tf_keras

from official.core import task_model
from official.modeling import tf_utils
from official.nlp.modeling.models.bert_classifier import _encoder_outputs

_OUTPUTS = ('logits', 'predictions')


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class BertTokenClassifier(task_model.TaskStepsMixin, tf_keras.Model):
  """Token classifier on a BERT encoder (Model Garden's constructor).

  The encoder's `sequence_output` goes through dropout and a dense `num_classes` layer named
  `predictions/transform/logits`.

  Args:
    network: a `BertEncoder` (dict or list outputs).
    num_classes: tag classes.
    initializer: initializer of the output kernel.
    output: 'logits', or 'predictions' for log-probabilities (log-softmax).
    dropout_rate: dropout before the output layer.
    output_encoder_outputs: also return `encoder_outputs` (the sequence output).

  Call args:
    inputs: dict with `input_word_ids`, `input_mask`, `input_type_ids` int [batch, seq].

  Returns:
    As Model Garden's, a dict: `logits` (or `predictions` with `output='predictions'`) float32
    [batch, seq, num_classes], plus `encoder_outputs` [batch, seq, hidden] with
    `output_encoder_outputs`.

  Example:
    >>> tagger = BertTokenClassifier(encoder, num_classes=5)
    >>> tagger(dict(input_word_ids=ids, input_mask=ids, input_type_ids=0 * ids))['logits'].shape
    TensorShape([2, 8, 5])
  """

  def __init__(self, network: tf_keras.Model, num_classes: int, initializer: Any = 'glorot_uniform',
               output: str = 'logits', dropout_rate: float = 0.1,
               output_encoder_outputs: bool = False, **kwargs):
    super().__init__(**kwargs)
    if output not in _OUTPUTS:
      raise ValueError(f'BertTokenClassifier output must be one of {list(_OUTPUTS)}, found '
                       f'{output!r}')
    if num_classes < 1:
      raise ValueError(f'BertTokenClassifier num_classes must be >= 1, found {num_classes}')
    self.encoder = network
    self.num_classes = num_classes
    self._initializer = tf_keras.initializers.get(initializer)
    self._output = output
    self._dropout_rate = dropout_rate
    self._output_encoder_outputs = output_encoder_outputs
    self.dropout = tf_keras.layers.Dropout(dropout_rate)
    self.classifier = tf_keras.layers.Dense(
        num_classes, kernel_initializer=tf_utils.clone_initializer(self._initializer),
        name='predictions/transform/logits')

  def call(self, inputs, training=None):
    sequence_output = _encoder_outputs(self.encoder, inputs, training=training)['sequence_output']
    logits = tf.cast(self.classifier(self.dropout(sequence_output, training=training)),
                     tf.float32)
    outputs = {self._output: tf.nn.log_softmax(logits, axis=-1)
               if self._output == 'predictions' else logits}
    if self._output_encoder_outputs:
      outputs['encoder_outputs'] = sequence_output
    return outputs

  @property
  def checkpoint_items(self) -> Dict[str, tf.Module]:
    """`{'encoder': network}` for partial restore."""
    return {'encoder': self.encoder}

  def get_build_config(self):
    return None

  def get_config(self) -> Dict[str, Any]:
    return {'network': tf_keras.layers.serialize(self.encoder), 'num_classes': self.num_classes,
            'initializer': tf_keras.initializers.serialize(self._initializer),
            'output': self._output, 'dropout_rate': self._dropout_rate,
            'output_encoder_outputs': self._output_encoder_outputs, 'name': self.name}

  @classmethod
  def from_config(cls, config: Dict[str, Any], custom_objects=None):
    config = dict(config)
    config['network'] = tf_keras.layers.deserialize(config['network'],
                                                    custom_objects=custom_objects)
    return cls(**config)
