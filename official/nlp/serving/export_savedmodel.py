r"""Exports a pretrainer or classifier as a SavedModel: encoder, fill_mask, classify signatures.

Signatures (see `serving_signatures` for shapes): a pretrainer gets `encoder` and `fill_mask` (top-k
fixed at export); a classifier gets `classify` (and `encoder` when it has one). Tokenization stays
with the client (TensorFlow has no WordPiece op without tensorflow_text), so the export carries
what a client needs in `assets.extra/`: `vocab.txt` and `serving_config.json` (`seq_length`,
`special_token_ids`, `do_lower_case`, `vocab_size`, `vocab_sha256`, `top_k`, `signatures`, ...).

Usage:
  python -m official.nlp.serving.export_savedmodel --model_dir=runs/tiny --output_dir=exports/tiny \
    [--checkpoint_path=runs/tiny/ckpt-1000] [--vocab_file=vocab.txt] [--top_k=5] [--overwrite]

--output_dir must be new or empty; `--overwrite` replaces an earlier export there (a directory
holding anything else is refused). The export is written beside --output_dir and renamed into
place when complete. Errors (bad paths, no checkpoint, corrupt files) print one line and exit 1;
bad flags exit 2. `--export_dir`, the old name of `--output_dir`, still works (with a note on
stderr).

Example:
  >>> export_pretrainer(pretrainer, '/tmp/export', seq_length=128, vocab_file='vocab.txt')
  >>> loaded = tf.saved_model.load('/tmp/export')
  >>> loaded.signatures['encoder'](input_word_ids=ids, input_mask=mask, input_type_ids=types)
"""

from official.common import quiet  # first: hides TensorFlow's start-up lines (--verbose keeps them)
quiet.quiet_cli(__name__)

import json
import logging
import os
import shutil
import sys
import time
from typing import Any, Dict, Optional, Sequence

import tensorflow as tf
import tf_keras
import yaml
from absl import flags

from official.common import cli_utils
from official.common import file_utils
from official.core import task_factory
from official.modeling import hyperparams
from official.nlp.data import tokenization
from official.nlp.data import vocab_assets
from official.nlp.serving import inference
from official.nlp.serving import serving_modules
from official.nlp.serving import serving_signatures
from official.nlp.tasks import masked_lm
from official.nlp.tasks import question_answering
from official.nlp.tasks import sentence_prediction
from official.nlp.tasks import tagging

FORMAT_VERSION = 1
PROGRAM = 'export_savedmodel'
# Old flag names -> the names shared by the tools (`cli_utils.renamed_flags`).
RENAMED_FLAGS = {'export_dir': 'output_dir'}


def _vocab_info(vocab_file: Optional[str], do_lower_case: bool, vocab_size: Optional[int],
                expected_sha256: Optional[str] = None) -> Dict[str, Any]:
  """The serving-config fields of a vocabulary, after checking it against the model."""
  if not vocab_file:
    return {'vocab_file': None, 'special_token_ids': None, 'vocab_sha256': expected_sha256}
  if vocab_file.endswith('.json'):  # any tokenizer.json (BPE, Unigram, WordPiece, ...)
    tokenizer = tokenization.SubwordTokenizer.from_tokenizer_json(vocab_file)
  else:
    tokenizer = tokenization.WordPieceTokenizer.from_vocab_file(vocab_file, do_lower_case)
  if vocab_size is not None and tokenizer.vocab_size != vocab_size:
    raise ValueError(f'vocab_file {vocab_file!r} has {tokenizer.vocab_size} tokens but the model '
                     f'has {vocab_size} word embeddings; expected the vocabulary it was trained '
                     'with')
  if expected_sha256 and tokenizer.vocab_sha256() != expected_sha256:
    raise ValueError(f'vocab_file {vocab_file!r} differs from the vocabulary of the training '
                     f'records (sha256 {tokenizer.vocab_sha256()} vs {expected_sha256})')
  return {'vocab_file': _asset_name(vocab_file),
          'special_token_ids': tokenizer.special_token_ids(),
          'vocab_sha256': tokenizer.vocab_sha256()}


def _asset_name(vocab_file: str) -> str:
  """The vocabulary's name in `assets.extra/`: `tokenizer.json` or `vocab.txt`."""
  return vocab_assets.TOKENIZER_JSON if vocab_file.endswith('.json') else inference.VOCAB_FILE


def is_export(directory: str) -> bool:
  """Whether `directory` holds a SavedModel (`saved_model.pb`): an export `--overwrite` replaces."""
  return tf.io.gfile.exists(os.path.join(directory, 'saved_model.pb'))


def check_export_dir(export_dir: str, overwrite: bool = False, flag: str = 'export_dir') -> bool:
  """Checks that `export_dir` may receive an export; returns whether an earlier one is replaced.

  A new or empty directory is fine; an earlier export only with `overwrite`; a training model_dir,
  a file, or a directory of other files never.

  Raises:
    ValueError: naming `flag`, the path, what was expected and what was found.

  Example:
    >>> check_export_dir('exports/tiny', overwrite=True)   # True: an earlier export is replaced
  """
  if tf.io.gfile.exists(os.path.join(export_dir, inference.PARAMS_FILE)):
    raise ValueError(f'{flag}={export_dir}: holds a training run ({inference.PARAMS_FILE}); '
                     'expected a new or empty directory, or an earlier SavedModel export')
  return cli_utils.check_output_dir(export_dir, flag, overwrite, replaceable=is_export)


def _write_export(module: tf.Module, directory: str, config: Dict[str, Any],
                  vocab_file: Optional[str]) -> None:
  tf.saved_model.save(module, directory, signatures=dict(module.signature_functions))
  extra = os.path.join(directory, inference.ASSETS_EXTRA)
  tf.io.gfile.makedirs(extra)
  if vocab_file:
    tf.io.gfile.copy(vocab_file, os.path.join(extra, _asset_name(vocab_file)), overwrite=True)
    # The special tokens' roles of a tokenizer.json may be named in the config beside it.
    roles = os.path.join(os.path.dirname(vocab_file), vocab_assets.TOKENIZER_CONFIG)
    if vocab_file.endswith('.json') and tf.io.gfile.exists(roles):
      tf.io.gfile.copy(roles, os.path.join(extra, vocab_assets.TOKENIZER_CONFIG), overwrite=True)
  with tf.io.gfile.GFile(os.path.join(extra, inference.SERVING_CONFIG), 'w') as f:
    json.dump(config, f, indent=2)
    f.write('\n')


def _save(module: tf.Module, export_dir: str, config: Dict[str, Any],
          vocab_file: Optional[str], overwrite: bool = False) -> str:
  """Saves `module` with its signatures, then `assets.extra/` (vocab.txt, serving_config.json).

  A local export is written beside `export_dir` and renamed into place once complete, so a failed
  export leaves no partial SavedModel, and `overwrite` leaves nothing of the earlier one.
  """
  replace = check_export_dir(export_dir, overwrite)
  config = dict(format=inference.SERVING_FORMAT, format_version=FORMAT_VERSION,
                signatures=sorted(module.signature_functions),
                input_names=list(serving_signatures.ENCODER_INPUTS), **config)
  export_dir = export_dir.rstrip('/') or export_dir
  start = time.monotonic()
  # Tracing the signatures and writing the variables is the slow part of an export.
  logging.info('saving the signatures %s to %s', ', '.join(config['signatures']), export_dir)
  try:
    if file_utils.is_remote(export_dir):  # object stores cannot rename directories: write in place
      if replace:
        tf.io.gfile.rmtree(export_dir)
      _write_export(module, export_dir, config, vocab_file)
    else:
      staging = f'{export_dir}.partial-{os.getpid()}'
      if tf.io.gfile.exists(staging):
        tf.io.gfile.rmtree(staging)
      try:
        _write_export(module, staging, config, vocab_file)
      except BaseException:
        if tf.io.gfile.exists(staging):
          tf.io.gfile.rmtree(staging)
        raise
      if tf.io.gfile.exists(export_dir):  # empty, or an earlier export (`replace`)
        old = f'{export_dir}.old-{os.getpid()}'
        os.rename(export_dir, old)
        os.rename(staging, export_dir)
        shutil.rmtree(old)
      else:
        os.rename(staging, export_dir)
  except tf.errors.OpError as e:
    raise ValueError(f'{export_dir}: could not write the SavedModel: '
                     f'{cli_utils.one_line(e.message)}') from None
  logging.info('saved the SavedModel in %.1f s', time.monotonic() - start)
  return export_dir


def export_pretrainer(pretrainer: tf_keras.Model, export_dir: str, seq_length: int,
                      vocab_file: Optional[str] = None, top_k: int = 5,
                      do_lower_case: bool = True, source_checkpoint: Optional[str] = None,
                      vocab_sha256: Optional[str] = None, overwrite: bool = False) -> str:
  """Exports a `BertPretrainerV2` with `encoder` and `fill_mask` signatures.

  Args:
    pretrainer: the model (built, weights loaded).
    export_dir: the SavedModel directory: new or empty (an earlier export only with `overwrite`).
    seq_length: the sequence length the model was trained with (recorded for clients; inputs may
      be shorter, and longer up to the encoder's max_sequence_length).
    vocab_file: the vocabulary, copied to `assets.extra/vocab.txt` (its size must match the
      model's).
    top_k: tokens returned per masked position by `fill_mask`.
    do_lower_case: the tokenizer setting recorded in `serving_config.json`.
    source_checkpoint: recorded in `serving_config.json`.
    vocab_sha256: the hash of the training vocabulary; a `vocab_file` with another one is refused.
    overwrite: replace an earlier export in `export_dir`.

  Returns:
    `export_dir`.

  Raises:
    ValueError: a vocabulary of another size (or hash) than the model's; `top_k` out of range; an
      `export_dir` that is not new or empty (see `check_export_dir`) or cannot be written.
  """
  module = serving_signatures.build_serving_module(pretrainer=pretrainer, top_k=top_k)
  encoder = serving_signatures.find_encoder(pretrainer)
  vocab_size = serving_signatures.embedding_table_rows(encoder)
  config = dict(model_type='pretrainer', seq_length=int(seq_length),
                max_sequence_length=serving_signatures.max_sequence_length(encoder),
                top_k=int(top_k), num_classes=None, vocab_size=vocab_size,
                do_lower_case=bool(do_lower_case),
                source_checkpoint=source_checkpoint,
                **_vocab_info(vocab_file, do_lower_case, vocab_size, vocab_sha256))
  return _save(module, export_dir, config, vocab_file, overwrite)


def export_classifier(classifier: tf_keras.Model, export_dir: str, seq_length: int,
                      vocab_file: Optional[str] = None,
                      encoder: Optional[tf_keras.Model] = None, do_lower_case: bool = True,
                      source_checkpoint: Optional[str] = None,
                      vocab_sha256: Optional[str] = None, overwrite: bool = False) -> str:
  """Exports a classifier with a `classify` signature (and `encoder`, when one is known).

  Args:
    classifier: a Keras model mapping the encoder-input dict to logits [batch, num_classes] or to
      a dict with `logits`.
    export_dir: the SavedModel directory.
    seq_length: the sequence length the model was trained with.
    vocab_file: the vocabulary, copied to `assets.extra/vocab.txt`.
    encoder: its encoder (default: `classifier.encoder_network` or
      `classifier.checkpoint_items['encoder']`, when present).
    do_lower_case: recorded in `serving_config.json`.
    source_checkpoint: recorded in `serving_config.json`.
    vocab_sha256: the hash of the training vocabulary; a `vocab_file` with another one is refused.
    overwrite: replace an earlier export in `export_dir`.

  Returns:
    `export_dir`.
  """
  module = serving_signatures.build_serving_module(classifier=classifier, encoder=encoder)
  logits = module.classify.get_concrete_function().structured_outputs['logits']
  encoder = encoder or serving_signatures.find_encoder(classifier)
  vocab_size = serving_signatures.embedding_table_rows(encoder)
  config = dict(model_type='classifier', seq_length=int(seq_length),
                max_sequence_length=serving_signatures.max_sequence_length(encoder), top_k=None,
                num_classes=logits.shape[-1], vocab_size=vocab_size,
                do_lower_case=bool(do_lower_case), source_checkpoint=source_checkpoint,
                **_vocab_info(vocab_file, do_lower_case, vocab_size, vocab_sha256))
  return _save(module, export_dir, config, vocab_file, overwrite)


def export_from_model_dir(model_dir: str, export_dir: str, checkpoint: Optional[str] = None,
                          vocab_file: Optional[str] = None, top_k: int = 5,
                          experiment: Optional[str] = None, overwrite: bool = False) -> str:
  """Rebuilds the model of a training model_dir, restores a checkpoint and exports it.

  Args:
    model_dir: `params.yaml` + `ckpt-N` as written by `official.nlp.train`.
    export_dir: the SavedModel directory.
    checkpoint: a checkpoint prefix (e.g. `model_dir/ckpt-1000`) or directory (default: latest).
    vocab_file: the vocabulary, a vocab.txt or a tokenizer.json (default: the model_dir's
      `vocab.txt`, else its `tokenizer.json`; else none is saved).
    top_k: `fill_mask` predictions per position (pretrainers).
    experiment: the registered experiment of params.yaml (default: detected).
    overwrite: replace an earlier export in `export_dir`.

  Returns:
    `export_dir`.
  """
  check_export_dir(export_dir, overwrite)  # before the model is built
  params, model, path = inference.restore_model(model_dir, checkpoint, experiment)  # logs it
  metadata = vocab_assets.model_dir_tokenizer_info(model_dir, params)
  if not vocab_file:  # the model_dir's vocab.txt, else its tokenizer.json (BPE, Unigram, ...)
    candidates = [os.path.join(model_dir, name)
                  for name in (inference.VOCAB_FILE, vocab_assets.TOKENIZER_JSON)]
    vocab_file = next((c for c in candidates if tf.io.gfile.exists(c)), None)
  if not vocab_file:
    logging.warning('No vocabulary exported (no --vocab_file, no %s/%s or %s): clients must '
                    'bring their own.', model_dir, inference.VOCAB_FILE,
                    vocab_assets.TOKENIZER_JSON)
  common = dict(seq_length=params.task.train_data.seq_length, vocab_file=vocab_file,
                do_lower_case=metadata.get('do_lower_case', True), source_checkpoint=path,
                vocab_sha256=metadata.get('vocab_sha256'), overwrite=overwrite)
  if inference.is_pretrainer(model):
    return export_pretrainer(model, export_dir, top_k=top_k, **common)
  return export_classifier(model, export_dir, **common)


# Task class -> its export module class of Model Garden's serving API (`serving_modules`).
_EXPORT_MODULES = {masked_lm.MaskedLMTask: serving_modules.MaskedLM,
                   sentence_prediction.SentencePredictionTask: serving_modules.SentencePrediction,
                   question_answering.QuestionAnsweringTask: serving_modules.QuestionAnswering,
                   tagging.TaggingTask: serving_modules.Tagging}


def lookup_export_module(task: Any) -> type:
  """The export module class (`serving_modules`) of a task.

  Raises:
    ValueError: no export module for the task's class (naming the known ones).

  Example:
    >>> module_cls = lookup_export_module(task)
    >>> module = module_cls(params=module_cls.Params(parse_sequence_length=128), model=model)
  """
  for task_cls, module_cls in _EXPORT_MODULES.items():
    if isinstance(task, task_cls):
      return module_cls
  raise ValueError(f'no export module for the task {type(task).__name__}; known: '
                   f'{sorted(cls.__name__ for cls in _EXPORT_MODULES)}')


def create_export_module(*, task_name: str, config_file: Optional[str],
                         serving_params: Dict[str, Any]) -> Any:
  """Builds the export module of the registered task whose config class name contains `task_name`.

  Args:
    task_name: e.g. 'SentencePrediction', 'MaskedLM', 'Tagging'.
    config_file: a YAML file overriding the task config (`task: {...}`), or None for defaults.
    serving_params: the export module's `Params` fields.

  Returns:
    The export module; its model is built from the task on first use (restore weights with
    `export_savedmodel_util.export(..., checkpoint_path=...)`).

  Raises:
    ValueError: no registered task matches `task_name`.
  """
  for config_cls, task_cls in task_factory.registered_tasks().items():
    if task_name in config_cls.__name__:
      break
  else:
    raise ValueError(f'no registered task config matches task_name {task_name!r}; known: '
                     f'{sorted(c.__name__ for c in task_factory.registered_tasks())}')
  config = config_cls()
  if config_file:
    with tf.io.gfile.GFile(config_file) as f:
      overrides = yaml.safe_load(f) or {}
    config = hyperparams.override_params_dict(config, overrides.get('task', overrides),
                                              is_strict=False)
  task = task_cls(config)
  module_cls = lookup_export_module(task)
  return module_cls(params=module_cls.Params(**serving_params), model=task.build_model)


def _define_flags() -> flags.FlagValues:
  fv = flags.FlagValues()
  flags.DEFINE_string('model_dir', None, 'Training model_dir (params.yaml + ckpt-N).',
                      flag_values=fv)
  flags.DEFINE_string('output_dir', None, 'Where the SavedModel is written (a new or empty '
                      'directory).', flag_values=fv)
  flags.DEFINE_string('checkpoint_path', None, 'Checkpoint prefix or directory to export '
                      '(default: the latest in --model_dir).', flag_values=fv)
  flags.DEFINE_string('vocab_file', None, 'vocab.txt saved with the model (default: '
                      '<model_dir>/vocab.txt when present).', flag_values=fv)
  flags.DEFINE_integer('top_k', 5, 'Predictions per masked position of the fill_mask signature.',
                       lower_bound=1, flag_values=fv)
  flags.DEFINE_string('experiment', None, 'The registered experiment of params.yaml (default: '
                      'the first one whose schema accepts it).', flag_values=fv)
  flags.DEFINE_boolean('overwrite', False, 'Replace an earlier export in --output_dir (without '
                       'it, a non-empty --output_dir is refused; a directory that is not a '
                       'SavedModel export is never replaced).', flag_values=fv)
  flags.mark_flags_as_required(['model_dir', 'output_dir'], flag_values=fv)
  return fv


def main(argv: Optional[Sequence[str]] = None) -> int:
  """Console entry point (`official.nlp.serving.export_savedmodel:main`)."""
  fv = _define_flags()
  argv = cli_utils.renamed_flags(sys.argv if argv is None else argv, RENAMED_FLAGS, PROGRAM)
  status = cli_utils.parse_flags(fv, argv, PROGRAM, __doc__)
  if status is not None:
    return status
  try:
    check_export_dir(fv.output_dir, fv.overwrite, flag='--output_dir')
    if inference.model_dir_kind(fv.model_dir) != inference.TRAINING:
      return cli_utils.error(PROGRAM, f'--model_dir={fv.model_dir} is already a SavedModel; '
                             'expected a training model_dir (params.yaml + ckpt-N)')
    export_dir = export_from_model_dir(fv.model_dir, fv.output_dir, fv.checkpoint_path,
                                       fv.vocab_file, fv.top_k, fv.experiment, fv.overwrite)
  except cli_utils.USER_ERRORS as e:
    return cli_utils.error(PROGRAM, cli_utils.message_of(e))
  config = inference.read_serving_config(export_dir)
  print(f'exported {", ".join(config["signatures"])} from {config["source_checkpoint"]} to '
        f'{export_dir}')
  return 0


if __name__ == '__main__':
  sys.exit(main())
