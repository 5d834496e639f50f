"""`DualEncoder`: one encoder applied to two texts, scored by in-batch dot products (retrieval)."""

from typing import Any, Dict, Mapping, Sequence, Union

import tensorflow as tf
import tf_keras

from official.core import task_model
from official.nlp.modeling import layers
from official.nlp.modeling.models.bert_classifier import _encoder_outputs

_OUTPUTS = ('logits', 'predictions')
_FIELDS = ('word_ids', 'mask', 'type_ids')
_ENCODER_KEYS = ('input_word_ids', 'input_mask', 'input_type_ids')

Inputs = Union[Mapping[str, tf.Tensor], Sequence[tf.Tensor]]


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class DualEncoder(task_model.TaskStepsMixin, tf_keras.Model):
  """A dual encoder (as in LaBSE, Feng et al. 2020) on a BERT encoder (Model Garden's constructor).

  Both texts go through the same `network`; each is represented by its `pooled_output`,
  L2-normalized with `normalize`. With `output='logits'` (training) the model scores every left
  text against every right text of the batch with `MatMulWithMargin` (`dot_product`): example i's
  positive is right text i, the others are its negatives. With `output='predictions'` (export) it
  encodes one text, under the encoder's input names.

  Args:
    network: an encoder with `sequence_output` and `pooled_output` (dict or `[sequence, pooled]`
      outputs), e.g. `BertEncoder`.
    max_seq_length: the inputs' sequence length (part of the config, as in Model Garden, whose
      model fixes its inputs to it; calls accept any length).
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
    super().__init__(**kwargs)
    self.network = network
    self._max_seq_length = max_seq_length
    self._normalize = normalize
    self._logit_scale = logit_scale
    self._logit_margin = logit_margin
    self._output = output
    if output == 'logits':
      self._dot_product = layers.MatMulWithMargin(logit_scale=logit_scale,
                                                  logit_margin=logit_margin, name='dot_product')

  def _encode(self, inputs: Dict[str, tf.Tensor], training=None) -> Dict[str, tf.Tensor]:
    outputs = _encoder_outputs(self.network, inputs, training=training)
    pooled = outputs['pooled_output']
    if self._normalize:
      pooled = tf.nn.l2_normalize(pooled, axis=1)
    return {'sequence_output': outputs['sequence_output'], 'pooled_output': pooled}

  def _side(self, inputs: Inputs, side: str) -> Dict[str, tf.Tensor]:
    """The encoder inputs of one side ('left', 'right' or 'input') of the call's inputs."""
    if isinstance(inputs, Mapping):
      names = [f'{side}_{field}' for field in _FIELDS] if side != 'input' else list(_ENCODER_KEYS)
      if side == 'input' and not all(name in inputs for name in names):
        names = [f'left_{field}' for field in _FIELDS]
      missing = [name for name in names if name not in inputs]
      if missing:
        raise ValueError(f'{self.name} (output={self._output!r}) expects input keys {names}, '
                         f'missing {missing} in {sorted(inputs)}')
      tensors = [inputs[name] for name in names]
    else:
      count = 6 if self._output == 'logits' else 3
      if len(inputs) != count:
        raise ValueError(f'{self.name} (output={self._output!r}) expects a list of {count} '
                         f'input tensors, found {len(inputs)}')
      tensors = list(inputs[3:] if side == 'right' else inputs[:3])
    return dict(zip(_ENCODER_KEYS, tensors))

  def call(self, inputs: Inputs, training=None) -> Dict[str, tf.Tensor]:
    if self._output == 'predictions':
      return self._encode(self._side(inputs, 'input'), training=training)
    left = self._encode(self._side(inputs, 'left'), training=training)['pooled_output']
    right = self._encode(self._side(inputs, 'right'), training=training)['pooled_output']
    left_logits, right_logits = self._dot_product(tf.cast(left, tf.float32),
                                                  tf.cast(right, tf.float32))
    return {'left_logits': left_logits, 'right_logits': right_logits}

  @property
  def checkpoint_items(self) -> Dict[str, tf.Module]:
    """`encoder`: the shared encoder (for partial restores)."""
    return {'encoder': self.network}

  def get_build_config(self):
    # Built by calling on int ids; Keras' generic rebuild from shapes feeds floats.
    return None

  def get_config(self) -> Dict[str, Any]:
    return {'network': tf_keras.layers.serialize(self.network),
            'max_seq_length': self._max_seq_length, 'normalize': self._normalize,
            'logit_scale': self._logit_scale, 'logit_margin': self._logit_margin,
            'output': self._output, 'name': self.name}

  @classmethod
  def from_config(cls, config: Dict[str, Any], custom_objects=None):
    config = dict(config)
    config['network'] = tf_keras.layers.deserialize(config['network'],
                                                    custom_objects=custom_objects)
    return cls(**config)
