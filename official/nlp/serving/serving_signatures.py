"""The `tf.Module` whose functions become a SavedModel's signatures: encoder, fill_mask, classify.

Every signature takes int32 `input_word_ids`, `input_mask`, `input_type_ids` of shape [batch, seq]
(batch and seq may vary per call, seq up to the encoder's `max_sequence_length`):
- `encoder` -> `sequence_output` float32 [batch, seq, hidden], `pooled_output` float32
  [batch, hidden].
- `fill_mask` (+ `masked_lm_positions` int32 [batch, n]) -> `top_k_ids` int32 [batch, n, k],
  `top_k_probs` float32 [batch, n, k]: the k most likely tokens at each position, best first, with
  their softmax probabilities over the whole vocabulary; k is fixed when the module is built.
- `classify` -> `logits` float32 [batch, classes], `probabilities` (softmax of the logits) and
  `predicted_class` int32 [batch].

The same module serves in-process (its functions are plain `tf.function`s) and is what
`export_savedmodel` saves, so the checkpoint path and the SavedModel path run the same graph.

Example:
  >>> module = build_serving_module(pretrainer=pretrainer, top_k=5)
  >>> module.fill_mask(input_word_ids=ids, input_mask=mask, input_type_ids=types,
  ...                  masked_lm_positions=positions)['top_k_ids']
"""

from typing import Any, Dict, Mapping, Optional, Tuple

import tensorflow as tf
import tf_keras

ENCODER_INPUTS = ('input_word_ids', 'input_mask', 'input_type_ids')
MASKED_LM_POSITIONS = 'masked_lm_positions'


def _int_spec(name: str) -> tf.TensorSpec:
  return tf.TensorSpec([None, None], tf.int32, name=name)


def encoder_outputs(encoder: tf_keras.Model, inputs: Mapping[str, tf.Tensor]
                    ) -> Dict[str, tf.Tensor]:
  """`sequence_output` [batch, seq, hidden] and `pooled_output` [batch, hidden] in float32.

  Args:
    encoder: an encoder with dict outputs (`BertEncoder`, `ModernBertEncoder`, which ignores
      `input_type_ids`) or Model Garden's legacy list outputs (`[sequence_output or every
      layer's output, pooled_output]`).
    inputs: the three encoder inputs.
  """
  outputs = encoder({k: inputs[k] for k in ENCODER_INPUTS}, training=False)
  if isinstance(outputs, Mapping):
    sequence_output, pooled_output = outputs['sequence_output'], outputs['pooled_output']
  else:
    sequence_output, pooled_output = outputs
    if isinstance(sequence_output, (list, tuple)):
      sequence_output = sequence_output[-1]
  return {'sequence_output': tf.cast(sequence_output, tf.float32),
          'pooled_output': tf.cast(pooled_output, tf.float32)}


def top_k_probabilities(logits: tf.Tensor, k: int) -> Tuple[tf.Tensor, tf.Tensor]:
  """The `k` largest softmax probabilities over the last axis and their int32 indices.

  Args:
    logits: [..., vocab].
    k: how many to keep.

  Returns:
    `(ids int32 [..., k], probabilities float32 [..., k])`, best first.
  """
  probabilities, ids = tf.math.top_k(tf.nn.softmax(tf.cast(logits, tf.float32)), k=k)
  return tf.cast(ids, tf.int32), probabilities


def classifier_logits(classifier: tf_keras.Model, inputs: Mapping[str, tf.Tensor]) -> tf.Tensor:
  """float32 logits [batch, classes] of a Keras classifier that returns logits or `{'logits': ...}`.

  Raises:
    ValueError: the model returns a dict without `logits`, or logits that are not [batch, classes].
  """
  outputs = classifier({k: inputs[k] for k in ENCODER_INPUTS}, training=False)
  if isinstance(outputs, Mapping):
    if 'logits' not in outputs:
      raise ValueError(f'classifier {classifier.name!r} returned a dict with keys '
                       f'{sorted(outputs)}; expected a `logits` entry [batch, num_classes]')
    outputs = outputs['logits']
  if outputs.shape.rank != 2:
    raise ValueError(f'classifier {classifier.name!r} returned logits of shape {outputs.shape}; '
                     'expected [batch, num_classes]')
  return tf.cast(outputs, tf.float32)


def embedding_table_rows(encoder: Optional[tf_keras.Model]) -> Optional[int]:
  """The vocabulary size of an encoder's word embeddings, or None when it has no table."""
  if encoder is None or not hasattr(encoder, 'get_embedding_table'):
    return None
  return int(encoder.get_embedding_table().shape[0])


def max_sequence_length(encoder: Optional[tf_keras.Model]) -> Optional[int]:
  """Rows of an encoder's position table (the longest input it takes), or None when unknown.

  An encoder without a table (ModernBERT's rotary positions) gives its config's
  `max_sequence_length` (`max_position_embeddings` of its encoder config).

  Example:
    >>> max_sequence_length(networks.BertEncoder(vocab_size=30, max_sequence_length=32))
    32
  """
  layer = getattr(encoder, '_position_embedding_layer', None)
  length = getattr(layer, 'max_length', None)
  if length is None and encoder is not None and hasattr(encoder, 'get_config'):
    try:
      length = encoder.get_config().get('max_sequence_length')
    except NotImplementedError:
      length = None
  return int(length) if length else None


def find_encoder(model: tf_keras.Model) -> Optional[tf_keras.Model]:
  """A model's encoder: its `encoder_network`, else its `checkpoint_items['encoder']` (or None)."""
  encoder = getattr(model, 'encoder_network', None)
  if encoder is None:
    encoder = dict(getattr(model, 'checkpoint_items', None) or {}).get('encoder')
  return encoder


def build_serving_module(pretrainer: Optional[tf_keras.Model] = None,
                         classifier: Optional[tf_keras.Model] = None,
                         encoder: Optional[tf_keras.Model] = None,
                         top_k: int = 5) -> tf.Module:
  """A `tf.Module` with an `encoder`, `fill_mask` and/or `classify` function (see module docstring).

  Args:
    pretrainer: a `BertPretrainerV2` (gives `fill_mask`, and `encoder` from its `encoder_network`).
    classifier: a Keras model mapping the encoder-input dict to logits or `{'logits': ...}`
      (gives `classify`).
    encoder: the encoder (default: the pretrainer's or the classifier's, when it has one).
    top_k: predictions per masked position in `fill_mask`.

  Returns:
    The module; `module.signature_functions` maps signature names to its functions. Only the
    models' variables are tracked (not the Keras objects), so saving it writes just the graphs and
    weights and loading needs TensorFlow alone.

  Raises:
    ValueError: neither model given, or `top_k` outside [1, vocabulary size].
  """
  if pretrainer is None and classifier is None and encoder is None:
    raise ValueError('build_serving_module: give a pretrainer, a classifier or an encoder')
  if encoder is None:
    encoder = find_encoder(pretrainer) if pretrainer is not None else None
  if encoder is None and classifier is not None:
    encoder = find_encoder(classifier)
  module = tf.Module(name='mlm_garden_serving')
  variables, functions = [], {}
  encoder_signature = [_int_spec(name) for name in ENCODER_INPUTS]

  if encoder is not None:
    def encode(input_word_ids, input_mask, input_type_ids):
      return encoder_outputs(encoder, {'input_word_ids': input_word_ids, 'input_mask': input_mask,
                                       'input_type_ids': input_type_ids})
    functions['encoder'] = tf.function(encode, input_signature=encoder_signature)
    variables += encoder.variables

  if pretrainer is not None:
    vocab_size = embedding_table_rows(encoder)
    if top_k < 1 or (vocab_size is not None and top_k > vocab_size):
      raise ValueError(f'top_k must be in [1, vocab_size={vocab_size}]; found {top_k}')

    def fill_mask(input_word_ids, input_mask, input_type_ids, masked_lm_positions):
      logits = pretrainer({'input_word_ids': input_word_ids, 'input_mask': input_mask,
                           'input_type_ids': input_type_ids,
                           MASKED_LM_POSITIONS: masked_lm_positions}, training=False)['mlm_logits']
      ids, probabilities = top_k_probabilities(logits, top_k)
      return {'top_k_ids': ids, 'top_k_probs': probabilities}
    functions['fill_mask'] = tf.function(
        fill_mask, input_signature=encoder_signature + [_int_spec(MASKED_LM_POSITIONS)])
    variables += pretrainer.variables

  if classifier is not None:
    def classify(input_word_ids, input_mask, input_type_ids):
      logits = classifier_logits(classifier, {
          'input_word_ids': input_word_ids, 'input_mask': input_mask,
          'input_type_ids': input_type_ids})
      return {'logits': logits, 'probabilities': tf.nn.softmax(logits),
              'predicted_class': tf.argmax(logits, axis=-1, output_type=tf.int32)}
    functions['classify'] = tf.function(classify, input_signature=encoder_signature)
    variables += classifier.variables

  # Each variable once (the pretrainer's include the encoder's).
  unique = {id(v): v for v in variables}
  module.model_variables = list(unique.values())
  for name, function in functions.items():
    setattr(module, name, function)
  module.signature_functions = functions
  module.top_k = top_k if pretrainer is not None else None
  return module


def call_signature(function: Any, inputs: Mapping[str, Any], **kwargs: Any) -> Dict[str, Any]:
  """Calls a serving function (in-process or a loaded signature) on integer inputs.

  Args:
    function: takes int32 tensors by input name (and `kwargs`), returns a dict of tensors.
    inputs: input name -> integer array [batch, ...], converted to int32 tensors.
    **kwargs: passed as they are.

  Returns:
    The outputs as numpy arrays.
  """
  arguments = {k: tf.constant(v, tf.int32) for k, v in inputs.items()}
  return {k: v.numpy() for k, v in function(**arguments, **kwargs).items()}
