"""Hugging Face ModernBERT checkpoints (`config.json` + `model.safetensors`) to and from our models.

Reads `ModernBertModel` and `ModernBertForMaskedLM` directories (names with or without the
`model.` prefix; configs of transformers 4.x, with `global_attn_every_n_layers` and
`global_rope_theta` / `local_rope_theta`, and of 5.x, with `layer_types` and `rope_parameters`)
into a `ModernBertEncoder` or a `BertPretrainerV2` whose masked-LM head is Hugging Face's
(`bert_pretrainer.masked_lm_options`), and writes them back. The numpy API of `safetensors` does
the reading and writing: neither torch nor transformers is needed.

Weights (Hugging Face's PyTorch layout, Linear weights [out, in]):

  Hugging Face                         ours
  embeddings.tok_embeddings.weight     word_embeddings (the masked-LM decoder is tied to it)
  embeddings.norm.weight               embeddings/layer_norm gamma (no bias anywhere)
  layers.i.attn_norm.weight            transformer/layer_i self_attention_layer_norm (i > 0)
  layers.i.attn.Wqkv.weight            query, key, value kernels: rows [q; k; v], each
                                       [heads * head_dim, hidden]
  layers.i.attn.Wo.weight              attention_output kernel
  layers.i.mlp_norm.weight             output_layer_norm
  layers.i.mlp.Wi.weight               intermediate kernel [2 * intermediate, hidden]: the first
                                       half goes through the activation, the second is the gate
  layers.i.mlp.Wo.weight               output kernel
  final_norm.weight                    final_layer_norm
  head.dense.weight, head.norm.weight  cls/predictions transform/dense, transform/LayerNorm
  decoder.bias                         cls/predictions output_bias (decoder.weight: tied)

Semantics: `hidden_activation` / `classifier_activation` `gelu` is the exact erf GELU, our
`exact_gelu`; `gelu_new` / `gelu_pytorch_tanh` / `gelu_fast` the tanh approximation, our `gelu`.
Settings our models do not reproduce are refused in one line naming the field, the expected and
the found value: biases (`norm_bias`, `attention_bias`, `mlp_bias`, `classifier_bias`), an
attention pattern other than "layer i global when i % n == 0", RoPE scaling, an untied decoder,
different embedding and MLP dropout rates. `ModernBertForSequenceClassification` and the other
task heads (`head` + `classifier`) have no equivalent here: our `ClassificationHead` has no
LayerNorm; `load_encoder` reads their encoder and skips the head.

Example:
  >>> pretrainer = load_pretrainer('ModernBERT-base/')         # a BertPretrainerV2
  >>> encoder = load_encoder('ModernBERT-base/')               # a ModernBertEncoder
  >>> export(pretrainer, '/tmp/hf_out', vocab_file='vocab.txt')
  >>> export(pretrainer, '/tmp/hf_out', vocab_file='runs/dapt/tokenizer.json')   # BPE
"""

import json
import logging
import numbers
import os
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

import numpy as np
import tf_keras

from official.nlp.configs import bert
from official.nlp.configs import encoders
from official.nlp.modeling import layers
from official.nlp.modeling import models
from official.nlp.modeling import networks
from official.nlp.modeling.models import bert_pretrainer
from official.nlp.modeling.networks import bert_encoder_config
from official.nlp.modeling.networks import modernbert_encoder_config
from official.nlp.tools import bert_weight_map
from official.nlp.tools import hf_bert

MODEL_TYPE = 'modernbert'
CONFIG_NAME = hf_bert.CONFIG_NAME
WEIGHTS_NAME = hf_bert.WEIGHTS_NAME
VOCAB_NAME = hf_bert.VOCAB_NAME
ENCODER_PREFIX = 'model.'
# Hugging Face activation names we reproduce (transformers' ACT2FN keys).
HF_ACTIVATIONS = ('gelu', 'gelu_fast', 'gelu_new', 'gelu_pytorch_tanh', 'linear', 'relu', 'silu',
                  'swish', 'tanh')
FULL, SLIDING = 'full_attention', 'sliding_attention'
# Special tokens of a WordPiece vocab -> the config fields they fill on export (ModernBERT's
# bos / eos are its [CLS] / [SEP]).
_VOCAB_TOKENS = {'[PAD]': ('pad_token_id',), '[CLS]': ('cls_token_id', 'bos_token_id'),
                 '[SEP]': ('sep_token_id', 'eos_token_id'), '[MASK]': ('mask_token_id',)}
TOKEN_ID_FIELDS = ('pad_token_id', 'bos_token_id', 'eos_token_id', 'cls_token_id',
                   'sep_token_id', 'mask_token_id')
_QKV = ('query', 'key', 'value')
_HEAD_PREFIXES = ('head.', 'decoder.', 'classifier.')
_DECODER_WEIGHT, _DECODER_BIAS = 'decoder.weight', 'decoder.bias'
_TABLE = 'embeddings.tok_embeddings.weight'
_MLM, _DECODER_BIAS_PART = 'masked_lm', 'decoder_bias'

Model = Union[models.BertPretrainerV2, networks.ModernBertEncoder]


# ---- configs ----------------------------------------------------------------------------------
def read_config(model_dir: str) -> Tuple[Dict[str, Any], str]:
  """(the `config.json` dict, its path) of a ModernBERT directory.

  Raises:
    FileNotFoundError: no `config.json`.
    ValueError: a corrupt `config.json` or a `model_type` other than 'modernbert'.
  """
  path = os.path.join(model_dir, CONFIG_NAME)
  if not os.path.isfile(path):
    raise FileNotFoundError(f'{model_dir}: no {CONFIG_NAME} (a Hugging Face ModernBERT directory '
                            f'holds {CONFIG_NAME} and {WEIGHTS_NAME})')
  config = bert_weight_map.read_json_config(path)
  if config.get('model_type') != MODEL_TYPE:
    raise ValueError(f"{path}: model_type is {config.get('model_type')!r}; expected "
                     f'{MODEL_TYPE!r}')
  return config, path


def is_modernbert_dir(model_dir: str) -> bool:
  """Whether `model_dir/config.json` is readable JSON naming `model_type: modernbert`."""
  path = os.path.join(model_dir, CONFIG_NAME)
  if not os.path.isfile(path):
    return False
  try:
    return bert_weight_map.read_json_config(path).get('model_type') == MODEL_TYPE
  except ValueError:
    return False


def _missing(key: str, source: str):
  return ValueError(f'{source}: missing field {key!r}; expected a complete ModernBERT config '
                    '(incomplete file?)')


def _int(config: Mapping[str, Any], key: str, source: str, default: Optional[int] = None) -> int:
  """A positive integer field (JSON's `12` or `12.0`), else a ValueError naming it."""
  if key not in config and default is None:
    raise _missing(key, source)
  value = config.get(key, default)
  if (isinstance(value, bool) or not isinstance(value, numbers.Real)
      or float(value) != int(value) or int(value) < 1):
    raise ValueError(f'{source}: field {key!r} is {value!r}; expected a positive integer')
  return int(value)


def _float(config: Mapping[str, Any], key: str, source: str, default: float) -> float:
  value = config.get(key, default)
  if value is None:
    value = default
  if isinstance(value, bool) or not isinstance(value, numbers.Real):
    raise ValueError(f'{source}: field {key!r} is {value!r}; expected a number')
  return float(value)


def _expect(config: Mapping[str, Any], key: str, expected: Any, default: Any, source: str,
            why: str) -> None:
  """Raises ValueError unless `config[key]` (default `default`) is `expected`."""
  found = config.get(key, default)
  if found != expected or isinstance(found, bool) != isinstance(expected, bool):
    raise ValueError(f'{source}: {key} is {json.dumps(found)}; expected {json.dumps(expected)} '
                     f'({why})')


def _activation_from_hf(config: Mapping[str, Any], key: str, source: str) -> str:
  name = config.get(key, 'gelu')
  if name not in HF_ACTIVATIONS:
    raise ValueError(f'{source}: {key} is {name!r}; expected one of {list(HF_ACTIVATIONS)} (the '
                     'activations mlm-garden reproduces)')
  return bert_encoder_config.activation_from_external(name, 'hf', source)


def _activation_to_hf(name: str, what: str) -> str:
  name = 'linear' if name in ('identity', None) else name
  external = bert_encoder_config.activation_to_external(name, 'hf')
  if external not in HF_ACTIVATIONS:
    raise ValueError(f'{what} activation {name!r} has no Hugging Face name; expected one of '
                     "'exact_gelu', 'gelu', 'relu', 'silu', 'tanh', 'linear'")
  return external


def _global_every(config: Mapping[str, Any], num_layers: int, source: str) -> int:
  """`global_attn_every_n_layers` of a config, checking 5.x's `layer_types` against it."""
  every = _int(config, 'global_attn_every_n_layers', source, 3)
  layer_types = config.get('layer_types')
  if layer_types is None:
    return every
  pattern = lambda n: [SLIDING if i % n else FULL for i in range(num_layers)]
  if isinstance(layer_types, list):
    for n in [every] + list(range(1, num_layers + 1)):
      if layer_types == pattern(n):
        return n
  raise ValueError(f'{source}: layer_types is {json.dumps(layer_types)}; expected '
                   f'{num_layers} entries, {FULL!r} at layers i % n == 0 for one n and '
                   f'{SLIDING!r} elsewhere (e.g. {json.dumps(pattern(every))})')


def _rope_thetas(config: Mapping[str, Any], source: str) -> Tuple[float, float]:
  """(global, local) RoPE bases from 5.x's `rope_parameters` or 4.x's `*_rope_theta` fields."""
  if config.get('rope_scaling') is not None:
    raise ValueError(f'{source}: rope_scaling is {json.dumps(config["rope_scaling"])}; expected '
                     'null (mlm-garden implements the default RoPE only)')
  thetas = [_float(config, 'global_rope_theta', source, 160000.0),
            _float(config, 'local_rope_theta', source, 10000.0)]
  parameters = config.get('rope_parameters')
  if parameters is None:
    return thetas[0], thetas[1]
  if not isinstance(parameters, dict):
    raise ValueError(f'{source}: rope_parameters is {json.dumps(parameters)}; expected an object '
                     f'with {FULL!r} and {SLIDING!r} entries')
  for i, kind in enumerate((FULL, SLIDING)):
    entry = parameters.get(kind) or {}
    field = f'rope_parameters.{kind}'
    if not isinstance(entry, dict):
      raise ValueError(f'{source}: {field} is {json.dumps(entry)}; expected an object')
    rope_type = entry.get('rope_type', 'default')
    if rope_type != 'default':
      raise ValueError(f'{source}: {field}.rope_type is {rope_type!r}; expected \'default\' '
                       '(mlm-garden implements the default RoPE only)')
    others = sorted(set(entry) - {'rope_type', 'rope_theta'})
    if others:
      raise ValueError(f'{source}: {field} has {others}; expected only rope_type and '
                       'rope_theta (mlm-garden implements the default RoPE only)')
    thetas[i] = _float(entry, 'rope_theta', f'{source}: {field}', thetas[i])
  return thetas[0], thetas[1]


def encoder_config_from_hf(config: Mapping[str, Any],
                           source: str) -> modernbert_encoder_config.ModernBertEncoderConfig:
  """A ModernBERT `config.json` dict -> our `ModernBertEncoderConfig`.

  Args:
    config: the `config.json` dict.
    source: the file named in errors.

  Returns:
    The encoder config: sizes, `hidden_activation`, `norm_eps`, RoPE bases, `local_attention`,
    `global_attn_every_n_layers`, dropout rates, `max_position_embeddings`, `initializer_range`.

  Raises:
    ValueError: a missing field, or a setting `ModernBertEncoder` does not reproduce, naming the
      field, the expected and the found value.

  Example:
    >>> encoder_config_from_hf(read_config('ModernBERT-base')[0], 'config.json').num_layers
    22
  """
  why = 'ModernBertEncoder has no biases'
  _expect(config, 'norm_bias', False, False, source, why)
  _expect(config, 'attention_bias', False, False, source, why)
  _expect(config, 'mlp_bias', False, False, source, why)
  hidden_size = _int(config, 'hidden_size', source)
  heads = _int(config, 'num_attention_heads', source)
  if hidden_size % heads:
    raise ValueError(f'{source}: hidden_size {hidden_size} is not a multiple of '
                     f'num_attention_heads {heads}; expected hidden_size = heads * head width')
  head_dim = config.get('head_dim')
  if head_dim not in (None, hidden_size // heads):
    raise ValueError(f'{source}: head_dim is {head_dim!r}; expected hidden_size // '
                     f'num_attention_heads = {hidden_size // heads}')
  dropout = _float(config, 'embedding_dropout', source, 0.0)
  mlp_dropout = _float(config, 'mlp_dropout', source, 0.0)
  if mlp_dropout != dropout:
    raise ValueError(f'{source}: mlp_dropout is {mlp_dropout}; expected embedding_dropout '
                     f'{dropout} (ModernBertEncoder has one dropout_rate for both)')
  num_layers = _int(config, 'num_hidden_layers', source)
  global_theta, local_theta = _rope_thetas(config, source)
  values = dict(
      vocab_size=_int(config, 'vocab_size', source), hidden_size=hidden_size,
      num_layers=num_layers, num_attention_heads=heads,
      intermediate_size=_int(config, 'intermediate_size', source),
      hidden_activation=_activation_from_hf(config, 'hidden_activation', source),
      dropout_rate=dropout,
      attention_dropout_rate=_float(config, 'attention_dropout', source, 0.0),
      max_position_embeddings=_int(config, 'max_position_embeddings', source, 8192),
      norm_eps=_float(config, 'norm_eps', source, 1e-5),
      global_rope_theta=global_theta, local_rope_theta=local_theta,
      local_attention=_int(config, 'local_attention', source, 128),
      global_attn_every_n_layers=_global_every(config, num_layers, source),
      initializer_range=_float(config, 'initializer_range', source, 0.02))
  try:
    encoder_config = modernbert_encoder_config.ModernBertEncoderConfig(**values)
    encoder_config.validate()
  except ValueError as e:
    raise ValueError(f'{source}: {e}') from None
  return encoder_config


def pretrainer_config_from_hf(config: Mapping[str, Any], source: str) -> bert.PretrainerConfig:
  """A `ModernBertForMaskedLM` `config.json` dict -> the `PretrainerConfig` that builds it.

  `MaskedLMTask.build_model` (and `bert_weight_map.build_pretrainer`) builds from it a
  `BertPretrainerV2` with Hugging Face's masked-LM head (`classifier_activation` ->
  `mlm_activation`; bias-free dense and LayerNorm at `norm_eps`).

  Raises:
    ValueError: as `encoder_config_from_hf`; `classifier_bias: true` or an untied decoder.

  Example:
    >>> pretrainer_config_from_hf(config, 'config.json').mlm_activation
    'exact_gelu'
  """
  encoder_config = encoder_config_from_hf(config, source)
  _expect(config, 'classifier_bias', False, False, source,
          "the masked-LM head of a ModernBertEncoder's pretrainer has no dense bias")
  _expect(config, 'tie_word_embeddings', True, True, source,
          'our masked-LM decoder is the word-embedding table')
  return bert.PretrainerConfig(
      encoder=encoders.EncoderConfig(type='modernbert', modernbert=encoder_config), cls_heads=[],
      mlm_activation=_activation_from_hf(config, 'classifier_activation', source),
      mlm_initializer_range=encoder_config.initializer_range)


def encoder_config_of(encoder: networks.ModernBertEncoder
                      ) -> modernbert_encoder_config.ModernBertEncoderConfig:
  """The `ModernBertEncoderConfig` that builds an encoder like `encoder`
  (`modernbert_encoder_config.encoder_config_of`, the family's `config_of`)."""
  return modernbert_encoder_config.encoder_config_of(encoder)


def pretrainer_config_of(pretrainer: models.BertPretrainerV2) -> bert.PretrainerConfig:
  """The `PretrainerConfig` that builds (`MaskedLMTask.build_model`) a pretrainer like this one
  on a `ModernBertEncoder` (classification heads included: our checkpoints can hold them)."""
  return bert_weight_map.pretrainer_config_of(pretrainer, encoders.EncoderConfig(
      type='modernbert', modernbert=encoder_config_of(pretrainer.encoder_network)))


def _token_ids(vocab_file: Optional[str], token_ids: Optional[Mapping[str, Optional[int]]],
               vocab_size: int) -> Dict[str, Optional[int]]:
  """The special-token fields of an exported config: `token_ids`, else the vocab's (a
  tokenizer.json's roles), else null."""
  result: Dict[str, Optional[int]] = {field: None for field in TOKEN_ID_FIELDS}
  if hf_bert.is_tokenizer_json(vocab_file):
    result.update(hf_bert.tokenizer_token_ids(vocab_file, TOKEN_ID_FIELDS))
  elif vocab_file:
    with open(vocab_file, encoding='utf-8') as f:
      for i, line in enumerate(f):
        for field in _VOCAB_TOKENS.get(line.strip(), ()):
          result[field] = i
  for field, value in (token_ids or {}).items():
    if field not in result:
      raise ValueError(f'token_ids: unknown field {field!r}; expected some of '
                       f'{list(TOKEN_ID_FIELDS)}')
    result[field] = value
  for field, value in result.items():
    if value is not None and (isinstance(value, bool) or not isinstance(value, numbers.Integral)
                              or not 0 <= value < vocab_size):
      raise ValueError(f'{field} is {value!r}; expected null or an id in [0, {vocab_size})')
  return result


def hf_config(model: Model, vocab_file: Optional[str] = None,
              token_ids: Optional[Mapping[str, Optional[int]]] = None) -> Dict[str, Any]:
  """The `config.json` dict of an encoder (`ModernBertModel`) or pretrainer (`...ForMaskedLM`).

  Written in both transformers layouts: 4.x's `global_attn_every_n_layers` /
  `global_rope_theta` / `local_rope_theta` and 5.x's `layer_types` / `rope_parameters`.

  Args:
    model: a `ModernBertEncoder` or a `BertPretrainerV2` on one.
    vocab_file: a WordPiece vocab whose [PAD], [CLS], [SEP], [MASK] give the token ids, or a
      `tokenizer.json` whose tokens of those roles give them.
    token_ids: `pad_token_id`, `cls_token_id`, ... overriding the vocab's (null when unknown).

  Raises:
    ValueError: an activation without a Hugging Face name, a token id outside the vocabulary.
  """
  encoder, pretrainer = split_model(model)
  config = encoder_config_of(encoder)
  every = config.global_attn_every_n_layers
  mlm_activation = 'exact_gelu' if pretrainer is None else (
      bert_weight_map.mlm_activation_of(pretrainer))
  result = dict(
      architectures=['ModernBertModel' if pretrainer is None else 'ModernBertForMaskedLM'],
      model_type=MODEL_TYPE, vocab_size=config.vocab_size, hidden_size=config.hidden_size,
      intermediate_size=config.intermediate_size, num_hidden_layers=config.num_layers,
      num_attention_heads=config.num_attention_heads,
      hidden_activation=_activation_to_hf(config.hidden_activation, 'the encoder'),
      max_position_embeddings=config.max_position_embeddings,
      initializer_range=config.initializer_range, norm_eps=config.norm_eps, norm_bias=False,
      attention_bias=False, mlp_bias=False, attention_dropout=config.attention_dropout_rate,
      embedding_dropout=config.dropout_rate, mlp_dropout=config.dropout_rate,
      local_attention=config.local_attention, global_attn_every_n_layers=every,
      global_rope_theta=config.global_rope_theta, local_rope_theta=config.local_rope_theta,
      layer_types=[SLIDING if i % every else FULL for i in range(config.num_layers)],
      rope_parameters={FULL: {'rope_type': 'default', 'rope_theta': config.global_rope_theta},
                       SLIDING: {'rope_type': 'default', 'rope_theta': config.local_rope_theta}},
      decoder_bias=True, classifier_bias=False, classifier_pooling='cls',
      classifier_activation=_activation_to_hf(mlm_activation, 'the masked-LM'),
      tie_word_embeddings=True)
  result.update(_token_ids(vocab_file, token_ids, config.vocab_size))
  return result


# ---- the weight table -------------------------------------------------------------------------
def split_model(model: Any) -> Tuple[networks.ModernBertEncoder,
                                     Optional[models.BertPretrainerV2]]:
  """(encoder, pretrainer or None) of a `ModernBertEncoder` or a `BertPretrainerV2` on one.

  Raises:
    TypeError: another model.
  """
  if isinstance(model, models.BertPretrainerV2) and isinstance(
      model.encoder_network, networks.ModernBertEncoder):
    return model.encoder_network, model
  if isinstance(model, networks.ModernBertEncoder):
    return model, None
  inner = getattr(model, 'encoder_network', None)
  found = type(model).__name__ + (f' on a {type(inner).__name__}' if inner is not None else '')
  raise TypeError(f'expected a ModernBertEncoder or a BertPretrainerV2 on one, found {found}')


def is_modernbert(model: Any) -> bool:
  """Whether `model` is a `ModernBertEncoder` or a `BertPretrainerV2` on one."""
  try:
    split_model(model)
  except TypeError:
    return False
  return True


def _entry(variable, name: str, kind: str = 'plain', part: str = 'encoder'):
  return bert_weight_map.WeightEntry(variable, name, '', kind, part)


def encoder_entries(encoder: networks.ModernBertEncoder) -> List[bert_weight_map.WeightEntry]:
  """The table of a `ModernBertEncoder` (Hugging Face names without `model.`).

  The fused `layers.i.attn.Wqkv.weight` appears as three entries,
  `layers.i.attn.Wqkv.weight[query]` / `[key]` / `[value]` (`split_fused` / `fuse`).

  Raises:
    ValueError: an encoder variable the table does not list (a structure Hugging Face lacks).
  """
  # pylint: disable=protected-access
  entries = [_entry(encoder.get_embedding_table(), _TABLE),
             _entry(encoder.get_layer('embeddings/layer_norm').gamma, 'embeddings.norm.weight')]
  for i, block in enumerate(encoder.transformer_layers):
    name = f'layers.{i}'
    attention = block._attention_layer
    if i:  # layer 0's attention norm is an identity, as in Hugging Face
      entries.append(_entry(block._attention_layer_norm.gamma, f'{name}.attn_norm.weight'))
    entries += [_entry(getattr(attention, f'_{part}_dense').kernel,
                       f'{name}.attn.Wqkv.weight[{part}]', 'qkv_kernel') for part in _QKV]
    entries += [
        _entry(attention._output_dense.kernel, f'{name}.attn.Wo.weight', 'attn_out'),
        _entry(block._output_layer_norm.gamma, f'{name}.mlp_norm.weight'),
        _entry(block._intermediate_dense.kernel, f'{name}.mlp.Wi.weight', 'kernel'),
        _entry(block._output_dense.kernel, f'{name}.mlp.Wo.weight', 'kernel')]
  entries.append(_entry(encoder.get_layer('final_layer_norm').gamma, 'final_norm.weight'))
  _check_covered(encoder, entries, 'ModernBertEncoder')
  return entries


def check_pretrainer(pretrainer: models.BertPretrainerV2) -> None:
  """Raises ValueError when the pretrainer's heads are not `ModernBertForMaskedLM`'s."""
  encoder = pretrainer.encoder_network
  if pretrainer.classification_heads:
    raise ValueError(f'classification heads {[h.name for h in pretrainer.classification_heads]} '
                     'have no ModernBertForMaskedLM names; expected none')
  mlm = pretrainer.masked_lm
  if not isinstance(mlm, layers.MaskedLM):
    raise ValueError(f'masked-LM layer {type(mlm).__name__} has no ModernBertForMaskedLM names; '
                     'expected a MaskedLM')
  found = dict(use_bias=mlm.use_bias, norm_use_bias=mlm.norm_use_bias,
               norm_epsilon=mlm.norm_epsilon)
  expected = bert_pretrainer.masked_lm_options(encoder)
  if found != expected:
    raise ValueError(f'masked-LM head options {found} differ from Hugging Face\'s '
                     f'ModernBertPredictionHead; expected {expected}')
  if mlm.embedding_table is not encoder.get_embedding_table():
    raise ValueError('the masked-LM table is not the encoder\'s word embeddings; expected the '
                     'decoder tied to them (tie_word_embeddings)')


def masked_lm_entries(mlm: layers.MaskedLM) -> List[bert_weight_map.WeightEntry]:
  """The masked-LM head: `head.dense`, `head.norm` and `decoder.bias` (the table is tied)."""
  return [_entry(mlm.dense.kernel, 'head.dense.weight', 'kernel', _MLM),
          _entry(mlm.layer_norm.gamma, 'head.norm.weight', 'plain', _MLM),
          _entry(mlm.bias, _DECODER_BIAS, 'plain', _DECODER_BIAS_PART)]


def pretrainer_entries(pretrainer: models.BertPretrainerV2) -> List[bert_weight_map.WeightEntry]:
  """Encoder (names with `model.`) + masked-LM entries of a ModernBERT `BertPretrainerV2`."""
  check_pretrainer(pretrainer)
  entries = [_entry(e.variable, ENCODER_PREFIX + e.hf_name, e.kind, e.part)
             for e in encoder_entries(pretrainer.encoder_network)]
  entries += masked_lm_entries(pretrainer.masked_lm)
  _check_covered(pretrainer, entries, 'BertPretrainerV2')
  return entries


def _check_covered(model: tf_keras.Model, entries, what: str) -> None:
  listed = {id(entry.variable) for entry in entries}
  others = [v.name for v in model.trainable_variables if id(v) not in listed]
  if others:
    raise ValueError(f'{what}: variables {others} have no Hugging Face ModernBERT names; '
                     'expected only the variables of Hugging Face\'s layout')


def split_fused(tensors: Mapping[str, np.ndarray], hidden_size: int,
                source: str) -> Dict[str, np.ndarray]:
  """Replaces each `...attn.Wqkv.weight` [3 * hidden, hidden] by its `[query]`/`[key]`/`[value]`
  row blocks [hidden, hidden]; other tensors pass through.

  Raises:
    ValueError: a fused matrix of another shape, naming it, the expected and the found shape.
  """
  result = {}
  for name, value in tensors.items():
    if not name.endswith('attn.Wqkv.weight'):
      result[name] = value
      continue
    expected = (3 * hidden_size, hidden_size)
    if tuple(value.shape) != expected:
      raise ValueError(f'{source}: variable {name} has shape {list(value.shape)}; the model built '
                       f'from its config expects {list(expected)}')
    for part, block in zip(_QKV, np.split(value, 3, axis=0)):
      result[f'{name}[{part}]'] = block
  return result


def fuse(tensors: Mapping[str, np.ndarray]) -> Dict[str, np.ndarray]:
  """The inverse of `split_fused`: `[query]`/`[key]`/`[value]` blocks -> one `Wqkv` matrix."""
  result = {}
  for name, value in tensors.items():
    if name.endswith('attn.Wqkv.weight[query]'):
      fused = name[:-len('[query]')]
      result[fused] = np.concatenate([tensors[f'{fused}[{part}]'] for part in _QKV], axis=0)
    elif not name.endswith(('attn.Wqkv.weight[key]', 'attn.Wqkv.weight[value]')):
      result[name] = value
  return result


# ---- reading ------------------------------------------------------------------------------------
def read_tensors(model_dir: str) -> Tuple[Dict[str, np.ndarray], str]:
  """(name without `model.` -> array of every tensor, the weights path).

  Raises:
    FileNotFoundError, ValueError: as `hf_bert.read_tensors`; two tensors with the same name once
      `model.` is dropped.
  """
  loaded, source = hf_bert.read_tensors(model_dir)
  tensors = {}
  for name, value in loaded.items():
    short = name[len(ENCODER_PREFIX):] if name.startswith(ENCODER_PREFIX) else name
    if short in tensors:
      raise ValueError(f'{source}: {name} duplicates another variable named {short}')
    tensors[short] = value
  return tensors, source


def has_masked_lm(tensors: Mapping[str, Any]) -> bool:
  """Whether a checkpoint holds `ModernBertForMaskedLM`'s head (`decoder.*`, or `head.*` without
  a `classifier.*`)."""
  names = set(tensors)
  if any(name.startswith('decoder.') for name in names):
    return True
  return ('head.dense.weight' in names
          and not any(name.startswith('classifier.') for name in names))


def _check_decoder_weight(tensors: Mapping[str, np.ndarray], source: str) -> set:
  if _DECODER_WEIGHT not in tensors:
    return set()
  if _TABLE not in tensors or not np.array_equal(tensors[_DECODER_WEIGHT], tensors[_TABLE]):
    raise ValueError(f'{source}: {_DECODER_WEIGHT} differs from model.{_TABLE}; expected the '
                     'decoder tied to the word embeddings')
  return {_DECODER_WEIGHT}


def load_encoder(model_dir: str, allow_unused: bool = False) -> networks.ModernBertEncoder:
  """A `ModernBertEncoder` with the weights of a Hugging Face ModernBERT directory.

  Args:
    model_dir: holds `config.json` and `model.safetensors` (or a sharded safetensors index) of a
      `ModernBertModel`, `ModernBertForMaskedLM` or another ModernBERT task model.
    allow_unused: warn about unknown variables instead of raising. Head variables (`head.*`,
      `decoder.*`, `classifier.*`) are always skipped, with a warning listing them.

  Raises:
    FileNotFoundError: no config or no safetensors weights.
    ValueError: a config the encoder does not reproduce; a missing, unknown or mismatched variable
      (naming it and both shapes).

  Example:
    >>> encoder = load_encoder('ModernBERT-base/')
    >>> encoder({'input_word_ids': ids, 'input_mask': mask})['sequence_output']
  """
  config, config_path = read_config(model_dir)
  encoder_config = encoder_config_from_hf(config, config_path)
  tensors, source = read_tensors(model_dir)
  encoder = bert_weight_map.build_encoder(
      encoders.EncoderConfig(type='modernbert', modernbert=encoder_config))
  tensors = split_fused(tensors, encoder_config.hidden_size, source)
  used = bert_weight_map.restore(encoder_entries(encoder), tensors, 'hf', source)
  heads = sorted(name for name in tensors if name.startswith(_HEAD_PREFIXES))
  if heads:
    logging.warning('%s: load_encoder skips the head variables %s', source, ', '.join(heads))
  bert_weight_map.check_unused(tensors, used | set(heads), source, allow_unused)
  return encoder


def load_pretrainer(model_dir: str, allow_unused: bool = False) -> models.BertPretrainerV2:
  """A `BertPretrainerV2` (ModernBERT encoder + Hugging Face's masked-LM head) from `model_dir`.

  The result is what `MaskedLMTask.build_model` builds for
  `pretrainer_config_from_hf(read_config(model_dir)[0], ...)`, holding the checkpoint's weights;
  its `mlm_logits` are `ModernBertForMaskedLM`'s logits at `masked_lm_positions`.

  Raises:
    as `load_encoder`; ValueError when the checkpoint has no masked-LM head (a `ModernBertModel`)
    or another head (`ModernBertForSequenceClassification`: no equivalent of its LayerNorm in our
    `ClassificationHead`), or a head setting we do not reproduce (`classifier_bias`, an untied
    decoder).

  Example:
    >>> pretrainer = load_pretrainer('ModernBERT-base/')
    >>> pretrainer(dict(inputs, masked_lm_positions=positions))['mlm_logits']
  """
  config, config_path = read_config(model_dir)
  tensors, source = read_tensors(model_dir)
  if not has_masked_lm(tensors):
    if any(name.startswith('classifier.') for name in tensors):
      raise ValueError(
          f'{source}: a task head (head.* + classifier.*, architectures '
          f'{config.get("architectures")}, classifier_pooling '
          f'{config.get("classifier_pooling", "cls")!r}) that mlm-garden does not map: our '
          'ClassificationHead has no LayerNorm; load_encoder reads the encoder')
    raise ValueError(f'{source}: no masked-LM head (decoder.bias and head.* are missing); load it '
                     'with load_encoder')
  pretrainer_config = pretrainer_config_from_hf(config, config_path)
  ignored = _check_decoder_weight(tensors, source)
  decoder_bias = config.get('decoder_bias', True)
  if not isinstance(decoder_bias, bool):
    raise ValueError(f'{config_path}: decoder_bias is {decoder_bias!r}; expected true or false')
  pretrainer = bert_weight_map.build_pretrainer(pretrainer_config)
  tensors = split_fused(tensors, pretrainer_config.encoder.modernbert.hidden_size, source)
  tensors = {name if name.startswith(_HEAD_PREFIXES) else ENCODER_PREFIX + name: value
             for name, value in tensors.items()}
  used = bert_weight_map.restore(pretrainer_entries(pretrainer), tensors, 'hf', source,
                                 optional_parts=() if decoder_bias else [_DECODER_BIAS_PART])
  if not decoder_bias:  # no bias in Hugging Face's decoder: ours stays at zero until trained
    pretrainer.masked_lm.bias.assign(np.zeros(pretrainer.masked_lm.bias.shape, np.float32))
  bert_weight_map.check_unused(tensors, used | ignored, source, allow_unused)
  return pretrainer


def load(model_dir: str, allow_unused: bool = False) -> Model:
  """`load_pretrainer` when the checkpoint has a masked-LM head, else `load_encoder`."""
  read_config(model_dir)
  tensors, _ = read_tensors(model_dir)
  if has_masked_lm(tensors):
    return load_pretrainer(model_dir, allow_unused)
  return load_encoder(model_dir, allow_unused)


# ---- writing ------------------------------------------------------------------------------------
def export_entries(model: Model) -> List[bert_weight_map.WeightEntry]:
  """The table of a `ModernBertEncoder` or a pretrainer on one (the family's weight map)."""
  encoder, pretrainer = split_model(model)
  return encoder_entries(encoder) if pretrainer is None else pretrainer_entries(pretrainer)


def export_tensors(model: Model) -> Dict[str, np.ndarray]:
  """Hugging Face name -> float32 array of a `ModernBertModel` / `ModernBertForMaskedLM`."""
  return fuse(bert_weight_map.export_tensors(export_entries(model), 'hf'))


def export(model: Model, out_dir: str, vocab_file: Optional[str] = None,
           token_ids: Optional[Mapping[str, Optional[int]]] = None) -> str:
  """Writes `config.json`, `model.safetensors` (and `vocab.txt`) that transformers loads.

  A `ModernBertEncoder` becomes a `ModernBertModel` (names without prefix); a `BertPretrainerV2`
  on one a `ModernBertForMaskedLM` (`model.` + encoder names, `head.*`, `decoder.bias`; the
  decoder weight is tied to the word embeddings and not written).

  Args:
    model: a `ModernBertEncoder` or a `BertPretrainerV2` on one (no classification heads).
    out_dir: created if needed.
    vocab_file: copied to `out_dir/vocab.txt` when given; its [PAD], [CLS], [SEP], [MASK] ids
      fill `pad_token_id`, `cls_token_id` / `bos_token_id`, `sep_token_id` / `eos_token_id`,
      `mask_token_id`. A `tokenizer.json` (BPE, ...) is written as `tokenizer.json` with the
      `tokenizer_config.json` AutoTokenizer reads (inputs `input_ids` and `attention_mask`), and
      its tokens of those roles fill the fields.
    token_ids: those fields given directly (they win over the vocab's; unknown ones are null).

  Returns:
    `out_dir`.

  Raises:
    TypeError: not a ModernBERT model.
    ValueError: a structure `ModernBertForMaskedLM` cannot hold (classification heads, another
      masked-LM head), an activation without a Hugging Face name.

  Example:
    >>> export(load_pretrainer('ModernBERT-base/'), '/tmp/out')
    >>> transformers.ModernBertForMaskedLM.from_pretrained('/tmp/out')
  """
  config = hf_config(model, vocab_file, token_ids)
  tokenizer_options = {'model_input_names': ['input_ids', 'attention_mask'],
                       'model_max_length': config['max_position_embeddings']}
  return hf_bert.write_directory(out_dir, config, export_tensors(model), vocab_file,
                                 tokenizer_options)
