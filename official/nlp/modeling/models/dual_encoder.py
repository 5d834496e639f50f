"""`DualEncoder`: one encoder applied to two texts, scored by in-batch dot products (retrieval)."""

from typing import Any, Dict, List, Mapping

import tensorflow as tf
import tf_keras

from official.nlp.modeling import layers
from official.nlp.modeling.layers import cast_to_float32
from official.nlp.modeling.models import bert_classifier
from official.nlp.modeling.models import functional_model

_OUTPUTS = ('logits', 'predictions')
_FIELDS = ('word_ids', 'mask', 'type_ids')
_ENCODER_KEYS = ('input_word_ids', 'input_mask', 'input_type_ids')


def _l2_normalize(x: tf.Tensor) -> tf.Tensor:
  return tf.nn.l2_normalize(x, axis=1)


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class DualEncoder(functional_model.FunctionalModel):
  """A dual encoder (as in LaBSE, Feng et al. 2020) on a BERT encoder, a functional Keras model
  (Model Garden's constructor, graph and outputs).

  Both texts go through the same `network`; each is represented by its `pooled_output`,
  L2-normalized with `normalize` (a `Lambda` layer per side). With `output='logits'` (training)
  the model scores every left text against every right text of the batch with `MatMulWithMargin`
  (`dot_product`): example i's positive is right text i, the others are its negatives. With
  `output='predictions'` (export) it encodes one text, under the encoder's input names.

  Args:
    network: an encoder with `sequence_output` and `pooled_output` (dict or `[sequence, pooled]`
      outputs), e.g. `BertEncoder`.
    max_seq_length: the length of the graph's inputs (Model Garden's; calls accept any length).
    normalize: L2-normalize the pooled encodings.
    logit_scale: multiplies the dot products (`output='logits'`).
    logit_margin: subtracted from each positive pair's dot product (`output='logits'`).
    output: 'logits' or 'predictions'.

  Call args:
    inputs: `logits`: a dict of `left_word_ids`, `left_mask`, `left_type_ids`, `right_word_ids`,
      `right_mask`, `right_type_ids` int [batch, seq], or a list of these six in this order.
      `predictions`: a dict of `input_word_ids`, `input_mask`, `input_type_ids` (or the `left_`
      names), or a list of the three.

  Returns:
    `logits`: a dict of `left_logits` and `right_logits` float32 [batch, batch] (right = left
    transposed). `predictions`: a dict of `sequence_output` [batch, seq, hidden] and
    `pooled_output` [batch, hidden] (normalized with `normalize`).

  Raises:
    ValueError: an unknown `output`.

  Example:
    >>> encoder = BertEncoder(vocab_size=100, hidden_size=16, num_layers=2, num_attention_heads=2,
    ...                       inner_dim=32, dict_outputs=True)
    >>> model = DualEncoder(encoder, max_seq_length=8)
    >>> ids = tf.ones([3, 8], tf.int32)
    >>> model([ids, ids, 0 * ids, ids, ids, 0 * ids])['left_logits'].shape
    TensorShape([3, 3])
  """

  def __init__(self, network: tf_keras.Model, max_seq_length: int = 32, normalize: bool = True,
               logit_scale: float = 1.0, logit_margin: float = 0.0, output: str = 'logits',
               **kwargs):
    if output not in _OUTPUTS:
      raise ValueError(f'DualEncoder output must be one of {list(_OUTPUTS)}, found {output!r}')

    def encode(side: str):
      names = [f'{side}_{field}' for field in _FIELDS] if side != 'input' else _ENCODER_KEYS
      inputs = [tf_keras.Input(shape=(max_seq_length,), dtype=tf.int32, name=name)
                for name in names]
      outputs = bert_classifier.encoder_outputs(network, inputs)
      encoded = outputs['pooled_output']
      if normalize:
        encoded = tf_keras.layers.Lambda(_l2_normalize)(encoded)
      return inputs, outputs['sequence_output'], encoded

    if output == 'logits':
      left_inputs, _, left = encode('left')
      right_inputs, _, right = encode('right')
      if cast_to_float32.mixed_policy():  # float32 logits whatever the policy
        left, right = layers.CastToFloat32(name='float32_encodings')([left, right])
      dot_product = layers.MatMulWithMargin(logit_scale=logit_scale, logit_margin=logit_margin,
                                            dtype='float32', name='dot_product')
      left_logits, right_logits = dot_product(left, right)
      inputs = left_inputs + right_inputs
      outputs = {'left_logits': left_logits, 'right_logits': right_logits}
    else:
      inputs, sequence_output, pooled_output = encode('input')
      outputs = {'sequence_output': sequence_output, 'pooled_output': pooled_output}
    super().__init__(inputs=inputs, outputs=outputs, **kwargs)
    self.network = network  # Model Garden's attribute (checkpoint key, before and now)
    object.__setattr__(self, '_dual_config', dict(
        max_seq_length=max_seq_length, normalize=normalize, logit_scale=logit_scale,
        logit_margin=logit_margin, output=output))

  def _completing_network(self) -> Any:
    return self.__dict__.get('network')

  def _graph_inputs(self, inputs: Mapping[str, Any]) -> List[Any]:
    if (self._dual_config['output'] == 'predictions' and 'input_word_ids' not in inputs
        and 'left_word_ids' in inputs):
      inputs = dict(zip(_ENCODER_KEYS, (inputs[f'left_{field}'] for field in _FIELDS)))
    return super()._graph_inputs(inputs)

  @property
  def checkpoint_items(self) -> Dict[str, tf.Module]:
    """`encoder`: the shared encoder (for partial restores)."""
    return {'encoder': self.network}

  def get_config(self) -> Dict[str, Any]:
    return dict(self._dual_config, network=tf_keras.layers.serialize(self.network),
                name=self.name)

  @classmethod
  def from_config(cls, config: Dict[str, Any], custom_objects=None):
    config = dict(config)
    config['network'] = tf_keras.layers.deserialize(config['network'],
                                                    custom_objects=custom_objects)
    return cls(**config)
