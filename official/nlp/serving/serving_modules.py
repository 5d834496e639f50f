"""Export modules of the fine-tuning and pretraining tasks (Model Garden's serving API).

An export module is a `tf.Module` holding a task's Keras model and the `tf.function`s that become a
SavedModel's signatures; `export_savedmodel_util.export` restores a checkpoint into it and saves it.
Each module has a `Params` config and `get_inference_signatures({function key: signature key})`.
Function keys: `serve` (int32 tensors [batch, seq] by input name) and `serve_examples` (a batch of
serialized `tf.train.Example`s with the records' features, `parse_sequence_length` long).

- `SentencePrediction`: `serve` -> `outputs` (logits [batch, classes]); `serve_probability` ->
  `outputs` (softmax). With `inputs_only` (the default) `serve` takes `input_word_ids` alone
  (mask = ids != 0, type ids 0).
- `MaskedLM`: `serve` (+ `masked_lm_positions` [batch, predictions]) -> `classification` (the
  logits of the head `cls_head_name`) and `mlm_logits`.
- `Tagging`: `serve` -> `logits` [batch, seq, tags] (and `encoder_outputs` [batch, seq, hidden]
  with `output_encoder_outputs`).

Only the model's variables are tracked, not the Keras objects, so a saved module needs TensorFlow
alone to load (as with `serving_signatures.build_serving_module`).

Example:
  >>> module = SentencePrediction(SentencePrediction.Params(inputs_only=False), model=model)
  >>> export_savedmodel_util.export(module, ['serve'], '/tmp/export', checkpoint_path=ckpt)
"""

import dataclasses
from typing import Any, Callable, Dict, Mapping, Optional, Union

import tensorflow as tf
import tf_keras

from official.modeling import hyperparams
from official.nlp.serving import serving_signatures

_ENCODER_INPUTS = serving_signatures.ENCODER_INPUTS


def _int_spec(name: str, rank: int = 2) -> tf.TensorSpec:
  return tf.TensorSpec([None] * rank, tf.int32, name=name)


def features_to_int32(features: Mapping[str, tf.Tensor]) -> Dict[str, tf.Tensor]:
  """The integer features cast to int32 (TFRecords store int64); other dtypes unchanged."""
  return {name: tf.cast(value, tf.int32) if value.dtype == tf.int64 else value
          for name, value in features.items()}


class ExportModule(tf.Module):
  """Base of the export modules: holds the model (its variables tracked) and the params.

  Args:
    params: the module's `Params`.
    model: the task's Keras model, or a function without arguments that builds it on first use
      (`export_savedmodel.create_export_module` passes `task.build_model`).
    inference_step: called as `inference_step(inputs)` for the model's outputs (default:
      `model(inputs, training=False)`).
  """

  @dataclasses.dataclass
  class Params(hyperparams.Config):
    parse_sequence_length: Optional[int] = None
    use_v2_feature_names: bool = True

  def __init__(self, params: Any, model: Union[tf_keras.Model, Callable[[], tf_keras.Model]],
               inference_step: Optional[Callable[..., Any]] = None):
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
      return self._inference_step(inputs)
    return self.model(inputs, training=False)

  def _parse_examples(self, serialized: tf.Tensor, extra: Mapping[str, int]) -> Dict[str, tf.Tensor]:
    """Parses serialized examples with the encoder features (+ `extra` name -> length)."""
    length = self.params.parse_sequence_length
    if not length:
      raise ValueError(f'{type(self).__name__}: serve_examples needs params.parse_sequence_length')
    v2 = self.params.use_v2_feature_names
    names = {'input_word_ids': 'input_word_ids' if v2 else 'input_ids',
             'input_mask': 'input_mask',
             'input_type_ids': 'input_type_ids' if v2 else 'segment_ids'}
    spec = {record: tf.io.FixedLenFeature([length], tf.int64) for record in names.values()}
    spec.update({name: tf.io.FixedLenFeature([size], tf.int64) for name, size in extra.items()})
    parsed = features_to_int32(tf.io.parse_example(serialized, spec))
    features = {model_name: parsed[record] for model_name, record in names.items()}
    features.update({name: parsed[name] for name in extra})
    return features

  def _signatures(self, function_keys: Mapping[str, str],
                  functions: Mapping[str, Callable[[], Any]]) -> Dict[str, Any]:
    """Concrete functions by signature key; `functions` maps function keys to builders."""
    self.model  # pylint: disable=pointless-statement (builds it, so its variables are tracked)
    signatures = {}
    for key, signature_key in function_keys.items():
      if key not in functions:
        raise ValueError(f'{type(self).__name__}: unknown function key {key!r}; known: '
                         f'{sorted(functions)}')
      signatures[signature_key] = functions[key]()
    return signatures


class SentencePrediction(ExportModule):
  """Serves a sentence-prediction classifier (see the module docstring)."""

  @dataclasses.dataclass
  class Params(hyperparams.Config):
    inputs_only: bool = True
    parse_sequence_length: Optional[int] = None
    use_v2_feature_names: bool = True

  def _serve_tokenized(self, input_word_ids, input_mask=None, input_type_ids=None):
    if input_mask is None:
      input_mask = tf.cast(tf.not_equal(input_word_ids, 0), tf.int32)
    if input_type_ids is None:
      input_type_ids = tf.zeros_like(input_word_ids)
    outputs = self.inference_step({'input_word_ids': input_word_ids, 'input_mask': input_mask,
                                   'input_type_ids': input_type_ids})
    if isinstance(outputs, Mapping):
      outputs = outputs['logits']
    return tf.cast(outputs, tf.float32)

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
    """`serve` on serialized examples."""
    return self.serve(**self._parse_examples(inputs, {}))

  def _tokenized_function(self, function):
    if self.params.inputs_only:
      return function.get_concrete_function(_int_spec('input_word_ids'))
    return function.get_concrete_function(*[_int_spec(name) for name in _ENCODER_INPUTS])

  def get_inference_signatures(self, function_keys: Mapping[str, str]) -> Dict[str, Any]:
    """Concrete functions for `{'serve' | 'serve_probability' | 'serve_examples': signature key}`."""
    return self._signatures(function_keys, {
        'serve': lambda: self._tokenized_function(self.serve),
        'serve_probability': lambda: self._tokenized_function(self.serve_probability),
        'serve_examples': lambda: self.serve_examples.get_concrete_function(
            tf.TensorSpec([None], tf.string, name='examples')),
    })


class MaskedLM(ExportModule):
  """Serves a `BertPretrainerV2` (see the module docstring)."""

  @dataclasses.dataclass
  class Params(hyperparams.Config):
    cls_head_name: str = 'next_sentence'
    use_v2_feature_names: bool = True
    parse_sequence_length: Optional[int] = None
    max_predictions_per_seq: Optional[int] = None

  @tf.function
  def serve(self, input_word_ids, input_mask, input_type_ids, masked_lm_positions
            ) -> Dict[str, tf.Tensor]:
    """`classification`: the head's logits; `mlm_logits` [batch, predictions, vocab]."""
    outputs = self.inference_step({'input_word_ids': input_word_ids, 'input_mask': input_mask,
                                   'input_type_ids': input_type_ids,
                                   'masked_lm_positions': masked_lm_positions})
    name = self.params.cls_head_name
    if name not in outputs:
      raise ValueError(f'MaskedLM: the model has no head {name!r} (params.cls_head_name); its '
                       f'outputs are {sorted(outputs)}')
    return {'classification': tf.cast(outputs[name], tf.float32),
            'mlm_logits': tf.cast(outputs['mlm_logits'], tf.float32)}

  @tf.function
  def serve_examples(self, inputs) -> Dict[str, tf.Tensor]:
    """`serve` on serialized examples (with `masked_lm_positions`)."""
    if not self.params.max_predictions_per_seq:
      raise ValueError('MaskedLM: serve_examples needs params.max_predictions_per_seq')
    return self.serve(**self._parse_examples(
        inputs, {'masked_lm_positions': self.params.max_predictions_per_seq}))

  def get_inference_signatures(self, function_keys: Mapping[str, str]) -> Dict[str, Any]:
    """Concrete functions for `{'serve' | 'serve_examples': signature key}`."""
    specs = [_int_spec(name) for name in _ENCODER_INPUTS + ('masked_lm_positions',)]
    return self._signatures(function_keys, {
        'serve': lambda: self.serve.get_concrete_function(*specs),
        'serve_examples': lambda: self.serve_examples.get_concrete_function(
            tf.TensorSpec([None], tf.string, name='examples')),
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
    return self.serve(**self._parse_examples(inputs, {}))

  def get_inference_signatures(self, function_keys: Mapping[str, str]) -> Dict[str, Any]:
    """Concrete functions for `{'serve' | 'serve_examples': signature key}`."""
    specs = [_int_spec(name) for name in _ENCODER_INPUTS]
    return self._signatures(function_keys, {
        'serve': lambda: self.serve.get_concrete_function(*specs),
        'serve_examples': lambda: self.serve_examples.get_concrete_function(
            tf.TensorSpec([None], tf.string, name='examples')),
    })
