"""Google's original TF1 BERT checkpoints (`bert_config.json` + `bert_model.ckpt`) to and from ours.

Reads name-based checkpoints with `tf.train.load_checkpoint` (names such as
`bert/encoder/layer_0/attention/self/query/kernel`, `cls/predictions/output_bias`,
`cls/seq_relationship/output_weights` [2, hidden]) and writes them with `SaveV2` under the same
names, so that Google's `modeling.py` (and `load_checkpoint`) read them back. Adam slots
(`*/adam_m`, `*/adam_v`) and `global_step` of training checkpoints are skipped. The variable table
and layouts live in `bert_weight_map` (shared with `hf_bert`).

Semantics: Google's `hidden_act: gelu` is the tanh approximation, our `gelu`; its LayerNorm epsilon
is 1e-12 like ours.

Example:
  >>> pretrainer = load_pretrainer('uncased_L-2_H-128_A-2/')   # a dir or a checkpoint prefix
  >>> export(pretrainer, '/tmp/google_out', vocab_file='vocab.txt')
"""

import json
import logging
import os
import shutil
from typing import Any, Dict, Optional, Tuple, Union

import numpy as np
import tensorflow as tf
import tf_keras

from official.nlp.modeling import models
from official.nlp.modeling import networks
from official.nlp.modeling.networks import bert_encoder_config
from official.nlp.tools import bert_weight_map

CONFIG_NAME = 'bert_config.json'
CHECKPOINT_NAME = 'bert_model.ckpt'
VOCAB_NAME = 'vocab.txt'
_SKIPPED_SUFFIXES = ('/adam_m', '/adam_v')
_SKIPPED_NAMES = ('global_step',)


def resolve(path: str) -> Tuple[str, str]:
  """(checkpoint prefix, config path) of a directory or a checkpoint prefix.

  A directory holds `bert_model.ckpt.index` (or a `checkpoint` state file) and `bert_config.json`;
  a prefix is looked up next to its `bert_config.json`.

  Raises:
    FileNotFoundError: naming `path` and what is missing.
  """
  if os.path.isdir(path):
    directory = path
    prefix = os.path.join(path, CHECKPOINT_NAME)
    if not tf.io.gfile.exists(prefix + '.index'):
      prefix = tf.train.latest_checkpoint(path)
  else:
    directory, prefix = os.path.dirname(path), path
  if not prefix or not tf.io.gfile.exists(prefix + '.index'):
    raise FileNotFoundError(f'{path}: no checkpoint (expected {CHECKPOINT_NAME}.index or a '
                            '`checkpoint` state file)')
  config_path = os.path.join(directory, CONFIG_NAME)
  if not os.path.isfile(config_path):
    raise FileNotFoundError(f'{path}: no {CONFIG_NAME} next to the checkpoint')
  return prefix, config_path


def read_config(config_path: str) -> Dict:
  """The `bert_config.json` dict.

  Raises:
    ValueError: a truncated or corrupt file (not a JSON object), naming it.
  """
  return bert_weight_map.read_json_config(config_path)


def _reader(prefix: str) -> Any:
  """`tf.train.load_checkpoint(prefix)`, with a corrupt index as a ValueError naming the file."""
  try:
    return tf.train.load_checkpoint(prefix)
  except (tf.errors.OpError, ValueError) as e:
    raise ValueError(f'{prefix}.index: not a readable checkpoint index '
                     f'({_first_line(e)}); expected the complete {CHECKPOINT_NAME}.index '
                     '(truncated or corrupt?)') from None


def _first_line(e: BaseException) -> str:
  text = (getattr(e, 'message', None) or str(e)).strip()
  return text.splitlines()[0] if text else type(e).__name__


def read_tensors(prefix: str) -> Dict[str, np.ndarray]:
  """Name -> array of a name-based checkpoint (optimizer slots and `global_step` left out).

  Raises:
    ValueError: an object-based (TF2) checkpoint, which has no BERT names; a corrupt or
      truncated `.index` or `.data-*` file (naming it).
  """
  reader = _reader(prefix)
  names = reader.get_variable_to_shape_map()
  if '_CHECKPOINTABLE_OBJECT_GRAPH' in names:
    raise ValueError(f'{prefix}: an object-based TF2 checkpoint, not a Google BERT checkpoint '
                     '(convert it with --source=ours)')
  skipped = sorted(n for n in names if n in _SKIPPED_NAMES or n.endswith(_SKIPPED_SUFFIXES))
  if skipped:
    logging.info('%s: skipping %d optimizer variables', prefix, len(skipped))
  try:
    return {name: reader.get_tensor(name) for name in names if name not in skipped}
  except (tf.errors.OpError, IndexError, ValueError) as e:  # a truncated or corrupt .data file
    data = tf.io.gfile.glob(prefix + '.data-*')
    raise ValueError(f'{", ".join(data) or prefix}: the checkpoint data cannot be read '
                     f'({_first_line(e)}); expected the complete files written with '
                     f'{os.path.basename(prefix)}.index (truncated or corrupt?)') from None


def load_encoder(path: str, allow_unused: bool = False) -> networks.BertEncoder:
  """A `BertEncoder` (dict outputs) with the weights of a Google BERT checkpoint.

  Args:
    path: a directory with `bert_config.json` and `bert_model.ckpt.*`, or a checkpoint prefix.
    allow_unused: warn about unknown variables instead of raising. Head variables (`cls/*`) are
      always skipped, with a warning listing them.

  Raises:
    FileNotFoundError: no config or checkpoint.
    ValueError: a config our encoder cannot represent; a missing, unknown or mismatched variable
      (naming it and both shapes).
  """
  prefix, config_path = resolve(path)
  return bert_weight_map.load_encoder_from(read_config(config_path), read_tensors(prefix),
                                           'google', config_path, prefix, allow_unused)


def load_pretrainer(path: str, allow_unused: bool = False) -> models.BertPretrainerV2:
  """A `BertPretrainerV2` (masked-LM head, plus `next_sentence` when present) from `path`.

  Raises:
    as `load_encoder`, and ValueError when there is no masked-LM head (`cls/predictions/*`).
  """
  prefix, config_path = resolve(path)
  return bert_weight_map.load_pretrainer_from(read_config(config_path), read_tensors(prefix),
                                              'google', config_path, prefix, allow_unused)


def load(path: str, allow_unused: bool = False) -> Union[models.BertPretrainerV2,
                                                          networks.BertEncoder]:
  """`load_pretrainer` when the checkpoint has a masked-LM head, else `load_encoder`."""
  prefix, _ = resolve(path)
  names = _reader(prefix).get_variable_to_shape_map()
  if bert_weight_map.has_masked_lm(names, 'google'):
    return load_pretrainer(path, allow_unused)
  return load_encoder(path, allow_unused)


def write_checkpoint(tensors: Dict[str, np.ndarray], prefix: str) -> str:
  """Writes a name-based checkpoint (`prefix.index`, `prefix.data-*`) and a `checkpoint` file."""
  names = sorted(tensors)
  tf.io.gfile.makedirs(os.path.dirname(prefix) or '.')
  tf.raw_ops.SaveV2(prefix=prefix, tensor_names=names, shape_and_slices=[''] * len(names),
                    tensors=[tf.constant(tensors[name]) for name in names])
  # The state file that `tf.train.latest_checkpoint(directory)` reads (relative path).
  base = os.path.basename(prefix)
  with tf.io.gfile.GFile(os.path.join(os.path.dirname(prefix) or '.', 'checkpoint'), 'w') as f:
    f.write(f'model_checkpoint_path: "{base}"\nall_model_checkpoint_paths: "{base}"\n')
  return prefix


def export(model: tf_keras.Model, out_dir: str, vocab_file: Optional[str] = None) -> str:
  """Writes `bert_config.json` and `bert_model.ckpt` (and `vocab.txt`) in Google's layout.

  A `next_sentence` head is written as the pooler + `cls/seq_relationship` (its `pooler_dense`
  replaces the encoder's pooler, with a warning when they differ).

  Args:
    model: a built `BertEncoder` or `BertPretrainerV2`.
    out_dir: created if needed.
    vocab_file: copied to `out_dir/vocab.txt` when given.

  Returns:
    `out_dir`.

  Raises:
    ValueError: a structure BERT cannot hold (see `hf_bert.export`).
  """
  encoder, _ = bert_weight_map.split_model(model)
  tensors = bert_weight_map.export_tensors(bert_weight_map.export_entries(model), 'google')
  config = bert_encoder_config.external_config(bert_encoder_config.encoder_config_of(encoder),
                                               'google')
  tf.io.gfile.makedirs(out_dir)
  with open(os.path.join(out_dir, CONFIG_NAME), 'w', encoding='utf-8') as f:
    json.dump(config, f, indent=2, sort_keys=True)
  write_checkpoint(tensors, os.path.join(out_dir, CHECKPOINT_NAME))
  if vocab_file:
    shutil.copyfile(vocab_file, os.path.join(out_dir, VOCAB_NAME))
  logging.info('Wrote %d tensors to %s', len(tensors), out_dir)
  return out_dir
