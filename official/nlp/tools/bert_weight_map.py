"""One table between our BERT variables and the names of Hugging Face and Google BERT checkpoints.

`hf_bert` and `google_bert` both read and write through this module: each `WeightEntry` pairs one of
our variables with its Hugging Face name (PyTorch layout) and its Google TF1 name (TF layout), plus
the `kind` of reshape between the layouts:

  kind          ours                   Google (TF1)           Hugging Face
  plain         any                    same                   same
  kernel        [in, out]              [in, out]              [out, in]
  qkv_kernel    [hidden, heads, dim]   [hidden, heads*dim]    [heads*dim, hidden]
  qkv_bias      [heads, dim]           [heads*dim]            [heads*dim]
  attn_out      [heads, dim, hidden]   [heads*dim, hidden]    [hidden, heads*dim]
  nsp_kernel    [hidden, 2]            [2, hidden]            [2, hidden]

Hugging Face names of the encoder are relative (`embeddings.word_embeddings.weight`); a
`BertForMaskedLM` / `BertForPreTraining` file prefixes them with `bert.`. Head names (`cls.`) are
absolute. Configs go through `BertEncoderConfig` both ways
(`bert_encoder_config.encoder_config_from_external`, `bert_encoder_config.external_config`).

Example:
  >>> entries = encoder_entries(encoder)       # a built BertEncoder
  >>> tensors = export_tensors(entries, 'hf')  # {'embeddings.word_embeddings.weight': ...}
  >>> restore(entries, tensors, 'hf', source='model.safetensors')
"""

import dataclasses
import json
import logging
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Set

import numpy as np
import tensorflow as tf
import tf_keras

from official.nlp.configs import bert
from official.nlp.configs import encoders
from official.nlp.data import pretrain_dataloader
from official.nlp.modeling import layers
from official.nlp.modeling import models
from official.nlp.modeling import networks
from official.nlp.modeling.networks import bert_encoder_config
from official.nlp.tasks import masked_lm

KINDS = ('plain', 'kernel', 'qkv_kernel', 'qkv_bias', 'attn_out', 'nsp_kernel')
NEXT_SENTENCE = masked_lm.NEXT_SENTENCE  # the one head with BERT checkpoint names

@dataclasses.dataclass(frozen=True)
class WeightEntry:
  """One of our variables and its external names.

  Attributes:
    variable: our variable.
    hf_name: the Hugging Face name (relative to `bert.` unless it starts with `cls.`).
    google_name: the Google TF1 checkpoint name.
    kind: one of `KINDS` (the layout change, see the module docstring).
    part: 'encoder', 'pooler', 'masked_lm' or 'next_sentence'.
  """
  variable: tf.Variable
  hf_name: str
  google_name: str
  kind: str
  part: str

  def name(self, fmt: str) -> str:
    return self.hf_name if fmt == 'hf' else self.google_name


# ---- the table -----------------------------------------------------------------------------------
def _dense(layer, hf: str, google: str, part: str, kernel_kind: str = 'kernel',
           bias_kind: str = 'plain') -> List[WeightEntry]:
  return [WeightEntry(layer.kernel, f'{hf}.weight', f'{google}/kernel', kernel_kind, part),
          WeightEntry(layer.bias, f'{hf}.bias', f'{google}/bias', bias_kind, part)]


def _norm(layer, hf: str, google: str, part: str) -> List[WeightEntry]:
  return [WeightEntry(layer.gamma, f'{hf}.weight', f'{google}/gamma', 'plain', part),
          WeightEntry(layer.beta, f'{hf}.bias', f'{google}/beta', 'plain', part)]


def check_representable(encoder: networks.BertEncoder) -> None:
  """Raises ValueError when `encoder` has a structure BERT checkpoints cannot hold."""
  config = encoder.get_config()
  if config['embedding_width'] != config['hidden_size']:
    raise ValueError(f'embedding_width {config["embedding_width"]} != hidden_size '
                     f'{config["hidden_size"]}: factorized embeddings have no BERT checkpoint '
                     'names')
  if config['norm_first']:
    raise ValueError('norm_first=True (pre-LN) encoders have no BERT checkpoint layout')


def build_encoder_variables(encoder: networks.BertEncoder) -> None:
  """Creates the encoder's variables (one call on a [1, 1] input)."""
  ids = tf.zeros([1, 1], tf.int32)
  encoder({'input_word_ids': ids, 'input_mask': tf.ones_like(ids), 'input_type_ids': ids})


def encoder_entries(encoder: networks.BertEncoder) -> List[WeightEntry]:
  """The table of a built `BertEncoder`, pooler included.

  For a post-LN encoder whose embedding width equals its hidden size.
  """
  check_representable(encoder)
  # pylint: disable=protected-access
  entries = [
      WeightEntry(encoder.get_embedding_table(), 'embeddings.word_embeddings.weight',
                  'bert/embeddings/word_embeddings', 'plain', 'encoder'),
      WeightEntry(encoder._position_embedding_layer.embeddings,
                  'embeddings.position_embeddings.weight', 'bert/embeddings/position_embeddings',
                  'plain', 'encoder'),
      WeightEntry(encoder._type_embedding_layer.embeddings,
                  'embeddings.token_type_embeddings.weight',
                  'bert/embeddings/token_type_embeddings', 'plain', 'encoder'),
  ]
  entries += _norm(encoder._embedding_norm_layer, 'embeddings.LayerNorm',
                   'bert/embeddings/LayerNorm', 'encoder')
  for i, block in enumerate(encoder.transformer_layers):
    hf, google = f'encoder.layer.{i}', f'bert/encoder/layer_{i}'
    attention = block._attention_layer
    for name in ('query', 'key', 'value'):
      entries += _dense(getattr(attention, f'_{name}_dense'), f'{hf}.attention.self.{name}',
                        f'{google}/attention/self/{name}', 'encoder', 'qkv_kernel', 'qkv_bias')
    entries += _dense(attention._output_dense, f'{hf}.attention.output.dense',
                      f'{google}/attention/output/dense', 'encoder', 'attn_out')
    entries += _norm(block._attention_layer_norm, f'{hf}.attention.output.LayerNorm',
                     f'{google}/attention/output/LayerNorm', 'encoder')
    entries += _dense(block._intermediate_dense, f'{hf}.intermediate.dense',
                      f'{google}/intermediate/dense', 'encoder')
    entries += _dense(block._output_dense, f'{hf}.output.dense', f'{google}/output/dense',
                      'encoder')
    entries += _norm(block._output_layer_norm, f'{hf}.output.LayerNorm',
                     f'{google}/output/LayerNorm', 'encoder')
  entries += _dense(encoder.pooler_layer, 'pooler.dense', 'bert/pooler/dense', 'pooler')
  return entries


def masked_lm_entries(masked_lm: layers.MaskedLM) -> List[WeightEntry]:
  """The masked-LM head (its decoder is the tied word-embedding table, listed with the encoder)."""
  return (_dense(masked_lm.dense, 'cls.predictions.transform.dense',
                 'cls/predictions/transform/dense', 'masked_lm') +
          _norm(masked_lm.layer_norm, 'cls.predictions.transform.LayerNorm',
                'cls/predictions/transform/LayerNorm', 'masked_lm') +
          [WeightEntry(masked_lm.bias, 'cls.predictions.bias', 'cls/predictions/output_bias',
                       'plain', 'masked_lm')])


def check_next_sentence_head(head: layers.ClassificationHead, hidden_size: int) -> None:
  """BERT's NSP is tanh(pooler(token 0)) -> [2] logits; raises ValueError for other heads."""
  found = dict(inner_dim=head.inner_dim, num_classes=head.num_classes,
               cls_token_idx=head.cls_token_idx, activation=head.activation)
  expected = dict(inner_dim=hidden_size, num_classes=2, cls_token_idx=0, activation='tanh')
  if found != expected:
    raise ValueError(f'classification head {head.name!r} does not map to BERT\'s next-sentence '
                     f'head (pooler + cls/seq_relationship): expected {expected}, found {found}')


def next_sentence_entries(head: layers.ClassificationHead, hidden_size: int) -> List[WeightEntry]:
  """The next-sentence head's table.

  Its `pooler_dense` is BERT's pooler, its `logits` `cls.seq_relationship`.
  """
  check_next_sentence_head(head, hidden_size)
  return (_dense(head.dense, 'pooler.dense', 'bert/pooler/dense', NEXT_SENTENCE) +
          [WeightEntry(head.out_proj.kernel, 'cls.seq_relationship.weight',
                       'cls/seq_relationship/output_weights', 'nsp_kernel', NEXT_SENTENCE),
           WeightEntry(head.out_proj.bias, 'cls.seq_relationship.bias',
                       'cls/seq_relationship/output_bias', 'plain', NEXT_SENTENCE)])


def pretrainer_entries(pretrainer: models.BertPretrainerV2) -> List[WeightEntry]:
  """Encoder + masked-LM + `next_sentence` entries; other heads raise ValueError."""
  encoder = pretrainer.encoder_network
  entries = encoder_entries(encoder) + masked_lm_entries(pretrainer.masked_lm)
  for head in pretrainer.classification_heads:
    if head.name != NEXT_SENTENCE:
      raise ValueError(f'classification head {head.name!r} has no BERT checkpoint names (only '
                       f'{NEXT_SENTENCE!r} maps, to cls/seq_relationship)')
    entries += next_sentence_entries(head, encoder.get_config()['hidden_size'])
  return entries


# ---- layouts -------------------------------------------------------------------------------------
def _check(kind: str, fmt: str) -> None:
  if kind not in KINDS:
    raise ValueError(f'unknown weight kind {kind!r}; expected one of {KINDS}')
  if fmt not in bert_encoder_config.FORMATS:
    raise ValueError(f'unknown checkpoint format {fmt!r}; expected one of '
                     f'{bert_encoder_config.FORMATS}')


def to_external(kind: str, fmt: str, value: np.ndarray) -> np.ndarray:
  """Our array -> the external layout."""
  _check(kind, fmt)
  if kind == 'qkv_kernel':
    value = value.reshape(value.shape[0], -1)
  elif kind == 'qkv_bias':
    value = value.reshape(-1)
  elif kind == 'attn_out':
    value = value.reshape(-1, value.shape[-1])
  elif kind == 'nsp_kernel':
    value = value.T
  if fmt == 'hf' and kind in ('kernel', 'qkv_kernel', 'attn_out'):
    value = value.T
  return np.ascontiguousarray(value)


def external_shape(kind: str, fmt: str, shape: Sequence[int]) -> tuple:
  """The external shape of one of our variables of `shape`."""
  _check(kind, fmt)
  shape = tuple(int(d) for d in shape)
  if kind == 'qkv_kernel':
    shape = (shape[0], int(np.prod(shape[1:])))
  elif kind == 'qkv_bias':
    shape = (int(np.prod(shape)),)
  elif kind == 'attn_out':
    shape = (int(np.prod(shape[:-1])), shape[-1])
  elif kind == 'nsp_kernel':
    shape = shape[::-1]
  if fmt == 'hf' and kind in ('kernel', 'qkv_kernel', 'attn_out'):
    shape = shape[::-1]
  return shape


def from_external(kind: str, fmt: str, value: np.ndarray, shape: Sequence[int]) -> np.ndarray:
  """An external array (of `external_shape(kind, fmt, shape)`) -> our layout of `shape`."""
  _check(kind, fmt)
  if fmt == 'hf' and kind in ('kernel', 'qkv_kernel', 'attn_out'):
    value = value.T
  if kind == 'nsp_kernel':
    value = value.T
  return np.ascontiguousarray(value.reshape(shape))


# ---- reading and writing -------------------------------------------------------------------------
def export_tensors(entries: Sequence[WeightEntry], fmt: str) -> Dict[str, np.ndarray]:
  """External name -> float32 array of every entry.

  Two entries may share a name (the encoder's pooler and the next-sentence head's `pooler_dense`
  are both BERT's pooler); the later one wins, with a warning when the values differ.
  """
  tensors: Dict[str, np.ndarray] = {}
  parts: Dict[str, str] = {}
  for entry in entries:
    name = entry.name(fmt)
    value = to_external(entry.kind, fmt, entry.variable.numpy().astype(np.float32))
    if name in tensors and not np.array_equal(tensors[name], value):
      logging.warning('%s: the %s weights replace the different %s weights (BERT checkpoints hold '
                      'one pooler)', name, entry.part, parts[name])
    tensors[name], parts[name] = value, entry.part
  return tensors


def restore(entries: Sequence[WeightEntry], tensors: Mapping[str, np.ndarray], fmt: str,
            source: str, optional_parts: Iterable[str] = ()) -> Set[str]:
  """Assigns every entry from `tensors` (external name -> array); returns the names used.

  Args:
    entries: the table.
    tensors: the external arrays (any float dtype; cast to the variable's dtype).
    fmt: 'hf' or 'google'.
    source: the file named in errors.
    optional_parts: parts (e.g. 'pooler') whose absence leaves our variables unchanged.

  Raises:
    ValueError: a shape mismatch (naming the variable and both shapes) or missing variables
      (listing them). Nothing is assigned when one is raised.
  """
  optional_parts = set(optional_parts)
  missing, updates = [], []
  for entry in entries:
    name = entry.name(fmt)
    if name not in tensors:
      if entry.part not in optional_parts:
        missing.append(name)
      continue
    value = np.asarray(tensors[name])
    expected = external_shape(entry.kind, fmt, entry.variable.shape)
    if tuple(value.shape) != expected:
      raise ValueError(f'{source}: variable {name} has shape {list(value.shape)}; the model '
                       f'built from its config expects {list(expected)}')
    updates.append((entry, from_external(entry.kind, fmt, value, entry.variable.shape)))
  if missing:
    raise ValueError(f'{source}: missing {len(missing)} variable(s): {", ".join(missing)}')
  for entry, value in updates:
    entry.variable.assign(value.astype(entry.variable.dtype.as_numpy_dtype))
  return {entry.name(fmt) for entry, _ in updates}


def check_unused(names: Iterable[str], used: Set[str], source: str, allow_unused: bool) -> None:
  """Raises ValueError listing the names not in `used` (a warning with `allow_unused`)."""
  unused = sorted(set(names) - set(used))
  if not unused:
    return
  message = f'{source}: {len(unused)} unused variable(s): {", ".join(unused)}'
  if not allow_unused:
    raise ValueError(message + ' (pass allow_unused=True to ignore them)')
  logging.warning(message)


# ---- configs -------------------------------------------------------------------------------------
def read_json_config(path: str) -> Dict[str, Any]:
  """The JSON object in `path` (a `config.json` / `bert_config.json`).

  Raises:
    ValueError: the file is not UTF-8 JSON (a truncated or corrupt file) or not an object, naming
      `path`, what was expected and what was found.

  Example:
    >>> read_json_config('uncased_L-2_H-128_A-2/bert_config.json')['hidden_size']
    128
  """
  try:
    with open(path, encoding='utf-8') as f:
      config = json.load(f)
  except json.JSONDecodeError as e:
    raise ValueError(f'{path}: not valid JSON ({e.msg}: line {e.lineno} column {e.colno}); '
                     'expected a BERT config object (truncated or corrupt file?)') from None
  except UnicodeDecodeError as e:
    raise ValueError(f'{path}: not UTF-8 text ({e.reason} at byte {e.start}); expected a BERT '
                     'config JSON object') from None
  if not isinstance(config, dict):
    raise ValueError(f'{path}: holds a JSON {type(config).__name__}; expected an object with '
                     'the BERT config fields (hidden_size, num_hidden_layers, ...)')
  return config


def mlm_activation_of(pretrainer: models.BertPretrainerV2) -> Optional[str]:
  """The pretrainer's masked-LM activation name; BERT checkpoints require it to be `hidden_act`."""
  return pretrainer._mlm_activation  # pylint: disable=protected-access


def check_mlm_activation(pretrainer: models.BertPretrainerV2) -> None:
  """Raises ValueError when the masked-LM activation differs from the encoder's (BERT ties them)."""
  hidden = pretrainer.encoder_network.get_config()['inner_activation']
  mlm = mlm_activation_of(pretrainer)
  if mlm != hidden:
    raise ValueError(f'mlm_activation {mlm!r} differs from the encoder activation {hidden!r}; '
                     'BERT checkpoints use hidden_act for both')


def pretrainer_config(encoder_config: encoders.BertEncoderConfig, next_sentence: bool,
                      dropout_rate: Optional[float] = None) -> bert.PretrainerConfig:
  """The `PretrainerConfig` of a BERT checkpoint (MLM activation = hidden activation)."""
  heads = []
  if next_sentence:
    heads.append(bert.ClsHeadConfig(
        inner_dim=encoder_config.hidden_size, num_classes=2, activation='tanh',
        dropout_rate=encoder_config.dropout_rate if dropout_rate is None else dropout_rate,
        name=NEXT_SENTENCE))
  return bert.PretrainerConfig(encoder=encoders.EncoderConfig(type='bert', bert=encoder_config),
                               cls_heads=heads, mlm_activation=encoder_config.hidden_activation)


def pretrainer_config_of(pretrainer: models.BertPretrainerV2,
                         encoder: Optional[encoders.EncoderConfig] = None
                         ) -> bert.PretrainerConfig:
  """The `PretrainerConfig` that builds (with `MaskedLMTask.build_model`) a model like this one.

  Args:
    pretrainer: the model (its classification heads and masked-LM activation are read).
    encoder: the encoder's config (default: a `BertEncoder`'s, read from the model); other
      encoder types give theirs (e.g. `hf_modernbert.pretrainer_config_of`).
  """
  heads = [bert.ClsHeadConfig(inner_dim=h.inner_dim, num_classes=h.num_classes,
                              activation=h.activation, dropout_rate=h.dropout_rate,
                              cls_token_idx=h.cls_token_idx, name=h.name)
           for h in pretrainer.classification_heads]
  if encoder is None:
    encoder = encoders.EncoderConfig(
        type='bert', bert=bert_encoder_config.encoder_config_of(pretrainer.encoder_network))
  return bert.PretrainerConfig(encoder=encoder, cls_heads=heads,
                               mlm_activation=mlm_activation_of(pretrainer) or 'linear')


def build_encoder(config: encoders.BertEncoderConfig) -> networks.BertEncoder:
  """A built `BertEncoder` (dict outputs) of `config`."""
  encoder = encoders.build_encoder(config)
  build_encoder_variables(encoder)
  return encoder


def build_pretrainer(config: bert.PretrainerConfig) -> models.BertPretrainerV2:
  """A built `BertPretrainerV2` of `config`, the same as `MaskedLMTask.build_model` makes."""
  task = masked_lm.MaskedLMTask(masked_lm.MaskedLMConfig(
      model=config, train_data=pretrain_dataloader.BertPretrainDataConfig(
          seq_length=2, max_predictions_per_seq=1)))
  return task.build_model()


# ---- loading a model -----------------------------------------------------------------------------
_MLM_MARKER = {'hf': 'cls.predictions.bias', 'google': 'cls/predictions/output_bias'}
_NSP_MARKER = {'hf': 'cls.seq_relationship.weight', 'google': 'cls/seq_relationship/output_weights'}
_HEAD_PREFIX = {'hf': 'cls.', 'google': 'cls/'}


def has_masked_lm(tensors: Mapping[str, Any], fmt: str) -> bool:
  """Whether a checkpoint's names include the masked-LM head."""
  return _MLM_MARKER[fmt] in tensors


def load_encoder_from(config: Mapping[str, Any], tensors: Mapping[str, np.ndarray], fmt: str,
                      config_source: str, source: str, allow_unused: bool = False,
                      ignored: Iterable[str] = ()) -> networks.BertEncoder:
  """A `BertEncoder` of `config` holding `tensors` (head variables are skipped with a warning).

  Args:
    config: the external config dict.
    tensors: external name (without the `bert.` prefix) -> array.
    fmt: 'hf' or 'google'.
    config_source, source: the config and weights files, for messages.
    allow_unused: unknown variables warn instead of raising.
    ignored: names the caller has checked and that need no variable (e.g. HF `position_ids`).

  Raises:
    ValueError: missing, mismatched or (without `allow_unused`) unknown variables.
  """
  encoder = build_encoder(
      bert_encoder_config.encoder_config_from_external(config, fmt, config_source))
  used = restore(encoder_entries(encoder), tensors, fmt, source, optional_parts=['pooler'])
  _warn_without_pooler(encoder, used, fmt, source)
  heads = sorted(name for name in tensors if name.startswith(_HEAD_PREFIX[fmt]))
  if heads:
    logging.warning('%s: load_encoder skips the head variables %s', source, ', '.join(heads))
  check_unused(tensors, used | set(heads) | set(ignored), source, allow_unused)
  return encoder


def load_pretrainer_from(config: Mapping[str, Any], tensors: Mapping[str, np.ndarray], fmt: str,
                         config_source: str, source: str, allow_unused: bool = False,
                         ignored: Iterable[str] = ()) -> models.BertPretrainerV2:
  """A `BertPretrainerV2` (with a `next_sentence` head when the checkpoint has one).

  Args: as `load_encoder_from`.

  Raises:
    ValueError: no masked-LM head, missing, mismatched or (without `allow_unused`) unknown
      variables.
  """
  if not has_masked_lm(tensors, fmt):
    raise ValueError(f'{source}: no masked-LM head ({_MLM_MARKER[fmt]} is missing); load it with '
                     'load_encoder')
  next_sentence = _NSP_MARKER[fmt] in tensors
  pretrainer = build_pretrainer(pretrainer_config(
      bert_encoder_config.encoder_config_from_external(config, fmt, config_source), next_sentence))
  used = restore(pretrainer_entries(pretrainer), tensors, fmt, source,
                 optional_parts=() if next_sentence else ['pooler'])
  _warn_without_pooler(pretrainer.encoder_network, used, fmt, source)
  check_unused(tensors, used | set(ignored), source, allow_unused)
  return pretrainer


def _warn_without_pooler(encoder: networks.BertEncoder, used: Set[str], fmt: str,
                         source: str) -> None:
  pooler = _dense(encoder.pooler_layer, 'pooler.dense', 'bert/pooler/dense', 'pooler')
  if not all(entry.name(fmt) in used for entry in pooler):
    logging.warning('%s: no pooler weights; the pooler of the encoder stays randomly initialized',
                    source)


def split_model(model: tf_keras.Model):
  """(encoder, pretrainer or None) of a `BertEncoder` (or V2) or `BertPretrainerV2`."""
  if isinstance(model, models.BertPretrainerV2):
    return model.encoder_network, model
  if isinstance(model, (networks.BertEncoder, networks.BertEncoderV2)):
    return model, None
  raise TypeError(f'expected a BertEncoder, BertEncoderV2 or BertPretrainerV2, found '
                  f'{type(model).__name__}')


def export_entries(model: tf_keras.Model) -> List[WeightEntry]:
  """The table of an encoder or pretrainer to export (checking it maps to BERT)."""
  encoder, pretrainer = split_model(model)
  if pretrainer is None:
    return encoder_entries(encoder)
  check_mlm_activation(pretrainer)
  return pretrainer_entries(pretrainer)
