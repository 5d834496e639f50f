"""`ElectraPretrainer`: ELECTRA's generator (masked LM) and discriminator (replaced tokens).

ELECTRA (Clark et al., 2020, https://arxiv.org/abs/2003.10555) trains a small masked-LM generator
and, on the same batch, a discriminator that tells which tokens of the sequence the generator's
samples replaced. Also the sampling helpers Model Garden exposes beside the model
(`scatter_update`, `sample_from_softmax`, `unmask`, `get_updated_inputs`).
"""

import copy
import logging
from typing import Any, Dict, List, Mapping, Optional, Tuple

import tensorflow as tf
import tf_keras

from official.core import task_model
from official.modeling import tf_utils
from official.nlp.modeling import layers
from official.nlp.modeling.models.bert_classifier import encoder_outputs

_ENCODER_INPUT_NAMES = ('input_word_ids', 'input_mask', 'input_type_ids')
_REQUIRED_INPUTS = _ENCODER_INPUT_NAMES + ('masked_lm_positions', 'masked_lm_ids')


@tf_keras.utils.register_keras_serializable(package='mlm_garden')
class ElectraPretrainer(task_model.TaskStepsMixin, tf_keras.Model):
  """ELECTRA pretraining model (Model Garden's constructor, outputs and checkpoint layout).

  One call: the generator encoder reads the masked input; its masked-LM head (tied to the
  generator's word embeddings) scores the masked positions (`lm_outputs`), and a classification
  head on its first token gives `sentence_outputs` (e.g. next-sentence logits). The masked
  positions are then filled with the original tokens (`masked_lm_ids`) and replaced by tokens
  sampled from the generator's distribution (no gradient flows through the sampling); the
  discriminator encoder reads that corrupted sequence and scores every position with a dense
  projection and a 1-unit dense layer (`disc_logits`), against `disc_label` (1 where the sampled
  token differs from the original).

  Args:
    generator_network: the generator encoder (dict or list outputs, `get_embedding_table`).
    discriminator_network: the discriminator encoder (dict or list outputs).
    vocab_size: the generator's vocabulary (the masked-LM output width).
    num_classes: classes of the generator's classification head (`sentence_outputs`).
    num_token_predictions: masked positions per sequence (informative; the inputs set it).
    mlm_activation: activation of the masked-LM transform and the discriminator projection.
    mlm_initializer: initializer of the heads.
    output_type: 'logits', or 'predictions' (log-probabilities) for `lm_outputs`.
    disallow_correct: never sample the original token at a masked position.
    sequence_length: accepted as Model Garden's task passes it; recorded in the config, unused.
    classification_heads: accepted as Model Garden's task passes them; recorded in the config
      and unused, as in Model Garden (`sentence_outputs` comes from the generator's own head).

  Call args:
    inputs: dict with `input_word_ids`, `input_mask`, `input_type_ids` int [batch, seq],
      `masked_lm_positions`, `masked_lm_ids` int [batch, num_predictions]. Position 0 (the
      `[CLS]` token, and the padding of unused prediction slots) is never replaced.

  Returns:
    dict: `lm_outputs` float32 [batch, num_predictions, vocab_size], `sentence_outputs` float32
    [batch, num_classes], `disc_logits` float32 [batch, seq], `disc_label` int32 [batch, seq].

  Attributes (object-checkpoint keys, Model Garden's): `generator_network`,
  `discriminator_network`, `masked_lm` (layer `generator_masked_lm`), `classification` (layer
  `generator_classification_head`), `discriminator_projection` (layer
  `discriminator_projection_head`), `discriminator_head`. `checkpoint_items` is
  `{'encoder': discriminator_network}`: the discriminator is the model fine-tuned afterwards.

  Example:
    >>> generator = networks.BertEncoder(vocab_size=100, hidden_size=16, num_layers=1,
    ...                                  num_attention_heads=2, inner_dim=32, dict_outputs=True)
    >>> discriminator = networks.BertEncoder(vocab_size=100, hidden_size=32, num_layers=2,
    ...                                      num_attention_heads=2, inner_dim=64, dict_outputs=True)
    >>> model = ElectraPretrainer(generator, discriminator, vocab_size=100, num_classes=2,
    ...                           num_token_predictions=2)
    >>> outputs = model(dict(input_word_ids=ids, input_mask=mask, input_type_ids=types,
    ...                      masked_lm_positions=positions, masked_lm_ids=labels))
    >>> outputs['disc_logits'].shape   # [batch, seq]
  """

  def __init__(self, generator_network: tf_keras.Model, discriminator_network: tf_keras.Model,
               vocab_size: int, num_classes: int, num_token_predictions: int,
               mlm_activation: Any = None, mlm_initializer: Any = 'glorot_uniform',
               output_type: str = 'logits', disallow_correct: bool = False,
               sequence_length: Optional[int] = None,
               classification_heads: Optional[List[tf_keras.layers.Layer]] = None, **kwargs):
    super().__init__(**kwargs)
    table = generator_network.get_embedding_table()
    if int(table.shape[0]) != vocab_size:
      raise ValueError(f'ElectraPretrainer vocab_size is {vocab_size} but the generator\'s '
                       f'embedding table has {int(table.shape[0])} rows')
    if classification_heads:
      logging.warning('ElectraPretrainer: classification_heads %s are not used (as in Model '
                      'Garden); sentence_outputs come from the generator classification head',
                      [head.name for head in classification_heads])
    mlm_initializer = tf_keras.initializers.get(mlm_initializer)
    self.generator_network = generator_network
    self.discriminator_network = discriminator_network
    self.vocab_size = vocab_size
    self.num_classes = num_classes
    self.num_token_predictions = num_token_predictions
    self.output_type = output_type
    self.disallow_correct = disallow_correct
    # Plain values, set untracked (no checkpoint keys): what `get_config` records besides the above.
    object.__setattr__(self, '_extra_config', dict(
        mlm_activation=tf_utils.serialize_activation(mlm_activation),
        mlm_initializer=tf_keras.initializers.serialize(mlm_initializer),
        sequence_length=sequence_length,
        classification_heads=[tf_keras.layers.serialize(head)
                              for head in classification_heads or []]))
    self.masked_lm = layers.MaskedLM(
        embedding_table=table, activation=mlm_activation,
        initializer=tf_utils.clone_initializer(mlm_initializer), output=output_type,
        name='generator_masked_lm')
    self.classification = layers.ClassificationHead(
        inner_dim=_hidden_size(generator_network, 'generator_network'), num_classes=num_classes,
        initializer=tf_utils.clone_initializer(mlm_initializer),
        name='generator_classification_head')
    self.discriminator_projection = tf_keras.layers.Dense(
        _hidden_size(discriminator_network, 'discriminator_network'),
        activation=tf_utils.get_activation(mlm_activation),
        kernel_initializer=tf_utils.clone_initializer(mlm_initializer),
        name='discriminator_projection_head')
    self.discriminator_head = tf_keras.layers.Dense(
        1, kernel_initializer=tf_utils.clone_initializer(mlm_initializer),
        name='discriminator_head')

  def call(self, inputs: Mapping[str, tf.Tensor], training=None) -> Dict[str, tf.Tensor]:
    if not isinstance(inputs, Mapping):
      raise ValueError(f'ElectraPretrainer inputs must be a dict with {list(_REQUIRED_INPUTS)}, '
                       f'found {type(inputs).__name__}')
    missing = [name for name in _REQUIRED_INPUTS if name not in inputs]
    if missing:
      raise ValueError(f'ElectraPretrainer inputs lack {missing}; expected '
                       f'{list(_REQUIRED_INPUTS)}, found {sorted(inputs)}')
    generator_inputs = [inputs[name] for name in _ENCODER_INPUT_NAMES]
    sequence_output = encoder_outputs(self.generator_network, generator_inputs,
                                       training=training)['sequence_output']
    lm_outputs = tf.cast(self.masked_lm(sequence_output, inputs['masked_lm_positions']),
                         tf.float32)
    sentence_outputs = self.classification(sequence_output, training=training)

    fake = self._get_fake_data(inputs, lm_outputs)
    disc_inputs = [fake['inputs'][name] for name in _ENCODER_INPUT_NAMES]
    disc_sequence = encoder_outputs(self.discriminator_network, disc_inputs,
                                     training=training)['sequence_output']
    disc_logits = self.discriminator_head(self.discriminator_projection(disc_sequence))
    return {'lm_outputs': lm_outputs,
            'sentence_outputs': tf.cast(sentence_outputs, tf.float32),
            'disc_logits': tf.cast(tf.squeeze(disc_logits, axis=-1), tf.float32),
            'disc_label': fake['is_fake_tokens']}

  def _get_fake_data(self, inputs: Mapping[str, tf.Tensor], mlm_logits: tf.Tensor,
                     duplicate: bool = True) -> Dict[str, Any]:
    """The discriminator's input: the original sequence with generator samples at the masks.

    Returns:
      dict: `inputs` (a copy of `inputs` with the corrupted `input_word_ids`), `is_fake_tokens`
      int32 [batch, seq], `sampled_tokens` one-hot [batch, num_predictions, vocab].
    """
    inputs = unmask(inputs, duplicate)
    disallow = None
    if self.disallow_correct:
      disallow = tf.one_hot(inputs['masked_lm_ids'], depth=self.vocab_size, dtype=tf.float32)
    sampled_tokens = tf.stop_gradient(sample_from_softmax(mlm_logits, disallow=disallow))
    sampled_ids = tf.argmax(sampled_tokens, axis=-1, output_type=tf.int32)
    original = tf.cast(inputs['input_word_ids'], tf.int32)
    corrupted, updated = scatter_update(original, sampled_ids, inputs['masked_lm_positions'])
    is_fake = updated * tf.cast(tf.not_equal(corrupted, original), tf.int32)
    return {'inputs': get_updated_inputs(inputs, duplicate, input_word_ids=corrupted),
            'is_fake_tokens': is_fake, 'sampled_tokens': sampled_tokens}

  @property
  def checkpoint_items(self) -> Dict[str, tf.Module]:
    """`{'encoder': discriminator_network}` (Model Garden's): what fine-tuning restores."""
    return {'encoder': self.discriminator_network}

  def get_build_config(self):
    # Built by calling on int ids; Keras' generic rebuild from shapes feeds floats.
    return None

  def get_config(self) -> Dict[str, Any]:
    return dict(self._extra_config,
                generator_network=tf_keras.layers.serialize(self.generator_network),
                discriminator_network=tf_keras.layers.serialize(self.discriminator_network),
                vocab_size=self.vocab_size, num_classes=self.num_classes,
                num_token_predictions=self.num_token_predictions, output_type=self.output_type,
                disallow_correct=self.disallow_correct, name=self.name)

  @classmethod
  def from_config(cls, config: Dict[str, Any], custom_objects=None):
    config = dict(config)
    for key in ('generator_network', 'discriminator_network'):
      if isinstance(config[key], Mapping):
        config[key] = tf_keras.layers.deserialize(config[key], custom_objects=custom_objects)
    config['classification_heads'] = [
        tf_keras.layers.deserialize(head, custom_objects=custom_objects)
        for head in config.get('classification_heads') or []]
    return cls(**config)


def scatter_update(sequence: tf.Tensor, updates: tf.Tensor,
                   positions: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
  """`sequence` with `updates` written at `positions` of each row.

  Position 0 is never written (it is the `[CLS]` token, and the padding of unused slots). When a
  row names a position twice, the later slot's update wins.

  Args:
    sequence: [batch, seq] or [batch, seq, depth].
    updates: [batch, n] or [batch, n, depth], same dtype as `sequence`.
    positions: int [batch, n].

  Returns:
    `(updated_sequence, updates_mask)`: `sequence`'s shape and dtype; int32 [batch, seq], 1 where
    a value was written.

  Example:
    >>> scatter_update(tf.constant([[5, 6, 7]]), tf.constant([[9, 8]]), tf.constant([[2, 0]]))
    (<[[5, 6, 9]]>, <[[0, 0, 1]]>)
  """
  sequence = tf.convert_to_tensor(sequence)
  positions = tf.cast(positions, tf.int32)
  seq_length = _dim(sequence, 1)
  # hits[b, j, s]: slot j writes position s (never position 0).
  hits = tf.one_hot(positions, seq_length, dtype=tf.int32) * tf.concat(
      [[0], tf.ones([seq_length - 1], tf.int32)], axis=0)
  updates_mask = tf.reduce_max(hits, axis=1)
  # The last slot writing each position: argmax of the slot number (+1) among the hits.
  slots = tf.range(1, _dim(positions, 1) + 1)[None, :, None]
  last_slot = tf.maximum(tf.reduce_max(hits * slots, axis=1) - 1, 0)
  written = tf.gather(tf.cast(updates, sequence.dtype), last_slot, batch_dims=1)
  mask = tf.cast(updates_mask, tf.bool)
  if sequence.shape.rank == 3:
    mask = mask[:, :, None]
  return tf.where(mask, written, sequence), updates_mask


def sample_from_softmax(logits: tf.Tensor, disallow: Optional[tf.Tensor] = None) -> tf.Tensor:
  """One token per row drawn from softmax(logits) (Gumbel-max, temperature 1), one-hot.

  Args:
    logits: [batch, num_predictions, vocab].
    disallow: optional one-hot [batch, num_predictions, vocab] of tokens never to draw.

  Returns:
    float32 one-hot [batch, num_predictions, vocab].

  Example:
    >>> sample_from_softmax(tf.constant([[[0., 50., 0.]]])).numpy()
    array([[[0., 1., 0.]]], dtype=float32)
  """
  logits = tf.cast(logits, tf.float32)
  if disallow is not None:
    logits -= 1000.0 * tf.cast(disallow, tf.float32)
  uniform = tf.random.uniform(tf.shape(logits), minval=0.0, maxval=1.0)
  gumbel = -tf.math.log(-tf.math.log(uniform + 1e-9) + 1e-9)
  sampled = tf.argmax(logits + gumbel, axis=-1, output_type=tf.int32)
  return tf.one_hot(sampled, _dim(logits, -1), dtype=tf.float32)


def unmask(inputs: Mapping[str, tf.Tensor], duplicate: bool) -> Dict[str, tf.Tensor]:
  """`inputs` with the original tokens (`masked_lm_ids`) back at `masked_lm_positions`."""
  ids, _ = scatter_update(tf.cast(inputs['input_word_ids'], tf.int32),
                          tf.cast(inputs['masked_lm_ids'], tf.int32), inputs['masked_lm_positions'])
  return get_updated_inputs(inputs, duplicate, input_word_ids=ids)


def get_updated_inputs(inputs: Dict[str, Any], duplicate: bool, **kwargs) -> Dict[str, Any]:
  """`inputs` with the entries of `kwargs` replaced: in a shallow copy when `duplicate`."""
  updated = copy.copy(inputs) if duplicate else inputs
  updated.update(kwargs)
  return updated


def _dim(tensor: tf.Tensor, axis: int):
  """The static size of `tensor`'s `axis` when known (XLA needs constants), else the dynamic one."""
  return tensor.shape[axis] if tensor.shape[axis] is not None else tf.shape(tensor)[axis]


def _hidden_size(network: tf_keras.Model, argument: str) -> int:
  config = network.get_config() if hasattr(network, 'get_config') else {}
  if 'hidden_size' not in config:
    raise ValueError(f'ElectraPretrainer {argument} {network.name!r}: expected an encoder whose '
                     f'get_config() has hidden_size, found keys {sorted(config)}')
  return int(config['hidden_size'])
