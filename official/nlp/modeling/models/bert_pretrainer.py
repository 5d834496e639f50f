"""`BertPretrainerV2`: an encoder, a masked-LM head tied to its embeddings, and classification heads."""

from typing import Any, Dict, List, Optional

import tensorflow as tf
import tf_keras

from official.modeling import tf_utils
from official.nlp.modeling import layers


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class BertPretrainerV2(tf_keras.Model):
  """BERT pretraining model (Model Garden's constructor and outputs).

  Args:
    encoder_network: a `BertEncoder` with dict outputs (or any network with `get_embedding_table`
      whose outputs hold `sequence_output`).
    mlm_activation: activation of the masked-LM transform.
    mlm_initializer: initializer of the masked-LM transform.
    classification_heads: layers on the sequence output, each with a unique `name`.
    customized_masked_lm: a masked-LM layer to use instead of `MaskedLM`.
    name: the model name.

  Serialization: `get_config` records the encoder, the MLM arguments and the heads; a
  `customized_masked_lm` is not recorded (it is usually tied to a table of another model), so
  `from_config` rebuilds the default `MaskedLM` tied to the rebuilt encoder.

  Call args:
    inputs: dict of `input_word_ids`, `input_mask`, `input_type_ids` [batch, seq] and
      `masked_lm_positions` [batch, num_predictions] (other keys are ignored).

  Returns:
    dict: `mlm_logits` float32 [batch, num_predictions, vocab] (when `masked_lm_positions` is
    given), every output of the encoder (`sequence_output`, `pooled_output`, `encoder_outputs`,
    ...), and one entry per classification head by its name (e.g. `next_sentence` [batch, 2]).

  Variable names: the encoder's under `bert/<encoder name>/...`; the masked-LM head under
  `bert/cls/predictions/` (`transform/dense`, `transform/LayerNorm`, `output_bias/bias`); heads
  under `bert/<head name>/` (e.g. `next_sentence/pooler_dense`).

  Example:
    >>> pretrainer = BertPretrainerV2(encoder, mlm_activation='gelu', classification_heads=[
    ...     layers.ClassificationHead(inner_dim=16, num_classes=2, name='next_sentence')])
    >>> outputs = pretrainer(inputs)
    >>> outputs['mlm_logits'].shape, outputs['next_sentence'].shape
  """

  def __init__(self, encoder_network: tf_keras.Model, mlm_activation: Any = None,
               mlm_initializer: Any = 'glorot_uniform',
               classification_heads: Optional[List[tf_keras.layers.Layer]] = None,
               customized_masked_lm: Optional[tf_keras.layers.Layer] = None,
               name: str = 'bert', **kwargs):
    super().__init__(name=name, **kwargs)
    self.encoder_network = encoder_network
    self.classification_heads = list(classification_heads or [])
    names = [head.name for head in self.classification_heads]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
      raise ValueError(f'classification head names must be unique; duplicated: {duplicates}')
    self._mlm_activation = tf_utils.serialize_activation(mlm_activation)
    self._mlm_initializer = tf_keras.initializers.get(mlm_initializer)
    if customized_masked_lm is None:
      # Under this model's name scope, so that a table created by this call is named like the
      # encoder's other variables: `bert/<encoder name>/word_embeddings/embeddings`.
      with tf.name_scope(self.name):
        table = encoder_network.get_embedding_table()
      customized_masked_lm = layers.MaskedLM(
          embedding_table=table, activation=mlm_activation,
          initializer=tf_utils.clone_initializer(self._mlm_initializer), name='cls/predictions')
    self.masked_lm = customized_masked_lm

  def call(self, inputs, training=None):
    encoder_outputs = self.encoder_network(inputs, training=training)
    if isinstance(encoder_outputs, dict):
      outputs = dict(encoder_outputs)
    else:  # Model Garden's legacy list outputs: [sequence_output or every layer's, pooled_output].
      sequence_output, pooled_output = encoder_outputs
      outputs = {'pooled_output': pooled_output}
      if isinstance(sequence_output, (list, tuple)):
        outputs['encoder_outputs'] = list(sequence_output)
        sequence_output = sequence_output[-1]
      outputs['sequence_output'] = sequence_output
    sequence_output = outputs['sequence_output']
    if 'masked_lm_positions' in inputs:
      # float32 whatever the policy, so that the loss is computed in float32.
      outputs['mlm_logits'] = tf.cast(
          self.masked_lm(sequence_output, inputs['masked_lm_positions']), tf.float32)
    for head in self.classification_heads:
      outputs[head.name] = head(sequence_output, training=training)
    return outputs

  @property
  def checkpoint_items(self) -> Dict[str, tf.Module]:
    """Sub-modules for partial restore: `encoder`, `masked_lm`, and each head by name."""
    items = {'encoder': self.encoder_network, 'masked_lm': self.masked_lm}
    for head in self.classification_heads:
      items[head.name] = head
    return items

  def get_build_config(self):
    # Built by calling on int ids; Keras' generic rebuild from shapes feeds floats.
    return None

  def get_config(self) -> Dict[str, Any]:
    return {'encoder_network': tf_keras.layers.serialize(self.encoder_network),
            'mlm_activation': self._mlm_activation,
            'mlm_initializer': tf_keras.initializers.serialize(self._mlm_initializer),
            'classification_heads': [tf_keras.layers.serialize(h)
                                     for h in self.classification_heads],
            'name': self.name}

  @classmethod
  def from_config(cls, config: Dict[str, Any], custom_objects=None):
    config = dict(config)
    config['encoder_network'] = tf_keras.layers.deserialize(config['encoder_network'],
                                                            custom_objects=custom_objects)
    config['classification_heads'] = [tf_keras.layers.deserialize(h, custom_objects=custom_objects)
                                      for h in config.get('classification_heads') or []]
    return cls(**config)
