"""Converts BERT checkpoints between Hugging Face, Google TF1 and our object checkpoints.

Formats:
  hf      a directory with `config.json` + `model.safetensors`: BERT (`hf_bert`), or ModernBERT
          when `config.json` says `model_type: modernbert` (`hf_modernbert`).
  google  a directory with `bert_config.json` + `bert_model.ckpt.*`, or a prefix (`google_bert`).
  ours    a directory with `params.yaml` and an object checkpoint holding our `checkpoint_items`
          (`encoder`, `masked_lm`, `next_sentence`): a training `model_dir` or the output of this
          tool. Written as `ckpt-1` + `params.yaml` (`task.model` and `task.init_checkpoint`), which
          `MaskedLMTask.initialize` restores and `--config_file` accepts.

The readers and writers of hf and google are the encoder families' (`networks.encoder_family`:
each family's record names its own, and a model is written by the family of its encoder); a
family without one refuses that format, naming it. A checkpoint with a masked-LM head converts as
a `BertPretrainerV2`, one without as the family's encoder (a `BertEncoder`; a `ModernBertEncoder`
for ModernBERT, which converts between hf and ours only).
The tokenizer goes along: `--vocab_file` (a `vocab.txt` or a `tokenizer.json`), or else the input
directory's `vocab.txt`, or else its `tokenizer.json` (a Hugging Face folder of a BPE model such as
ModernBERT, a model_dir trained on BPE records), or else, for `--source=ours`, the tokenizer.json
stored with the records of its `params.yaml` (`task.train_data`). A vocab.txt is copied as it is; a
tokenizer.json is written as `tokenizer.json` with its special tokens named: in our directories by
the `tokenizer_config.json` of a model_dir (`vocab_assets.write_tokenizer_json`), in Hugging Face's
by the `tokenizer_config.json` / `special_tokens_map.json` transformers reads
(`hf_bert.write_tokenizer_files`), whose config.json then takes its token ids (`pad_token_id`,
`mask_token_id`, ...) from it. Google's layout has no place for a tokenizer.json: it is copied
beside.

Usage:
  python -m official.nlp.tools.convert_checkpoint --source=hf --target=ours \\
      --input=all-MiniLM-L6-v2/ --output_dir=/tmp/minilm_ours

--output_dir must be new or empty unless --overwrite (then files of the same name are replaced).
Errors (missing or corrupt files, unwritable outputs) print one line naming the file and exit 1;
bad or missing flags exit 2.
"""

from official.common import quiet  # first: hides TensorFlow's start-up lines (--verbose keeps them)
quiet.quiet_cli(__name__)

import logging
import os
import shutil
import sys
import tempfile
import time
import types
from typing import Optional, Sequence, Union

from absl import flags
import tensorflow as tf
import tf_keras
from tensorflow.core.protobuf import trackable_object_graph_pb2

from official.common import cli_utils
from official.modeling import checkpoint_compat
from official.modeling import hyperparams
from official.nlp.configs import bert
from official.nlp.configs import encoders
from official.nlp.data import vocab_assets
from official.nlp.modeling import models
from official.nlp.modeling import networks
from official.nlp.modeling.networks import encoder_family
from official.nlp.tools import bert_weight_map
from official.nlp.tools import hf_bert

SOURCES = ('hf', 'google', 'ours')
TARGETS = ('ours', 'hf', 'google')
PARAMS_NAME = 'params.yaml'
VOCAB_NAME = 'vocab.txt'
TOKENIZER_NAME = 'tokenizer.json'

Model = Union[models.BertPretrainerV2, networks.BertEncoder, networks.ModernBertEncoder]


# ---- ours ----------------------------------------------------------------------------------------
def _first_line(e: BaseException) -> str:
  text = (getattr(e, 'message', None) or str(e)).strip()
  return text.splitlines()[0] if text else type(e).__name__


def _root_names(prefix: str):
  """The names of the checkpoint's root objects (`encoder`, `masked_lm`, ...).

  Raises:
    ValueError: a name-based checkpoint; a corrupt or truncated `.index` or `.data-*` file.
  """
  try:
    reader = tf.train.load_checkpoint(prefix)
  except (tf.errors.OpError, ValueError) as e:
    raise ValueError(f'{prefix}.index: not a readable checkpoint index ({_first_line(e)}); '
                     'expected a complete checkpoint (truncated or corrupt?)') from None
  if not reader.has_tensor('_CHECKPOINTABLE_OBJECT_GRAPH'):
    raise ValueError(f'{prefix}: a name-based checkpoint, not an object checkpoint of ours '
                     '(a Google BERT checkpoint converts with --source=google)')
  graph = trackable_object_graph_pb2.TrackableObjectGraph()
  try:
    graph.ParseFromString(reader.get_tensor('_CHECKPOINTABLE_OBJECT_GRAPH'))
  except (tf.errors.OpError, IndexError, ValueError) as e:
    raise ValueError(f'{prefix}: the checkpoint data cannot be read ({_first_line(e)}); expected '
                     'the complete .data files of this checkpoint (truncated or corrupt?)'
                     ) from None
  return {child.local_name for child in graph.nodes[0].children} - {'save_counter'}


def read_ours(path: str) -> Model:
  """Our model from a directory with `params.yaml` and a checkpoint (or a prefix in one).

  Builds `task.model` of `params.yaml` (a `BertPretrainerV2` when the checkpoint has `masked_lm`,
  else the encoder of `task.model.encoder`, of whichever family) and restores the checkpoint's
  `encoder`, `masked_lm` and heads.

  Raises:
    FileNotFoundError: no checkpoint or no `params.yaml`.
    ValueError: a corrupt `params.yaml` or checkpoint file; no `encoder` in the checkpoint, a
      head of the config missing from it, or variables that do not match the config.
  """
  if os.path.isdir(path):
    directory, prefix = path, tf.train.latest_checkpoint(path)
  else:
    directory, prefix = os.path.dirname(path), path
  if not prefix or not tf.io.gfile.exists(prefix + '.index'):
    raise FileNotFoundError(f'{path}: no checkpoint found')
  params_path = os.path.join(directory, PARAMS_NAME)
  if not tf.io.gfile.exists(params_path):
    raise FileNotFoundError(f'{path}: no {PARAMS_NAME} next to the checkpoint (expected '
                            f'{params_path} with task.model)')
  try:
    params = hyperparams.read_yaml(params_path)
  except Exception as e:  # pylint: disable=broad-except  (yaml's errors have no common base)
    raise ValueError(f'{params_path}: not readable YAML '
                     f'({_first_line(e)}); expected the params.yaml '
                     'of a training run or of this tool') from None
  task = params.get('task') if isinstance(params, dict) else None
  model_params = (task or {}).get('model') if isinstance(task, dict) else None
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
  except (tf.errors.OpError, IndexError) as e:  # a truncated or corrupt .data file
    raise ValueError(f'{prefix}: the checkpoint data cannot be read ({_first_line(e)}); expected '
                     'the complete .data files of this checkpoint (truncated or corrupt?)'
                     ) from None
  return model


def _family_of(model: tf_keras.Model) -> encoder_family.EncoderFamily:
  """The encoder family of an encoder or a pretrainer on one.

  Raises:
    TypeError: an encoder of no registered family.
  """
  family = encoder_family.family_of_model(model)
  if family is None:
    encoder = getattr(model, 'encoder_network', model)
    raise TypeError(f'{type(encoder).__name__} is the encoder of no registered encoder family; '
                    f'expected one of {sorted(encoder_family.names())}')
  return family


def write_ours(model: Model, out_dir: str) -> str:
  """Writes `out_dir/ckpt-1` (the model's `checkpoint_items`) and `out_dir/params.yaml`.

  `params.yaml` holds `task.model` (the full `PretrainerConfig`, or only `encoder` for an encoder)
  and `task.init_checkpoint` (this checkpoint), so `MaskedLMTask.initialize` can restore it.

  Returns:
    The checkpoint prefix.
  """
  family = _family_of(model)
  config_of = encoder_family.resolve(family.config_of)
  if config_of is None:
    raise ValueError(f'{family.display_name} ({type(model).__name__}) has no config_of, so '
                     'our checkpoints cannot record its config; expected an encoder family with '
                     'one')
  encoder = getattr(model, 'encoder_network', model)
  pretrainer = model if encoder is not model else None
  encoder_config = encoders.EncoderConfig(type=family.name, **{family.name: config_of(encoder)})
  if pretrainer is None:
    items = {'encoder': encoder}
    model_params = {'encoder': encoder_config.as_dict()}
  else:
    # `model` too: the heads' logits layers are saved under it (Model Garden's keys).
    items = dict(pretrainer.checkpoint_items, model=pretrainer)
    model_params = bert_weight_map.pretrainer_config_of(pretrainer, encoder_config).as_dict()
  tf.io.gfile.makedirs(out_dir)
  prefix = tf.train.Checkpoint(**items).save(os.path.join(out_dir, 'ckpt'))
  hyperparams.save_yaml({'task': {'model': model_params,
                                  'init_checkpoint': os.path.abspath(prefix)}},
                        os.path.join(out_dir, PARAMS_NAME))
  return prefix


# ---- conversion ----------------------------------------------------------------------------------
def read(source: str, path: str, allow_unused: bool = False) -> Model:
  """The model in `path` of format `source` ('hf', 'google' or 'ours').

  For hf and google, the readers of the families that recognize the checkpoint as theirs are
  tried first (ModernBERT's `model_type`), then the format's fallback reader (BERT's).
  """
  if source == 'ours':
    return read_ours(path)
  if source not in encoder_family.FORMATS:
    raise ValueError(f'--source must be one of {SOURCES}, found {source!r}')
  readers = [fmt for fmt in (family.checkpoint_format(source)
                             for family in encoder_family.families().values())
             if fmt is not None and fmt.read is not None]
  for fmt in sorted(readers, key=lambda fmt: fmt.recognizes is None):  # stable: fallbacks last
    if fmt.recognizes is None or encoder_family.resolve(fmt.recognizes)(path):
      return encoder_family.resolve(fmt.read)(path, allow_unused)
  raise ValueError(f'{path}: no encoder family reads {encoder_family.FORMAT_NAMES[source]} '
                   'checkpoints like this one')


def write(model: tf_keras.Model, target: str, out_dir: str,
          vocab_file: Optional[str] = None) -> str:
  """Writes `model` in format `target` ('ours', 'hf' or 'google') to `out_dir`.

  Args:
    model: the model.
    target: the format.
    out_dir: the output directory.
    vocab_file: a `vocab.txt`, or a `tokenizer.json` (module docstring), written with the model.

  Raises:
    ValueError: a model whose encoder family has no `target` layout (ModernBERT to 'google':
      Google's BERT checkpoints have no such layout).
    TypeError: an encoder of no registered family (for 'hf' and 'google').

  Example:
    >>> write(model, 'hf', '/tmp/hf_out', 'runs/dapt/tokenizer.json')
  """
  if target == 'ours':
    write_ours(model, out_dir)
    if hf_bert.is_tokenizer_json(vocab_file):
      for name in (VOCAB_NAME, TOKENIZER_NAME):  # what --overwrite replaces
        if os.path.abspath(os.path.join(out_dir, name)) != os.path.abspath(vocab_file) and \
            os.path.isfile(os.path.join(out_dir, name)):
          os.remove(os.path.join(out_dir, name))
      vocab_assets.write_tokenizer_json(out_dir, vocab_file)
    elif vocab_file:
      shutil.copyfile(vocab_file, os.path.join(out_dir, VOCAB_NAME))
    return out_dir
  if target not in encoder_family.FORMATS:
    raise ValueError(f'--target must be one of {TARGETS}, found {target!r}')
  family = _family_of(model)
  fmt = family.checkpoint_format(target)
  if fmt is None:
    others = [f'--target={name}' for name in encoder_family.FORMATS
              if family.checkpoint_format(name) is not None] + ['--target=ours']
    raise ValueError(f'--target={target}: {family.display_name} ({type(model).__name__}) has '
                     f'no {encoder_family.FORMAT_NAMES[target]} checkpoint layout; expected '
                     f'{" or ".join(others)}')
  if target == 'google' and hf_bert.is_tokenizer_json(vocab_file):
    written = encoder_family.resolve(fmt.write)(model, out_dir, None)
    shutil.copyfile(vocab_file, os.path.join(out_dir, TOKENIZER_NAME))
    logging.info('Google checkpoints have no tokenizer.json: copied %s beside (no vocab.txt)',
                 vocab_file)
    return written
  return encoder_family.resolve(fmt.write)(model, out_dir, vocab_file)


def _input_vocab_file(input_path: str) -> Optional[str]:
  """The input directory's `vocab.txt`, else its `tokenizer.json`, else None."""
  directory = input_path if os.path.isdir(input_path) else os.path.dirname(input_path)
  for name in (VOCAB_NAME, TOKENIZER_NAME):
    candidate = os.path.join(directory, name)
    if os.path.isfile(candidate):
      return candidate
  return None


def _records_tokenizer_json(input_path: str, directory: str) -> Optional[str]:
  """For a directory of ours: the tokenizer.json stored with the records of its `params.yaml`
  (`task.train_data`, else `task.validation_data`), written into `directory`; else None."""
  model_dir = input_path if os.path.isdir(input_path) else os.path.dirname(input_path)
  params_path = os.path.join(model_dir, PARAMS_NAME)
  if not os.path.isfile(params_path):
    return None
  try:
    params = hyperparams.read_yaml(params_path)
  except Exception:  # pylint: disable=broad-except  (read_ours reports a bad params.yaml)
    return None
  task = params.get('task') if isinstance(params, dict) else None
  if not isinstance(task, dict):
    return None
  task_config = types.SimpleNamespace(**{
      name: types.SimpleNamespace(input_path=(task.get(name) or {}).get('input_path', ''))
      for name in ('train_data', 'validation_data')})
  metadata = vocab_assets.records_tokenizer_info(task_config)
  return vocab_assets.write_records_tokenizer(directory, metadata) if metadata else None


def convert(source: str, target: str, input_path: str, output: str,
            vocab_file: Optional[str] = None, allow_unused: bool = False) -> Model:
  """Reads `input_path` as `source` and writes it to `output` as `target`; returns the model.

  Args:
    source: 'hf', 'google' or 'ours'.
    target: 'ours', 'hf' or 'google'.
    input_path: the input directory (or checkpoint prefix for google / ours).
    output: the output directory.
    vocab_file: a `vocab.txt` or a `tokenizer.json`, written with the model; default: the input
      directory's (module docstring).
    allow_unused: unknown input variables warn instead of raising.

  Raises:
    FileNotFoundError, ValueError: a missing or corrupt input file (naming it), an input our
      models cannot hold, or an output that cannot be written.
    OSError: an output file that cannot be written (permissions, a full disk).
  """
  if target not in TARGETS:
    raise ValueError(f'--target must be one of {TARGETS}, found {target!r}')
  start = time.monotonic()
  logging.info('reading the %s checkpoint %s', source, input_path)
  model = read(source, input_path, allow_unused)
  logging.info('read %s (%d variables, %s parameters) in %.1f s', type(model).__name__,
               len(model.weights), f'{model.count_params():,}', time.monotonic() - start)
  if vocab_file is not None and not os.path.isfile(vocab_file):
    raise FileNotFoundError(f'--vocab_file {vocab_file!r} does not exist')
  logging.info('writing the %s checkpoint to %s', target, output)  # main prints the result
  with tempfile.TemporaryDirectory() as scratch:
    if vocab_file is None:
      vocab_file = _input_vocab_file(input_path)
    if vocab_file is None and source == 'ours':
      vocab_file = _records_tokenizer_json(input_path, scratch)
    try:
      write(model, target, output, vocab_file)
    except tf.errors.OpError as e:  # SaveV2 / Checkpoint.save: permissions, a full disk, ...
      raise ValueError(f'{output}: could not write the {target} checkpoint ({_first_line(e)}); '
                       'expected a writable directory with free space') from None
  return model


# ---- command line --------------------------------------------------------------------------------
PROGRAM = 'convert_checkpoint'


def _define_flags() -> flags.FlagValues:
  fv = flags.FlagValues()
  flags.DEFINE_enum('source', None, SOURCES, 'Input format.', flag_values=fv)
  flags.DEFINE_enum('target', None, TARGETS, 'Output format.', flag_values=fv)
  flags.DEFINE_string('input', None, 'Input directory (or checkpoint prefix).', flag_values=fv)
  flags.DEFINE_string('output_dir', None, 'Output directory: new or empty (see --overwrite).',
                      flag_values=fv)
  flags.DEFINE_string('vocab_file', None, 'vocab.txt or tokenizer.json to write with the model '
                      '(default: the input directory\'s).', flag_values=fv)
  flags.DEFINE_bool('allow_unused', False, 'Warn about unknown input variables instead of '
                    'failing.', flag_values=fv)
  flags.DEFINE_bool('overwrite', False, 'Write into a non-empty --output_dir (files of the same '
                    'name are replaced); without it a non-empty --output_dir is refused before any '
                    'work.', flag_values=fv)
  return fv


def main(argv: Optional[Sequence[str]] = None) -> int:
  """Console entry point: converts --input (--source format) to --output_dir (--target format).

  Returns:
    0 on success; 1 after a one-line error (bad paths, corrupt files, a non-empty --output_dir
    without --overwrite); 2 for bad or missing flags.
  """
  fv = _define_flags()
  argv = cli_utils.renamed_flags(list(sys.argv if argv is None else argv), {'output': 'output_dir'},
                                 PROGRAM)
  status = cli_utils.parse_flags(fv, argv, PROGRAM, __doc__)
  if status is not None:
    return status
  missing = [name for name in ('source', 'target', 'input', 'output_dir') if not fv[name].value]
  if missing:
    return cli_utils.error(PROGRAM, f'missing --{", --".join(missing)}; expected all of '
                           '--source, --target, --input and --output_dir', status=2)
  try:
    if os.path.abspath(fv.output_dir) == os.path.abspath(fv.input):
      raise ValueError(f'--output_dir={fv.output_dir} is the --input directory; expected another '
                       'directory')
    cli_utils.check_output_dir(fv.output_dir, '--output_dir', fv.overwrite)
    model = convert(fv.source, fv.target, fv.input, fv.output_dir, fv.vocab_file, fv.allow_unused)
  except cli_utils.USER_ERRORS + (TypeError,) as e:
    return cli_utils.error(PROGRAM, cli_utils.message_of(e))
  print(f'{PROGRAM}: wrote {type(model).__name__} ({fv.source} -> {fv.target}) to {fv.output_dir}')
  return 0


if __name__ == '__main__':
  sys.exit(main())
