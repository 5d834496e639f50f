"""Hugging Face BERT checkpoints (`config.json` + `model.safetensors`) to and from our models.

Reads `BertModel`, `BertForMaskedLM` and `BertForPreTraining` directories (names with or without the
`bert.` prefix, LayerNorm `weight`/`bias` or the older `gamma`/`beta`) with the numpy API of
`safetensors`; neither torch nor transformers is needed. The variable table and layouts live in
`bert_weight_map` (shared with `google_bert`), the `config.json` translation in `hf_bert_config`.

Semantics: Hugging Face's `hidden_act: gelu` is the exact erf GELU, our `exact_gelu`; its
`gelu_new` / `gelu_pytorch_tanh` is the tanh approximation, our `gelu`. `layer_norm_eps` must be
1e-12 (our LayerNorms). A `next_sentence` head maps to BERT's pooler + `cls.seq_relationship`, so
the loaded pretrainer's encoder pooler and head `pooler_dense` hold the same weights.

The tokenizer goes with the weights: a `vocab.txt` is copied as it is; a `tokenizer.json` (BPE,
Unigram, WordPiece) is copied with a `tokenizer_config.json` and `special_tokens_map.json` naming
its special tokens (`write_tokenizer_files`), so that transformers' `AutoTokenizer` loads the
folder, and the config's token ids (`pad_token_id`, ...) come from it.

Example:
  >>> encoder = load_encoder('all-MiniLM-L6-v2/')              # a BertEncoder with dict outputs
  >>> pretrainer = load_pretrainer('bert-base-uncased/')       # a BertPretrainerV2
  >>> export(pretrainer, '/tmp/hf_out', vocab_file='vocab.txt')
"""

import json
import logging
import os
import shutil
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
from safetensors import numpy as safetensors_numpy
import tf_keras

from official.nlp.data import tokenization
from official.nlp.modeling import models
from official.nlp.modeling import networks
from official.nlp.tools import bert_weight_map
from official.nlp.tools import hf_bert_config

CONFIG_NAME = hf_bert_config.CONFIG_NAME
WEIGHTS_NAME = hf_bert_config.WEIGHTS_NAME
INDEX_NAME = 'model.safetensors.index.json'
VOCAB_NAME = 'vocab.txt'
TOKENIZER_NAME = 'tokenizer.json'
TOKENIZER_CONFIG_NAME = 'tokenizer_config.json'
SPECIAL_TOKENS_MAP_NAME = 'special_tokens_map.json'
# config.json token-id fields -> the special-token role whose id fills them.
TOKEN_ID_ROLES = {'pad_token_id': 'pad', 'bos_token_id': 'cls', 'eos_token_id': 'sep',
                  'cls_token_id': 'cls', 'sep_token_id': 'sep', 'mask_token_id': 'mask'}
_OTHER_WEIGHTS = ('pytorch_model.bin', 'tf_model.h5', 'flax_model.msgpack')
# Buffers, not weights: consumed without a variable.
_BUFFERS = ('embeddings.position_ids',)
_DECODER_WEIGHT = 'cls.predictions.decoder.weight'
_DECODER_BIAS = 'cls.predictions.decoder.bias'
# The config half (`config.json` <-> `BertEncoderConfig`) lives in `hf_bert_config`.
read_config = hf_bert_config.read_config


def _weight_files(model_dir: str):
  single = os.path.join(model_dir, WEIGHTS_NAME)
  if os.path.isfile(single):
    return [single], single
  index = os.path.join(model_dir, INDEX_NAME)
  if os.path.isfile(index):
    try:
      with open(index, encoding='utf-8') as f:
        weight_map = json.load(f)['weight_map']
      shards = sorted(set(weight_map.values()))
    except (ValueError, KeyError, TypeError, AttributeError) as e:
      raise ValueError(f'{index}: not a safetensors index ({type(e).__name__}: {e}); expected a '
                       'JSON object with a weight_map of tensor name -> shard file') from None
    paths = [os.path.join(model_dir, shard) for shard in shards]
    missing = [p for p in paths if not os.path.isfile(p)]
    if missing:
      raise FileNotFoundError(f'{index}: lists {len(paths)} shards; missing '
                              f'{", ".join(missing)}')
    return paths, index
  others = [name for name in _OTHER_WEIGHTS if os.path.isfile(os.path.join(model_dir, name))]
  found = f'found {", ".join(others)}' if others else 'found no weights file'
  raise FileNotFoundError(f'{model_dir}: no {WEIGHTS_NAME} ({found}); only safetensors weights '
                          'are read: re-save the model with safe_serialization=True')


def _normal_name(name: str) -> str:
  """Drops the `bert.` prefix and maps the old LayerNorm `gamma`/`beta` to `weight`/`bias`."""
  if name.startswith('bert.'):
    name = name[len('bert.'):]
  if '.LayerNorm.' in name or name.startswith('LayerNorm.'):
    name = name.replace('LayerNorm.gamma', 'LayerNorm.weight').replace(
        'LayerNorm.beta', 'LayerNorm.bias')
  return name


def read_tensors(model_dir: str) -> Tuple[Dict[str, np.ndarray], str]:
  """(normalized name -> array of every tensor, the weights path).

  Raises:
    FileNotFoundError: no safetensors weights (or a shard of the index missing).
    ValueError: a corrupt or truncated safetensors file or index (naming it), or two tensors with
      the same normalized name.
  """
  files, source = _weight_files(model_dir)
  tensors = {}
  for path in files:
    try:
      loaded = safetensors_numpy.load_file(path)
    except Exception as e:  # pylint: disable=broad-except  (safetensors' errors have no base)
      if isinstance(e, OSError):
        raise
      raise ValueError(f'{path}: not a readable safetensors file ({" ".join(str(e).split())}); '
                       f'expected the complete file (truncated or corrupt?), '
                       f'{os.path.getsize(path)} bytes found') from None
    for name, value in loaded.items():
      normal = _normal_name(name)
      if normal in tensors:
        raise ValueError(f'{path}: {name} duplicates another variable named {normal}')
      tensors[normal] = value
  return tensors, source


def _ignored(tensors: Dict[str, np.ndarray], source: str) -> set:
  """Names consumed without a variable: buffers and the decoder tied to the embeddings."""
  ignored = {name for name in _BUFFERS if name in tensors}
  if _DECODER_WEIGHT in tensors:
    table = tensors.get('embeddings.word_embeddings.weight')
    if table is None or not np.array_equal(tensors[_DECODER_WEIGHT], table):
      raise ValueError(f'{source}: {_DECODER_WEIGHT} differs from '
                       'embeddings.word_embeddings.weight; only decoders tied to the word '
                       'embeddings are supported')
    ignored.add(_DECODER_WEIGHT)
  if _DECODER_BIAS in tensors:
    bias = tensors.get('cls.predictions.bias')
    if bias is None or not np.array_equal(tensors[_DECODER_BIAS], bias):
      raise ValueError(f'{source}: {_DECODER_BIAS} differs from cls.predictions.bias')
    ignored.add(_DECODER_BIAS)
  return ignored


def load_encoder(model_dir: str, allow_unused: bool = False) -> networks.BertEncoder:
  """A `BertEncoder` (dict outputs) with the weights of a Hugging Face BERT directory.

  Args:
    model_dir: holds `config.json` and `model.safetensors` (or a sharded safetensors index).
    allow_unused: warn about unknown variables instead of raising. Head variables (`cls.*`) are
      always skipped, with a warning listing them.

  Raises:
    FileNotFoundError: no config or no safetensors weights.
    ValueError: a config our encoder cannot represent; a missing, unknown or mismatched variable
      (naming it and both shapes).
  """
  config, config_path = read_config(model_dir)
  tensors, source = read_tensors(model_dir)
  return bert_weight_map.load_encoder_from(config, tensors, 'hf', config_path, source,
                                           allow_unused, _ignored(tensors, source))


def load_pretrainer(model_dir: str, allow_unused: bool = False) -> models.BertPretrainerV2:
  """A `BertPretrainerV2` (masked-LM head, plus `next_sentence` when present) from `model_dir`.

  The result is what `MaskedLMTask.build_model` builds for `pretrainer_config(model_dir)`.

  Raises:
    as `load_encoder`, and ValueError when there is no masked-LM head (`cls.predictions.*`).
  """
  config, config_path = read_config(model_dir)
  tensors, source = read_tensors(model_dir)
  return bert_weight_map.load_pretrainer_from(config, tensors, 'hf', config_path, source,
                                              allow_unused, _ignored(tensors, source))


def load(model_dir: str, allow_unused: bool = False) -> Union[models.BertPretrainerV2,
                                                               networks.BertEncoder]:
  """`load_pretrainer` when the checkpoint has a masked-LM head, else `load_encoder`."""
  read_config(model_dir)
  tensors, _ = read_tensors(model_dir)
  if bert_weight_map.has_masked_lm(tensors, 'hf'):
    return load_pretrainer(model_dir, allow_unused)
  return load_encoder(model_dir, allow_unused)


def is_tokenizer_json(path: Optional[str]) -> bool:
  """Whether a vocabulary file is a Hugging Face `tokenizer.json` (else a `vocab.txt`)."""
  return bool(path) and path.endswith('.json')


def load_tokenizer_json(tokenizer_json: str) -> tokenization.SubwordTokenizer:
  """The tokenizer of a `tokenizer.json`, its special tokens as the files beside it name them."""
  return tokenization.SubwordTokenizer.from_tokenizer_json(tokenizer_json)


def tokenizer_token_ids(tokenizer_json: str,
                        fields: Sequence[str] = tuple(TOKEN_ID_ROLES)) -> Dict[str, Optional[int]]:
  """The config.json token-id `fields` of a `tokenizer.json`'s special-token roles
  (`TOKEN_ID_ROLES`: bos is the cls token, eos the sep token, as in ModernBERT's configs).

  Example:
    >>> tokenizer_token_ids('roberta/tokenizer.json', ['pad_token_id', 'mask_token_id'])
    {'pad_token_id': 1, 'mask_token_id': 50264}
  """
  tokenizer = load_tokenizer_json(tokenizer_json)
  ids = {'pad': tokenizer.pad_id, 'cls': tokenizer.cls_id, 'sep': tokenizer.sep_id,
         'mask': tokenizer.mask_id}
  return {field: ids[TOKEN_ID_ROLES[field]] for field in fields}


def write_tokenizer_files(out_dir: str, tokenizer_json: str,
                          options: Optional[Mapping[str, Any]] = None) -> str:
  """Copies a `tokenizer.json` into a Hugging Face folder with the `tokenizer_config.json` and
  `special_tokens_map.json` that make `transformers.AutoTokenizer` load it with its special tokens.

  Args:
    out_dir: the folder (created if needed).
    tokenizer_json: the tokenizer (its special tokens as `tokenization` finds them).
    options: more `tokenizer_config.json` fields (e.g. ModernBERT's `model_input_names`).

  Returns:
    `out_dir/tokenizer.json`.

  Example:
    >>> write_tokenizer_files('/tmp/hf_out', 'runs/dapt/tokenizer.json')
    '/tmp/hf_out/tokenizer.json'
  """
  tokenizer = load_tokenizer_json(tokenizer_json)
  os.makedirs(out_dir, exist_ok=True)
  target = os.path.join(out_dir, TOKENIZER_NAME)
  if os.path.abspath(tokenizer_json) != os.path.abspath(target):
    shutil.copyfile(tokenizer_json, target)
  roles = {f'{role}_token': token for role, token in tokenizer.special_tokens.items()
           if token is not None}
  config = dict(tokenizer_class='PreTrainedTokenizerFast', clean_up_tokenization_spaces=False,
                **roles, **dict(options or {}))
  if tokenizer.do_lower_case is not None:
    config['do_lower_case'] = tokenizer.do_lower_case
  for name, content in ((TOKENIZER_CONFIG_NAME, config), (SPECIAL_TOKENS_MAP_NAME, roles)):
    with open(os.path.join(out_dir, name), 'w', encoding='utf-8') as f:
      json.dump(content, f, indent=2, sort_keys=True)
  return target


def export(model: tf_keras.Model, out_dir: str, vocab_file: Optional[str] = None) -> str:
  """Writes `config.json`, `model.safetensors` (and `vocab.txt`) that transformers loads.

  A `BertEncoder` becomes a `BertModel` (names without prefix); a `BertPretrainerV2` a
  `BertForMaskedLM`, or a `BertForPreTraining` with a `next_sentence` head (whose `pooler_dense`
  is written as the pooler, replacing the encoder's with a warning when they differ). The decoder
  is tied to the word embeddings and not written. Linear weights are [out, in].

  Args:
    model: a built `BertEncoder` or `BertPretrainerV2`.
    out_dir: created if needed.
    vocab_file: copied to `out_dir/vocab.txt` when given; a `tokenizer.json` is written with
      `write_tokenizer_files` and gives the config's `pad_token_id`.

  Returns:
    `out_dir`.

  Raises:
    ValueError: a structure BERT cannot hold (factorized embeddings, pre-LN, other heads, an MLM
      activation different from the encoder's).
  """
  _, pretrainer = bert_weight_map.split_model(model)
  tensors = bert_weight_map.export_tensors(bert_weight_map.export_entries(model), 'hf')
  if pretrainer is not None:
    tensors = {name if name.startswith('cls.') else f'bert.{name}': value
               for name, value in tensors.items()}
  config = hf_bert_config.hf_config(model)
  if is_tokenizer_json(vocab_file):
    config.update(tokenizer_token_ids(vocab_file, ['pad_token_id']))
  return write_directory(out_dir, config, tensors, vocab_file)


def write_directory(out_dir: str, config: Dict, tensors: Dict[str, np.ndarray],
                    vocab_file: Optional[str] = None,
                    tokenizer_options: Optional[Mapping[str, Any]] = None) -> str:
  """Writes a Hugging Face model directory: `config.json`, `model.safetensors` (+ the tokenizer).

  Args:
    out_dir: created if needed.
    config: the `config.json` dict (its `architectures[0]` is logged).
    tensors: name -> numpy array, in Hugging Face's names and layouts.
    vocab_file: copied in as `vocab.txt` when given; a `tokenizer.json` as `tokenizer.json` with
      its `tokenizer_config.json` and `special_tokens_map.json` (`write_tokenizer_files`).
    tokenizer_options: more `tokenizer_config.json` fields of a `tokenizer.json`.

  Returns:
    `out_dir`.

  Example:
    >>> write_directory('/tmp/out', {'architectures': ['BertModel']}, {'w': np.zeros(2)})
    '/tmp/out'
  """
  os.makedirs(out_dir, exist_ok=True)
  with open(os.path.join(out_dir, CONFIG_NAME), 'w', encoding='utf-8') as f:
    json.dump(config, f, indent=2, sort_keys=True)
  safetensors_numpy.save_file(tensors, os.path.join(out_dir, WEIGHTS_NAME),
                              metadata={'format': 'pt'})
  if is_tokenizer_json(vocab_file):
    write_tokenizer_files(out_dir, vocab_file, tokenizer_options)
  elif vocab_file:
    shutil.copyfile(vocab_file, os.path.join(out_dir, VOCAB_NAME))
  logging.info('Wrote %s (%d tensors) to %s', (config.get('architectures') or ['?'])[0],
               len(tensors), out_dir)
  return out_dir
