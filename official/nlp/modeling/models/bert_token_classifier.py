"""`BertTokenClassifier`: an encoder with a per-token classification head (tagging)."""

from typing import Any, Dict

import tensorflow as tf
import tf_keras

from official.modeling import tf_utils
from official.nlp.modeling import layers
from official.nlp.modeling.models import bert_classifier
from official.nlp.modeling.models import functional_model

_OUTPUTS = ('logits', 'predictions')


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class BertTokenClassifier(functional_model.FunctionalModel):
  """Token classifier on a BERT encoder, a functional Keras model (Model Garden's constructor,
  graph and outputs).

  The graph: the encoder on its own `inputs`, dropout on its `sequence_output`, a dense
  `num_classes` layer named `predictions/transform/logits`, and for `output='predictions'` a
  log-softmax `Activation`.

  Args:
    network: an encoder with `inputs` (dict or list outputs).
    num_classes: tag classes.
    initializer: initializer of the output kernel.
    output: 'logits', or 'predictions' for log-probabilities (log-softmax).
    dropout_rate: dropout before the output layer.
    output_encoder_outputs: also return `encoder_outputs`: the sequence output the dense layer
      reads (after the dropout, as in Model Garden).

  Call args:
    inputs: dict with the encoder's inputs (`input_word_ids`, `input_mask`, `input_type_ids` int
      [batch, seq]; other keys are ignored), or a list of them in `inputs` order.

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
    if output not in _OUTPUTS:
      raise ValueError(f'BertTokenClassifier output must be one of {list(_OUTPUTS)}, found '
                       f'{output!r}')
    if num_classes < 1:
      raise ValueError(f'BertTokenClassifier num_classes must be >= 1, found {num_classes}')
    initializer = tf_keras.initializers.get(initializer)
    sequence_output, _ = bert_classifier.sequence_and_pooled(network)
    sequence_output = layers.Dropout(dropout_rate)(sequence_output)
    classifier = tf_keras.layers.Dense(
        num_classes, kernel_initializer=tf_utils.clone_initializer(initializer),
        name='predictions/transform/logits')
    logits = classifier(sequence_output)
    if output == 'logits':
      outputs = {'logits': bert_classifier.float32_outputs(logits)}
    else:  # float32 whatever the policy (a log-softmax in bfloat16 loses too much)
      outputs = {'predictions': tf_keras.layers.Activation(tf.nn.log_softmax,
                                                           dtype='float32')(logits)}
    if output_encoder_outputs:
      outputs['encoder_outputs'] = sequence_output
    super().__init__(inputs=network.inputs, outputs=outputs, **kwargs)
    # Model Garden's attributes, then `encoder` (the key of checkpoints written before this model
    # was functional, which still restore).
    self._network = network
    self.encoder = network
    self.classifier = classifier
    object.__setattr__(self, '_tagger_config', dict(
        num_classes=num_classes, initializer=tf_keras.initializers.serialize(initializer),
        output=output, dropout_rate=dropout_rate, output_encoder_outputs=output_encoder_outputs))

  @property
  def num_classes(self) -> int:
    return self._tagger_config['num_classes']

  @property
  def checkpoint_items(self) -> Dict[str, tf.Module]:
    """`{'encoder': network}` for partial restore."""
    return {'encoder': self._network}

  def get_config(self) -> Dict[str, Any]:
    return dict(self._tagger_config, network=tf_keras.layers.serialize(self._network),
                name=self.name)

  @classmethod
  def from_config(cls, config: Dict[str, Any], custom_objects=None):
    config = dict(config)
    config['network'] = tf_keras.layers.deserialize(config['network'],
                                                    custom_objects=custom_objects)
    return cls(**config)
