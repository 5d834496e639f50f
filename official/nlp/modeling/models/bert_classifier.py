"""`BertClassifier`: an encoder with a sentence-level classification (or regression) head."""

from typing import Any, Dict, Optional, Tuple

import tensorflow as tf
import tf_keras

from official.modeling import tf_utils
from official.nlp.modeling import layers
from official.nlp.modeling.layers import cast_to_float32
from official.nlp.modeling.models import functional_model


def encoder_outputs(network: tf_keras.Model, inputs, training=None) -> Dict[str, tf.Tensor]:
  """The encoder's outputs as a dict with `sequence_output` and `pooled_output`."""
  outputs = network(inputs, training=training)
  if isinstance(outputs, dict):
    return outputs
  sequence_output, pooled_output = outputs
  if isinstance(sequence_output, (list, tuple)):
    sequence_output = sequence_output[-1]
  return {'sequence_output': sequence_output, 'pooled_output': pooled_output}


def sequence_and_pooled(network: tf_keras.Model) -> Tuple[Any, Any]:
  """(symbolic sequence output, pooled output) of `network` called on its own `inputs`.

  Model Garden's models start their graph this way: `network(network.inputs)`, list outputs
  `[sequence_output, pooled_output]` or dict ones; with every layer's outputs first, the last
  layer's is the sequence output.
  """
  outputs = encoder_outputs(network, network.inputs)
  return outputs['sequence_output'], outputs['pooled_output']


def float32_outputs(outputs: Any) -> Any:
  """`outputs` (symbolic) through a `CastToFloat32` layer under a mixed policy, else as they are."""
  if not cast_to_float32.mixed_policy():
    return outputs
  return layers.CastToFloat32(name='float32_outputs')(outputs)


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class BertClassifier(functional_model.FunctionalModel):
  """Sentence (or sentence-pair) classifier on a BERT encoder, a functional Keras model (Model
  Garden's constructor, graph and outputs).

  The graph: the encoder on its own `inputs`; with `use_encoder_pooler`, dropout on its
  `pooled_output` and a `ClassificationHead` without a pooler (itself dropout + a dense
  `num_classes` layer: Model Garden's two dropouts); otherwise a `ClassificationHead` with its own
  tanh `pooler_dense` (width = the sequence output's) on the first token of `sequence_output`.
  With `num_classes == 1` the single logit is a regression output. `inputs` are the encoder's
  (e.g. `input_word_ids`, `input_mask`, `input_type_ids`), so `get_weights()` lists the encoder's
  weights, then the head's, as Model Garden's model does.

  Args:
    network: an encoder with `inputs` (a `BertEncoder`, `AlbertEncoder`, `EncoderScaffold`, ...;
      dict or list outputs).
    num_classes: output classes (1 for regression).
    initializer: initializer of the head's kernels.
    dropout_rate: dropout before the head (with `use_encoder_pooler`) and inside it.
    use_encoder_pooler: classify the encoder's pooled output (else a new pooler on token 0).
    head_name: the head layer's name (and its checkpoint key prefix).
    cls_head: a layer used instead of the default head, fed what the default head would be (the
      pooled output after dropout with `use_encoder_pooler`, else the sequence output); it is not
      part of `get_config` unless it is a registered Keras layer.

  Call args:
    inputs: dict with the encoder's inputs (`input_word_ids`, `input_mask`, `input_type_ids` int
      [batch, seq]; other keys are ignored), or a list of them in `inputs` order.

  Returns:
    float32 logits [batch, num_classes].

  Attributes:
    checkpoint_items: `encoder`, plus `<head_name>.pooler_dense` when the head has a pooler.

  Example:
    >>> encoder = BertEncoder(vocab_size=100, hidden_size=16, num_layers=2, num_attention_heads=2,
    ...                       inner_dim=32, dict_outputs=True)
    >>> classifier = BertClassifier(encoder, num_classes=3)
    >>> ids = tf.ones([2, 8], tf.int32)
    >>> classifier(dict(input_word_ids=ids, input_mask=ids, input_type_ids=0 * ids)).shape
    TensorShape([2, 3])
    >>> len(classifier.get_weights()) == len(encoder.get_weights()) + 2
    True
  """

  def __init__(self, network: tf_keras.Model, num_classes: int, initializer: Any = 'glorot_uniform',
               dropout_rate: float = 0.1, use_encoder_pooler: bool = True,
               head_name: str = 'sentence_prediction',
               cls_head: Optional[tf_keras.layers.Layer] = None, **kwargs):
    if num_classes < 1:
      raise ValueError(f'BertClassifier num_classes must be >= 1, found {num_classes}')
    initializer = tf_keras.initializers.get(initializer)
    sequence_output, pooled_output = sequence_and_pooled(network)
    if use_encoder_pooler:
      cls_inputs = layers.Dropout(dropout_rate)(pooled_output)
    else:
      cls_inputs = sequence_output
    classifier = cls_head
    if classifier is None:
      classifier = layers.ClassificationHead(
          inner_dim=0 if use_encoder_pooler else int(cls_inputs.shape[-1]),
          num_classes=num_classes, activation='tanh', dropout_rate=dropout_rate,
          initializer=tf_utils.clone_initializer(initializer), name=head_name)
    predictions = float32_outputs(classifier(cls_inputs))
    super().__init__(inputs=network.inputs, outputs=predictions, **kwargs)
    # Model Garden's attributes, then `encoder` (the key of checkpoints written before this model
    # was functional, which still restore).
    self._network = network
    self.encoder = network
    self.classifier = classifier
    object.__setattr__(self, '_classifier_config', dict(
        num_classes=num_classes, initializer=tf_keras.initializers.serialize(initializer),
        dropout_rate=dropout_rate, use_encoder_pooler=use_encoder_pooler, head_name=head_name))
    object.__setattr__(self, '_custom_head', cls_head is not None)

  @property
  def num_classes(self) -> int:
    return self._classifier_config['num_classes']

  @property
  def checkpoint_items(self) -> Dict[str, tf.Module]:
    """`encoder`, plus `<head_name>.pooler_dense` when the head has its own pooler."""
    items = {'encoder': self._network}
    pooler = getattr(self.classifier, 'pooler_dense', None)
    if pooler is not None:
      items[f'{self._classifier_config["head_name"]}.pooler_dense'] = pooler
    return items

  def get_config(self) -> Dict[str, Any]:
    config = dict(self._classifier_config, network=tf_keras.layers.serialize(self._network),
                  name=self.name)
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
