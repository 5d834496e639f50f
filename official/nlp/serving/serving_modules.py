"""Export modules of the fine-tuning and pretraining tasks (Model Garden's serving API).

An export module is a `tf.Module` holding a task's Keras model and the `tf.function`s that become a
SavedModel's signatures; `export_savedmodel_util.export` restores a checkpoint into it and saves it.
Each module has a `Params` config and `get_inference_signatures({function key: signature key})`.
Function keys: `serve` (int32 tensors [batch, seq] by input name) and `serve_examples` (a batch of
serialized `tf.train.Example`s with the records' features, `parse_sequence_length` long; Google
BERT's feature names `input_ids`/`segment_ids` with `use_v2_feature_names=False`).

- `SentencePrediction`: `serve` -> `outputs` (logits [batch, classes]); `serve_probability` ->
  `outputs` (softmax). With `inputs_only` (the default) `serve` and `serve_examples` take
  `input_word_ids` alone (mask = ids != 0, type ids 0). Raw text, tokenized in the graph
  (`text_layers.TextProcessor`: `vocab_file`, `tokenization`, `lower_case`, packed to
  `parse_sequence_length`; needs tensorflow-text, the [text] extra): `serve_text_examples` takes
  serialized examples with one string feature per `text_fields`, `serve_text` the strings
  themselves, one string tensor [batch] per text field (named after it; one input `text` when
  `text_fields` is unset).
- `MaskedLM`: `serve` (+ `masked_lm_positions` [batch, predictions]) -> `classification` (the
  logits of the head `cls_head_name`) and `mlm_logits`; a pretrainer without classification heads
  (ModernBERT's recipe, `cls_heads: []`) or `cls_head_name: null` gives `mlm_logits` alone.
- `QuestionAnswering`: `serve` -> `start_logits`, `end_logits` [batch, seq].
- `Tagging`: `serve` -> `logits` [batch, seq, tags] (and `encoder_outputs` [batch, seq, hidden]
  with `output_encoder_outputs`).

Only the model's variables (and the tokenizer's vocabulary) are tracked, not the Keras model, so a
saved module needs TensorFlow alone to load, as with `serving_signatures.build_serving_module`; an
export with a text function uses tensorflow-text's ops: `import tensorflow_text` before
`tf.saved_model.load` (else 'Op type not registered'). Its vocabulary is an asset of the export.

Example:
  >>> module = SentencePrediction(SentencePrediction.Params(inputs_only=False), model=model)
  >>> export_savedmodel_util.export(module, ['serve'], '/tmp/export', checkpoint_path=ckpt)
  >>> params = SentencePrediction.Params(parse_sequence_length=128, vocab_file='vocab.txt')
  >>> module = SentencePrediction(params, model=model)
  >>> module.get_inference_signatures({'serve_text': 'serving_default'})['serving_default'](
  ...     text=tf.constant(['hello world']))['outputs']
"""

import dataclasses
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Union

import tensorflow as tf
import tf_keras

from official.modeling import hyperparams
from official.nlp.modeling.layers import text_layers
from official.nlp.serving import serving_signatures

_ENCODER_INPUTS = serving_signatures.ENCODER_INPUTS
_EXAMPLES_SPEC = tf.TensorSpec([None], tf.string, name='examples')


def _int_spec(name: str, rank: int = 2) -> tf.TensorSpec:
  return tf.TensorSpec([None] * rank, tf.int32, name=name)


def features_to_int32(features: Mapping[str, tf.Tensor]) -> Dict[str, tf.Tensor]:
  """The integer features cast to int32 (TFRecords store int64); other dtypes unchanged."""
  return {name: tf.cast(value, tf.int32) if value.dtype == tf.int64 else value
          for name, value in features.items()}


def record_feature_names(use_v2_feature_names: bool) -> Dict[str, str]:
  """Encoder input name -> feature name in the records (Google BERT's names unless v2).

  Example:
    >>> record_feature_names(False)['input_word_ids']
    'input_ids'
  """
  return {'input_word_ids': 'input_word_ids' if use_v2_feature_names else 'input_ids',
          'input_mask': 'input_mask',
          'input_type_ids': 'input_type_ids' if use_v2_feature_names else 'segment_ids'}


def _default_mask_and_types(input_word_ids, input_mask=None, input_type_ids=None
                            ) -> Dict[str, tf.Tensor]:
  """The encoder inputs; a missing mask is `ids != 0`, missing type ids are zeros."""
  if input_mask is None:
    input_mask = tf.cast(tf.not_equal(input_word_ids, 0), input_word_ids.dtype)
  if input_type_ids is None:
    input_type_ids = tf.zeros_like(input_word_ids)
  return {'input_word_ids': input_word_ids, 'input_mask': input_mask,
          'input_type_ids': input_type_ids}


class ExportModule(tf.Module):
  """Base of the export modules: holds the model (its variables tracked) and the params.

  Args:
    params: the module's `Params`.
    model: the task's Keras model, or a function without arguments that builds it on first use
      (`export_savedmodel.create_export_module` passes `task.build_model`).
    inference_step: called as `inference_step(inputs, model=model)` for the model's outputs
      (default: `model(inputs, training=False)`).
    preprocessor: an optional callable (or `tf.Module`, then tracked and saved) a subclass may
      apply to its inputs; `postprocessor` likewise to its outputs (Model Garden's arguments).
  """

  @dataclasses.dataclass
  class Params(hyperparams.Config):
    parse_sequence_length: Optional[int] = None
    use_v2_feature_names: bool = True

  def __init__(self, params: Any, model: Union[tf_keras.Model, Callable[[], tf_keras.Model]],
               inference_step: Optional[Callable[..., Any]] = None, *,
               preprocessor: Optional[Callable[..., Any]] = None,
               postprocessor: Optional[Callable[..., Any]] = None):
    super().__init__()
    self.params = params
    # Not tracked attributes: the SavedModel keeps the weights and graphs, not the Keras object.
    object.__setattr__(self, '_model', None)
    object.__setattr__(self, '_build_model', None)
    if isinstance(model, tf_keras.Model):
      self._set_model(model)
    else:
      object.__setattr__(self, '_build_model', model)
    object.__setattr__(self, '_inference_step', inference_step)
    self.preprocessor = preprocessor
    self.postprocessor = postprocessor
    names = record_feature_names(getattr(params, 'use_v2_feature_names', True))
    self.input_word_ids_field = names['input_word_ids']
    self.input_type_ids_field = names['input_type_ids']

  def _set_model(self, model: tf_keras.Model) -> None:
    object.__setattr__(self, '_model', model)
    self.model_variables = list({id(v): v for v in model.variables}.values())

  @property
  def model(self) -> tf_keras.Model:
    """The Keras model (built now when the module was given a builder)."""
    if self._model is None:
      self._set_model(self._build_model())
    return self._model

  def inference_step(self, inputs: Any) -> Any:
    """The model's outputs for `inputs`."""
    if self._inference_step is not None:
      return self._inference_step(inputs, model=self.model)
    return self.model(inputs, training=False)

  def _parse_examples(self, serialized: tf.Tensor, names: Sequence[str] = _ENCODER_INPUTS,
                      extra: Optional[Mapping[str, int]] = None) -> Dict[str, tf.Tensor]:
    """Parses serialized examples: the encoder inputs `names` (record names per
    `use_v2_feature_names`), plus `extra` name -> length; int32 tensors by input name."""
    length = self.params.parse_sequence_length
    if not length:
      raise ValueError(f'{type(self).__name__}: serve_examples needs params.parse_sequence_length')
    records = record_feature_names(self.params.use_v2_feature_names)
    spec = {records[name]: tf.io.FixedLenFeature([length], tf.int64) for name in names}
    spec.update({name: tf.io.FixedLenFeature([size], tf.int64)
                 for name, size in (extra or {}).items()})
    parsed = features_to_int32(tf.io.parse_example(serialized, spec))
    features = {name: parsed[records[name]] for name in names}
    features.update({name: parsed[name] for name in (extra or {})})
    return features

  def _signatures(self, function_keys: Mapping[str, str],
                  functions: Mapping[str, Callable[[], Any]]) -> Dict[str, Any]:
    """Concrete functions by signature key; `functions` maps function keys to builders."""
    unknown = [key for key in function_keys if key not in functions]
    if unknown:
      raise ValueError(f'{type(self).__name__}: unknown function key {unknown[0]!r}; known: '
                       f'{sorted(functions)}')
    self.model  # pylint: disable=pointless-statement (builds it, so its variables are tracked)
    return {signature_key: functions[key]() for key, signature_key in function_keys.items()}

  def get_inference_signatures(self, function_keys: Mapping[str, str]) -> Dict[str, Any]:
    """Concrete functions for `{function key: signature key}` (see the subclasses)."""
    raise NotImplementedError(f'{type(self).__name__} defines no signatures')


class SentencePrediction(ExportModule):
  """Serves a sentence-prediction classifier (see the module docstring).

  Raises (from `get_inference_signatures` or construction):
    ValueError: a text function without `vocab_file` or `parse_sequence_length`.
    ImportError: a text function without tensorflow-text.
  """

  @dataclasses.dataclass
  class Params(hyperparams.Config):
    inputs_only: bool = True
    parse_sequence_length: Optional[int] = None
    use_v2_feature_names: bool = True
    # Raw text, tokenized in the graph (serve_text, serve_text_examples).
    text_fields: Optional[List[str]] = None
    tokenization: str = 'WordPiece'  # or 'SentencePiece' (vocab_file is then the .model)
    vocab_file: str = ''
    lower_case: bool = True
    preprocessing_hub_module_url: str = ''  # TF Hub: not supported, must stay empty

  def __init__(self, params: Any, model: Union[tf_keras.Model, Callable[[], tf_keras.Model]],
               inference_step: Optional[Callable[..., Any]] = None, **kwargs):
    super().__init__(params, model, inference_step, **kwargs)
    if params.text_fields:
      self._text_processor()

  def _text_processor(self) -> text_layers.TextProcessor:
    """The tokenizer + packer of the text functions (built once, before any tracing)."""
    processor = getattr(self, 'text_processor', None)
    if processor is None:
      params = self.params
      if not params.vocab_file and not params.preprocessing_hub_module_url:
        raise ValueError('SentencePrediction: the text functions need params.vocab_file (a '
                         'vocab.txt, or a SentencePiece .model with tokenization=SentencePiece)')
      if not params.parse_sequence_length:
        raise ValueError('SentencePrediction: the text functions need '
                         'params.parse_sequence_length (the packed sequence length)')
      processor = text_layers.TextProcessor(
          seq_length=params.parse_sequence_length, vocab_file=params.vocab_file,
          tokenization=params.tokenization, lower_case=params.lower_case,
          preprocessing_hub_module_url=params.preprocessing_hub_module_url)
      self.text_processor = processor
    return processor

  def _text_inputs(self) -> List[str]:
    return list(self.params.text_fields or ['text'])

  def _serve_tokenized(self, input_word_ids, input_mask=None, input_type_ids=None):
    outputs = self.inference_step(
        _default_mask_and_types(input_word_ids, input_mask, input_type_ids))
    if isinstance(outputs, Mapping):
      outputs = outputs['logits']
    return tf.cast(outputs, tf.float32)

  def _serve_packed(self, packed: Mapping[str, tf.Tensor]) -> Dict[str, tf.Tensor]:
    if self.params.inputs_only:
      return self.serve(input_word_ids=packed['input_word_ids'])
    return self.serve(**packed)

  @tf.function
  def serve(self, input_word_ids, input_mask=None, input_type_ids=None) -> Dict[str, tf.Tensor]:
    """`outputs`: logits [batch, classes]."""
    return {'outputs': self._serve_tokenized(input_word_ids, input_mask, input_type_ids)}

  @tf.function
  def serve_probability(self, input_word_ids, input_mask=None, input_type_ids=None
                        ) -> Dict[str, tf.Tensor]:
    """`outputs`: class probabilities [batch, classes]."""
    return {'outputs': tf.nn.softmax(
        self._serve_tokenized(input_word_ids, input_mask, input_type_ids))}

  @tf.function
  def serve_examples(self, inputs) -> Dict[str, tf.Tensor]:
    """`serve` on serialized examples (`input_word_ids` alone with `inputs_only`)."""
    names = ('input_word_ids',) if self.params.inputs_only else _ENCODER_INPUTS
    return self.serve(**self._parse_examples(inputs, names))

  @tf.function
  def serve_text_examples(self, inputs) -> Dict[str, tf.Tensor]:
    """`serve` on serialized examples with one string feature per `text_fields`."""
    if not self.params.text_fields:
      raise ValueError('SentencePrediction: serve_text_examples needs params.text_fields')
    spec = {name: tf.io.FixedLenFeature([], tf.string) for name in self.params.text_fields}
    features = tf.io.parse_example(inputs, spec)
    segments = [features[name] for name in self.params.text_fields]
    return self._serve_packed(self._text_processor()(segments))

  @tf.function
  def serve_text(self, *texts) -> Dict[str, tf.Tensor]:
    """`serve` on raw strings: one string tensor [batch] per text field (one segment each)."""
    return self._serve_packed(self._text_processor()(list(texts)))

  def _tokenized_function(self, function):
    if self.params.inputs_only:
      return function.get_concrete_function(input_word_ids=_int_spec('input_word_ids'))
    return function.get_concrete_function(*[_int_spec(name) for name in _ENCODER_INPUTS])

  def _text_function(self, function, specs):
    self._text_processor()  # its lookup table is created eagerly, outside the traced graph
    return function.get_concrete_function(*specs)

  def get_inference_signatures(self, function_keys: Mapping[str, str]) -> Dict[str, Any]:
    """Concrete functions for `{'serve' | 'serve_probability' | 'serve_examples' |
    'serve_text_examples' | 'serve_text': signature key}`."""
    text_specs = [tf.TensorSpec([None], tf.string, name=name) for name in self._text_inputs()]
    return self._signatures(function_keys, {
        'serve': lambda: self._tokenized_function(self.serve),
        'serve_probability': lambda: self._tokenized_function(self.serve_probability),
        'serve_examples': lambda: self.serve_examples.get_concrete_function(_EXAMPLES_SPEC),
        'serve_text_examples': lambda: self._text_function(self.serve_text_examples,
                                                           [_EXAMPLES_SPEC]),
        'serve_text': lambda: self._text_function(self.serve_text, text_specs),
    })


class MaskedLM(ExportModule):
  """Serves a `BertPretrainerV2` (see the module docstring)."""

  @dataclasses.dataclass
  class Params(hyperparams.Config):
    """The head served as `classification` (None: none), and the examples' layout."""
    cls_head_name: Optional[str] = 'next_sentence'
    use_v2_feature_names: bool = True
    parse_sequence_length: Optional[int] = None
    max_predictions_per_seq: Optional[int] = None

  def _classification_head(self) -> Optional[str]:
    """`params.cls_head_name`, or None when the model has no classification heads at all."""
    heads = getattr(self.model, 'classification_heads', None)
    if heads is not None and not heads:  # e.g. ModernBERT's recipe: masked LM only
      return None
    return self.params.cls_head_name

  @tf.function
  def serve(self, input_word_ids, input_mask, input_type_ids, masked_lm_positions
            ) -> Dict[str, tf.Tensor]:
    """`mlm_logits` [batch, predictions, vocab] and `classification`: the head's logits
    (left out when the model has no classification heads or `cls_head_name` is None)."""
    outputs = self.inference_step({'input_word_ids': input_word_ids, 'input_mask': input_mask,
                                   'input_type_ids': input_type_ids,
                                   'masked_lm_positions': masked_lm_positions})
    served = {'mlm_logits': tf.cast(outputs['mlm_logits'], tf.float32)}
    name = self._classification_head()
    if name is None:
      return served
    if name not in outputs:
      raise ValueError(f'MaskedLM: the model has no head {name!r} (params.cls_head_name); its '
                       f'outputs are {sorted(outputs)}')
    return {'classification': tf.cast(outputs[name], tf.float32), **served}

  @tf.function
  def serve_examples(self, inputs) -> Dict[str, tf.Tensor]:
    """`serve` on serialized examples (with `masked_lm_positions`)."""
    if not self.params.max_predictions_per_seq:
      raise ValueError('MaskedLM: serve_examples needs params.max_predictions_per_seq')
    return self.serve(**self._parse_examples(
        inputs, extra={'masked_lm_positions': self.params.max_predictions_per_seq}))

  def get_inference_signatures(self, function_keys: Mapping[str, str]) -> Dict[str, Any]:
    """Concrete functions for `{'serve' | 'serve_examples': signature key}`."""
    specs = [_int_spec(name) for name in _ENCODER_INPUTS + ('masked_lm_positions',)]
    return self._signatures(function_keys, {
        'serve': lambda: self.serve.get_concrete_function(*specs),
        'serve_examples': lambda: self.serve_examples.get_concrete_function(_EXAMPLES_SPEC),
    })


class QuestionAnswering(ExportModule):
  """Serves a `BertSpanLabeler` (see the module docstring)."""

  @dataclasses.dataclass
  class Params(hyperparams.Config):
    parse_sequence_length: Optional[int] = None
    use_v2_feature_names: bool = True

  @tf.function
  def serve(self, input_word_ids, input_mask=None, input_type_ids=None) -> Dict[str, tf.Tensor]:
    """`start_logits`, `end_logits`: [batch, seq] (a missing mask is ids != 0)."""
    outputs = self.inference_step(
        _default_mask_and_types(input_word_ids, input_mask, input_type_ids))
    if isinstance(outputs, Mapping):
      start_logits, end_logits = outputs['start_logits'], outputs['end_logits']
    else:
      start_logits, end_logits = outputs
    return {'start_logits': tf.cast(start_logits, tf.float32),
            'end_logits': tf.cast(end_logits, tf.float32)}

  @tf.function
  def serve_examples(self, inputs) -> Dict[str, tf.Tensor]:
    """`serve` on serialized examples."""
    return self.serve(**self._parse_examples(inputs))

  def get_inference_signatures(self, function_keys: Mapping[str, str]) -> Dict[str, Any]:
    """Concrete functions for `{'serve' | 'serve_examples': signature key}`."""
    specs = [_int_spec(name) for name in _ENCODER_INPUTS]
    return self._signatures(function_keys, {
        'serve': lambda: self.serve.get_concrete_function(*specs),
        'serve_examples': lambda: self.serve_examples.get_concrete_function(_EXAMPLES_SPEC),
    })


class Tagging(ExportModule):
  """Serves a `BertTokenClassifier` (see the module docstring)."""

  @dataclasses.dataclass
  class Params(hyperparams.Config):
    parse_sequence_length: Optional[int] = None
    use_v2_feature_names: bool = True
    output_encoder_outputs: bool = False

  @tf.function
  def serve(self, input_word_ids, input_mask, input_type_ids) -> Dict[str, tf.Tensor]:
    """`logits` [batch, seq, tags] (and `encoder_outputs` [batch, seq, hidden])."""
    inputs = {'input_word_ids': input_word_ids, 'input_mask': input_mask,
              'input_type_ids': input_type_ids}
    outputs = self.inference_step(inputs)
    logits = outputs['logits'] if isinstance(outputs, Mapping) else outputs
    result = {'logits': tf.cast(logits, tf.float32)}
    if self.params.output_encoder_outputs:
      if isinstance(outputs, Mapping) and 'encoder_outputs' in outputs:
        result['encoder_outputs'] = tf.cast(outputs['encoder_outputs'], tf.float32)
      else:
        encoder = serving_signatures.find_encoder(self.model)
        if encoder is None:
          raise ValueError('Tagging: output_encoder_outputs needs a model with an encoder')
        result['encoder_outputs'] = serving_signatures.encoder_outputs(encoder, inputs)[
            'sequence_output']
    return result

  @tf.function
  def serve_examples(self, inputs) -> Dict[str, tf.Tensor]:
    """`serve` on serialized examples."""
    return self.serve(**self._parse_examples(inputs))

  def get_inference_signatures(self, function_keys: Mapping[str, str]) -> Dict[str, Any]:
    """Concrete functions for `{'serve' | 'serve_examples': signature key}` (the `serve` inputs
    are named as the records' features: `input_ids`/`segment_ids` without v2 names)."""
    specs = [_int_spec(self.input_word_ids_field), _int_spec('input_mask'),
             _int_spec(self.input_type_ids_field)]
    return self._signatures(function_keys, {
        'serve': lambda: self.serve.get_concrete_function(*specs),
        'serve_examples': lambda: self.serve_examples.get_concrete_function(_EXAMPLES_SPEC),
    })
