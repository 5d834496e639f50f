"""Converts BERT checkpoints between Hugging Face, Google TF1 and our object checkpoints.

Formats:
  hf      a directory with `config.json` + `model.safetensors` (`hf_bert`).
  google  a directory with `bert_config.json` + `bert_model.ckpt.*`, or a prefix (`google_bert`).
  ours    a directory with `params.yaml` and an object checkpoint holding our `checkpoint_items`
          (`encoder`, `masked_lm`, `next_sentence`): a training `model_dir` or the output of this
          tool. Written as `ckpt-1` + `params.yaml` (`task.model` and `task.init_checkpoint`), which
          `MaskedLMTask.initialize` restores and `--config_file` accepts.

A checkpoint with a masked-LM head converts as a `BertPretrainerV2`, one without as a `BertEncoder`.
`vocab.txt` is copied from `--vocab_file`, or else from the input directory when it has one.

Usage:
  python -m official.nlp.tools.convert_checkpoint --source=hf --target=ours \\
      --input=all-MiniLM-L6-v2/ --output=/tmp/minilm_ours
Errors print one line and exit with status 1.
"""

import os
import shutil
import sys
from typing import Optional, Union

from absl import app
from absl import flags
import tensorflow as tf
import tf_keras
from tensorflow.core.protobuf import trackable_object_graph_pb2

from official.modeling import checkpoint_compat
from official.modeling import hyperparams
from official.nlp.configs import bert
from official.nlp.configs import encoders
from official.nlp.modeling import models
from official.nlp.modeling import networks
from official.nlp.tools import bert_weight_map
from official.nlp.tools import google_bert
from official.nlp.tools import hf_bert

SOURCES = ('hf', 'google', 'ours')
TARGETS = ('ours', 'hf', 'google')
PARAMS_NAME = 'params.yaml'
VOCAB_NAME = 'vocab.txt'

Model = Union[models.BertPretrainerV2, networks.BertEncoder]


# ---- ours ---------------------------------------------------------------------------------------------
def _root_names(prefix: str):
  reader = tf.train.load_checkpoint(prefix)
  if not reader.has_tensor('_CHECKPOINTABLE_OBJECT_GRAPH'):
    raise ValueError(f'{prefix}: a name-based checkpoint, not an object checkpoint of ours '
                     '(a Google BERT checkpoint converts with --source=google)')
  graph = trackable_object_graph_pb2.TrackableObjectGraph()
  graph.ParseFromString(reader.get_tensor('_CHECKPOINTABLE_OBJECT_GRAPH'))
  return {child.local_name for child in graph.nodes[0].children} - {'save_counter'}


def read_ours(path: str) -> Model:
  """Our model from a directory with `params.yaml` and a checkpoint (or a prefix in one).

  Builds `task.model` of `params.yaml` (a `BertPretrainerV2` when the checkpoint has `masked_lm`,
  else the `BertEncoder` of `task.model.encoder`) and restores the checkpoint's `encoder`,
  `masked_lm` and heads.

  Raises:
    FileNotFoundError: no checkpoint or no `params.yaml`.
    ValueError: no `encoder` in the checkpoint, a head of the config missing from it, or variables
      that do not match the config.
  """
  if os.path.isdir(path):
    directory, prefix = path, tf.train.latest_checkpoint(path)
  else:
    directory, prefix = os.path.dirname(path), path
  if not prefix or not tf.io.gfile.exists(prefix + '.index'):
    raise FileNotFoundError(f'{path}: no checkpoint found')
  params_path = os.path.join(directory, PARAMS_NAME)
  model_params = (hyperparams.read_yaml(params_path).get('task') or {}).get('model')
  if not model_params or 'encoder' not in model_params:
    raise ValueError(f'{params_path}: no task.model.encoder')
  roots = _root_names(prefix)
  if 'encoder' not in roots:
    raise ValueError(f'{prefix}: no `encoder` in the checkpoint (it has {sorted(roots)})')
  if 'masked_lm' in roots:
    model = bert_weight_map.build_pretrainer(bert.PretrainerConfig.from_dict(model_params))
    items = checkpoint_compat.pretrainer_items(model, roots)
  else:
    model = bert_weight_map.build_encoder(encoders.EncoderConfig.from_dict(model_params['encoder']))
    items = {'encoder': model}
  missing = sorted(set(items) - roots)
  if missing:
    raise ValueError(f'{prefix}: the model of {params_path} has {missing}, which the checkpoint '
                     f'lacks (it has {sorted(roots)})')
  try:
    tf.train.Checkpoint(**items).read(prefix).expect_partial().assert_existing_objects_matched()
  except (AssertionError, ValueError) as e:
    raise ValueError(f'{prefix}: does not match the model of {params_path}: '
                     f'{str(e).splitlines()[0]}') from None
  return model


def write_ours(model: Model, out_dir: str) -> str:
  """Writes `out_dir/ckpt-1` (the model's `checkpoint_items`) and `out_dir/params.yaml`.

  `params.yaml` holds `task.model` (the full `PretrainerConfig`, or only `encoder` for an encoder)
  and `task.init_checkpoint` (this checkpoint), so `MaskedLMTask.initialize` can restore it.

  Returns:
    The checkpoint prefix.
  """
  encoder, pretrainer = bert_weight_map.split_model(model)
  if pretrainer is None:
    items = {'encoder': encoder}
    model_params = {'encoder': encoders.EncoderConfig(
        type='bert', bert=bert_weight_map.encoder_config_of(encoder)).as_dict()}
  else:
    # `model` too: the heads' logits layers are saved under it (Model Garden's keys).
    items = dict(pretrainer.checkpoint_items, model=pretrainer)
    model_params = bert_weight_map.pretrainer_config_of(pretrainer).as_dict()
  tf.io.gfile.makedirs(out_dir)
  prefix = tf.train.Checkpoint(**items).save(os.path.join(out_dir, 'ckpt'))
  hyperparams.save_yaml({'task': {'model': model_params,
                                  'init_checkpoint': os.path.abspath(prefix)}},
                        os.path.join(out_dir, PARAMS_NAME))
  return prefix


# ---- conversion -----------------------------------------------------------------------------------------
def read(source: str, path: str, allow_unused: bool = False) -> Model:
  """The model in `path` of format `source` ('hf', 'google' or 'ours')."""
  if source == 'hf':
    return hf_bert.load(path, allow_unused)
  if source == 'google':
    return google_bert.load(path, allow_unused)
  if source == 'ours':
    return read_ours(path)
  raise ValueError(f'--source must be one of {SOURCES}, found {source!r}')


def write(model: tf_keras.Model, target: str, out_dir: str,
          vocab_file: Optional[str] = None) -> str:
  """Writes `model` in format `target` ('ours', 'hf' or 'google') to `out_dir`."""
  if target == 'hf':
    return hf_bert.export(model, out_dir, vocab_file)
  if target == 'google':
    return google_bert.export(model, out_dir, vocab_file)
  if target == 'ours':
    write_ours(model, out_dir)
    if vocab_file:
      shutil.copyfile(vocab_file, os.path.join(out_dir, VOCAB_NAME))
    return out_dir
  raise ValueError(f'--target must be one of {TARGETS}, found {target!r}')


def convert(source: str, target: str, input_path: str, output: str,
            vocab_file: Optional[str] = None, allow_unused: bool = False) -> Model:
  """Reads `input_path` as `source` and writes it to `output` as `target`; returns the model.

  Args:
    source: 'hf', 'google' or 'ours'.
    target: 'ours', 'hf' or 'google'.
    input_path: the input directory (or checkpoint prefix for google / ours).
    output: the output directory.
    vocab_file: copied as `vocab.txt`; default: `vocab.txt` of the input directory if present.
    allow_unused: unknown input variables warn instead of raising.
  """
  if target not in TARGETS:
    raise ValueError(f'--target must be one of {TARGETS}, found {target!r}')
  model = read(source, input_path, allow_unused)
  if vocab_file is None:
    directory = input_path if os.path.isdir(input_path) else os.path.dirname(input_path)
    candidate = os.path.join(directory, VOCAB_NAME)
    vocab_file = candidate if os.path.isfile(candidate) else None
  elif not os.path.isfile(vocab_file):
    raise FileNotFoundError(f'--vocab_file {vocab_file!r} does not exist')
  write(model, target, output, vocab_file)
  return model


# ---- command line ---------------------------------------------------------------------------------------
FLAGS = flags.FLAGS
flags.DEFINE_enum('source', None, SOURCES, 'Input format.')
flags.DEFINE_enum('target', None, TARGETS, 'Output format.')
flags.DEFINE_string('input', None, 'Input directory (or checkpoint prefix).')
flags.DEFINE_string('output', None, 'Output directory.')
flags.DEFINE_string('vocab_file', None, 'vocab.txt to copy (default: the input directory\'s).')
flags.DEFINE_bool('allow_unused', False, 'Warn about unknown input variables instead of failing.')


def _run(argv) -> None:
  if len(argv) > 1:
    raise app.UsageError(f'unexpected arguments: {argv[1:]}')
  missing = [name for name in ('source', 'target', 'input', 'output') if not FLAGS[name].value]
  if missing:
    print(f'convert_checkpoint: error: missing --{", --".join(missing)}', file=sys.stderr)
    sys.exit(1)
  try:
    model = convert(FLAGS.source, FLAGS.target, FLAGS.input, FLAGS.output, FLAGS.vocab_file,
                    FLAGS.allow_unused)
  except (ValueError, FileNotFoundError, TypeError, OSError) as e:
    message = ' '.join(str(e).split())
    print(f'convert_checkpoint: error: {message}', file=sys.stderr)
    sys.exit(1)
  print(f'convert_checkpoint: wrote {type(model).__name__} ({FLAGS.source} -> {FLAGS.target}) '
        f'to {FLAGS.output}')


def main() -> None:
  """Console-script entry point."""
  app.run(_run)


if __name__ == '__main__':
  main()
