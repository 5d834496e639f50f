"""`BertClassifier`: an encoder with a sentence-level classification (or regression) head."""

from typing import Any, Dict, Optional

import tensorflow as tf
import tf_keras

from official.core import task_model
from official.modeling import tf_utils
from official.nlp.modeling import layers


def _encoder_outputs(network: tf_keras.Model, inputs, training=None) -> Dict[str, tf.Tensor]:
  """The encoder's outputs as a dict with `sequence_output` and `pooled_output`."""
  outputs = network(inputs, training=training)
  if isinstance(outputs, dict):
    return outputs
  sequence_output, pooled_output = outputs
  if isinstance(sequence_output, (list, tuple)):
    sequence_output = sequence_output[-1]
  return {'sequence_output': sequence_output, 'pooled_output': pooled_output}


def _hidden_size(network: tf_keras.Model) -> int:
  config = network.get_config() if hasattr(network, 'get_config') else {}
  if 'hidden_size' not in config:
    raise ValueError(f'network {network.name!r}: cannot read hidden_size from its get_config(); '
                     'pass use_encoder_pooler=True or a cls_head')
  return int(config['hidden_size'])


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class BertClassifier(task_model.TaskStepsMixin, tf_keras.Model):
  """Sentence (or sentence-pair) classifier on a BERT encoder (Model Garden's constructor).

  With `use_encoder_pooler` the head is dropout + a dense `num_classes` layer on the encoder's
  `pooled_output`; otherwise it is a `ClassificationHead` with its own tanh `pooler_dense`
  (width = the encoder's hidden size) on the first token of `sequence_output`. With
  `num_classes == 1` the single logit is a regression output.

  Args:
    network: a `BertEncoder` (dict or list outputs).
    num_classes: output classes (1 for regression).
    initializer: initializer of the head's kernels.
    dropout_rate: dropout before the output layer.
    use_encoder_pooler: classify the encoder's pooled output (else a new pooler on token 0).
    head_name: the head layer's name (and its checkpoint key prefix).
    cls_head: a layer mapping the sequence output [batch, seq, hidden] to logits, used instead
      of the default head (not part of `get_config`).

  Call args:
    inputs: dict with `input_word_ids`, `input_mask`, `input_type_ids` int [batch, seq].

  Returns:
    float32 logits [batch, num_classes].

  Example:
    >>> encoder = BertEncoder(vocab_size=100, hidden_size=16, num_layers=2, num_attention_heads=2,
    ...                       inner_dim=32, dict_outputs=True)
    >>> classifier = BertClassifier(encoder, num_classes=3)
    >>> ids = tf.ones([2, 8], tf.int32)
    >>> classifier(dict(input_word_ids=ids, input_mask=ids, input_type_ids=0 * ids)).shape
    TensorShape([2, 3])
  """

  def __init__(self, network: tf_keras.Model, num_classes: int, initializer: Any = 'glorot_uniform',
               dropout_rate: float = 0.1, use_encoder_pooler: bool = True,
               head_name: str = 'sentence_prediction',
               cls_head: Optional[tf_keras.layers.Layer] = None, **kwargs):
    super().__init__(**kwargs)
    if num_classes < 1:
      raise ValueError(f'BertClassifier num_classes must be >= 1, found {num_classes}')
    self.encoder = network
    self.num_classes = num_classes
    self._initializer = tf_keras.initializers.get(initializer)
    self._dropout_rate = dropout_rate
    self._use_encoder_pooler = use_encoder_pooler
    self._head_name = head_name
    self._custom_head = cls_head is not None
    if cls_head is None:
      cls_head = layers.ClassificationHead(
          inner_dim=0 if use_encoder_pooler else _hidden_size(network), num_classes=num_classes,
          activation='tanh', dropout_rate=dropout_rate,
          initializer=tf_utils.clone_initializer(self._initializer), name=head_name)
    self.classifier = cls_head

  def call(self, inputs, training=None):
    outputs = _encoder_outputs(self.encoder, inputs, training=training)
    if self._use_encoder_pooler and not self._custom_head:
      features = outputs['pooled_output'][:, None, :]
    else:
      features = outputs['sequence_output']
    return tf.cast(self.classifier(features, training=training), tf.float32)

  @property
  def checkpoint_items(self) -> Dict[str, tf.Module]:
    """`encoder`, plus `<head_name>.pooler_dense` when the head has its own pooler."""
    items = {'encoder': self.encoder}
    pooler = getattr(self.classifier, 'pooler_dense', None)
    if pooler is not None:
      items[f'{self._head_name}.pooler_dense'] = pooler
    return items

  def get_build_config(self):
    # Built by calling on int ids; Keras' generic rebuild from shapes feeds floats.
    return None

  def get_config(self) -> Dict[str, Any]:
    config = {'network': tf_keras.layers.serialize(self.encoder), 'num_classes': self.num_classes,
              'initializer': tf_keras.initializers.serialize(self._initializer),
              'dropout_rate': self._dropout_rate, 'use_encoder_pooler': self._use_encoder_pooler,
              'head_name': self._head_name, 'name': self.name}
    if self._custom_head:  # a registered Keras layer (e.g. GaussianProcessClassificationHead)
      config['cls_head'] = tf_keras.layers.serialize(self.classifier)
    return config

  @classmethod
  def from_config(cls, config: Dict[str, Any], custom_objects=None):
    config = dict(config)
    config['network'] = tf_keras.layers.deserialize(config['network'],
                                                    custom_objects=custom_objects)
    if config.get('cls_head') is not None:
      config['cls_head'] = tf_keras.layers.deserialize(config['cls_head'],
                                                       custom_objects=custom_objects)
    return cls(**config)
