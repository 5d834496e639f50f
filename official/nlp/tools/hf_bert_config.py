"""Hugging Face BERT `config.json` <-> our `BertEncoderConfig` / model (beside `hf_bert`).

The config half of `hf_bert`, as `hf_modernbert`'s "configs" section is ModernBERT's: reading a
`config.json`, translating it to a `BertEncoderConfig` and back, and the `config.json` of one of
our models. The field names and activations shared with Google's `bert_config.json` live in
`bert_encoder_config` (`encoder_config_from_external`, `external_config`), which this module
calls with the 'hf' format; the Hugging Face-only keys (`model_type`, `architectures`,
`tie_word_embeddings`) are decided here.

Example:
  >>> config, path = read_config('bert-base-uncased/')
  >>> encoder_config_from_hf(config, path).num_layers
  12
  >>> hf_config(pretrainer)['architectures']        # with a next_sentence head
  ['BertForPreTraining']
"""

import os
from typing import Any, Dict, Mapping, Tuple

import tf_keras

from official.nlp.modeling.networks import bert_encoder_config
from official.nlp.tools import bert_weight_map

MODEL_TYPE = 'bert'
CONFIG_NAME = 'config.json'
WEIGHTS_NAME = 'model.safetensors'


def read_config(model_dir: str) -> Tuple[Dict[str, Any], str]:
  """(the `config.json` dict, its path); checks `model_type` when present.

  Raises:
    FileNotFoundError: no `config.json`.
    ValueError: a corrupt `config.json` (not a JSON object) or another `model_type`, naming it.
  """
  path = os.path.join(model_dir, CONFIG_NAME)
  if not os.path.isfile(path):
    raise FileNotFoundError(f'{model_dir}: no {CONFIG_NAME} (a Hugging Face BERT directory holds '
                            f'{CONFIG_NAME} and {WEIGHTS_NAME})')
  config = bert_weight_map.read_json_config(path)
  model_type = config.get('model_type', MODEL_TYPE)
  if model_type != MODEL_TYPE:
    raise ValueError(f'{path}: model_type is {model_type!r}; expected {MODEL_TYPE!r}')
  return config, path


def encoder_config_from_hf(config: Mapping[str, Any],
                           source: str) -> bert_encoder_config.BertEncoderConfig:
  """A `config.json` dict -> the `BertEncoderConfig` of its encoder.

  Args:
    config: the dict (`num_hidden_layers`, `hidden_act`, ...).
    source: its file, for messages.

  Raises:
    ValueError: a missing field, or a setting our encoder cannot represent (naming `source`).

  Example:
    >>> encoder_config_from_hf(read_config('bert-base-uncased/')[0], 'config.json').hidden_size
    768
  """
  return bert_encoder_config.encoder_config_from_external(config, 'hf', source)


def hf_config(model: tf_keras.Model) -> Dict[str, Any]:
  """The `config.json` dict of an encoder (`BertModel`) or pretrainer (`BertForMaskedLM`, or
  `BertForPreTraining` with a `next_sentence` head); the decoder is tied to the word embeddings.

  Args:
    model: a `BertEncoder` (or V2), or a `BertPretrainerV2` on one.

  Raises:
    TypeError: another model.

  Example:
    >>> hf_config(encoder)['num_hidden_layers'] == encoder.get_config()['num_layers']
    True
  """
  encoder, pretrainer = bert_weight_map.split_model(model)
  if pretrainer is None:
    architecture = 'BertModel'
  elif any(head.name == bert_weight_map.NEXT_SENTENCE
           for head in pretrainer.classification_heads):
    architecture = 'BertForPreTraining'
  else:
    architecture = 'BertForMaskedLM'
  config = dict(architectures=[architecture], model_type=MODEL_TYPE,
                **bert_encoder_config.external_config(
                    bert_encoder_config.encoder_config_of(encoder), 'hf'))
  config['tie_word_embeddings'] = True
  return config
