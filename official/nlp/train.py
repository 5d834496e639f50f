r"""Trains and evaluates a registered experiment: `python -m official.nlp.train --experiment=...`.

Example:
  python -m official.nlp.train --experiment=bert/pretraining \
    --config_file=configs/pretraining/bert_mini.yaml --mode=train_and_eval --model_dir=runs/mini \
    --params_override='task.train_data.input_path=data/train.tfrecord*,trainer.train_steps=1000'

Precedence: the experiment's defaults < each --config_file in order < the encoder of
task.init_checkpoint's params.yaml (`official/nlp/configs/checkpoint_fields.py`) < the pretraining
records' metadata (sequence length, predictions per sequence, packing, vocabulary size and the
held-out set, `official/nlp/configs/record_fields.py`) < --params_override.
"""

from official.common import quiet  # first: hides TensorFlow's start-up lines (--verbose keeps them)
quiet.quiet_cli(__name__)

import logging
import os
import sys

from absl import app
from absl import flags

from official.common import cli_utils
from official.common import flags as tfm_flags
from official.common import gin_utils
from official.core import model_dir_lock

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

FLAGS = flags.FLAGS

tfm_flags.define_flags()  # --experiment, --mode, --model_dir, --config_file, --params_override, ...
quiet.define_verbose_flag(FLAGS)  # quiet_cli consumes it
# --help lists the flags defined in those modules too (not only --helpfull).
flags.adopt_module_key_flags(tfm_flags)
flags.declare_key_flag('verbose')
flags.DEFINE_integer('pretrain_steps', None, 'continuous_train_and_eval: the pretraining run\'s '
                     'total steps; wait for its checkpoints until this step is reached.')
flags.DEFINE_bool('enable_async_checkpointing', False, 'Save checkpoints in the background '
                  '(Model Garden defaults to true; mlm-garden saves synchronously by default).')
flags.DEFINE_bool('allow_config_change', False, 'Train in a --model_dir whose params.yaml differs '
                  'from the new config in keys that change what is trained (model, optimizer, '
                  'training data); without it such a run fails listing the differing keys.')
flags.DEFINE_multi_string('experiment_module', [], 'Python module(s) to import before looking '
                          'up --experiment, so that they can register their own experiments and '
                          'tasks.')


def _fail(message: str) -> None:
  print(f'error: {message}', file=sys.stderr)
  sys.exit(1)


def _build_params():
  """Imports registrations and builds the validated params; exits 1 with a message on bad input."""
  # Function-level: keeps TensorFlow out of mlm-train's start-up.
  # Imported for its registrations (experiments and tasks).
  from official.common import registry_imports  # pylint: disable=g-import-not-at-top,unused-import  # noqa: F401
  from official.core import exp_factory  # pylint: disable=g-import-not-at-top
  from official.core import train_utils  # pylint: disable=g-import-not-at-top
  try:
    cli_utils.import_experiment_modules(FLAGS.experiment_module)
  except ValueError as e:
    _fail(str(e))
  if not FLAGS.experiment:
    _fail('--experiment is required; registered experiments: '
          f'{", ".join(exp_factory.registered_experiments())}')
  if FLAGS.tf_data_service:
    _fail('--tf_data_service: tf.data service is not supported by mlm-garden')
  # Function-level: keeps TensorFlow out of mlm-train's start-up.
  from official.nlp.configs import known_fields  # pylint: disable=g-import-not-at-top
  taken = []

  def complete(params) -> None:
    taken.extend(known_fields.fill(params, FLAGS.params_override))

  try:
    params = train_utils.build_params(FLAGS.experiment, FLAGS.config_file, FLAGS.params_override,
                                      complete=complete)
    if FLAGS.tpu:
      params.override({'runtime': {'tpu': FLAGS.tpu}})
  except KeyError as e:
    _fail(str(e.args[0]) if e.args else str(e))
  except (ValueError, FileNotFoundError) as e:  # hyperparams.ConfigError is a ValueError
    _fail(str(e))
  for line in taken:
    logging.info('%s', line)
  return params


def main(argv) -> None:
  """Parses the flags, builds params, strategy and task, and runs the experiment."""
  del argv
  logging.getLogger().setLevel(logging.DEBUG if FLAGS.verbosity >= 1 else logging.INFO)
  for name in ('tensorflow', 'absl'):  # no per-save checkpoint chatter
    logging.getLogger(name).setLevel(logging.WARNING)
  if FLAGS.gin_file or FLAGS.gin_params:
    try:
      gin_utils.parse_gin_flags(FLAGS.gin_file, FLAGS.gin_params)
    except gin_utils.GinError as e:
      print(f'error: {e}', file=sys.stderr)
      sys.exit(2)
  params = _build_params()
  if not FLAGS.model_dir:
    _fail('--model_dir is required')
  # Function-level: keeps TensorFlow out of mlm-train's start-up.
  from official.common import distribute_utils  # pylint: disable=g-import-not-at-top
  from official.core import checkpointing  # pylint: disable=g-import-not-at-top
  from official.core import task_factory  # pylint: disable=g-import-not-at-top
  from official.core import train_lib  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from official.nlp import continuous_finetune_lib  # pylint: disable=g-import-not-at-top
  from official.nlp.data import pretrain_dataloader  # pylint: disable=g-import-not-at-top
  runtime = params.runtime
  if runtime.run_eagerly:
    tf.config.run_functions_eagerly(True)
  if FLAGS.mode == 'eval' and not tf.train.latest_checkpoint(FLAGS.model_dir):
    _fail(f'--mode=eval: no checkpoint in --model_dir={FLAGS.model_dir}')
  # Configuration problems end with a one-line message, not a traceback.
  try:
    strategy = distribute_utils.strategy_from_runtime(runtime)
    with strategy.scope():
      task = task_factory.get_task(params.task, logging_dir=FLAGS.model_dir)
  except (ValueError, KeyError) as e:
    _fail(str(e.args[0]) if isinstance(e, KeyError) and e.args else str(e))
  try:
    if FLAGS.mode == 'continuous_train_and_eval':
      continuous_finetune_lib.run_continuous_finetune(FLAGS.mode, params, FLAGS.model_dir,
                                                      pretrain_steps=FLAGS.pretrain_steps,
                                                      distribution_strategy=strategy)
      return
    train_lib.run_experiment(strategy, task, FLAGS.mode, params, FLAGS.model_dir,
                             allow_config_change=FLAGS.allow_config_change,
                             enable_async_checkpointing=FLAGS.enable_async_checkpointing)
  except (ValueError, FileNotFoundError, KeyError, model_dir_lock.ModelDirLocked,
          checkpointing.TrainingStopped, checkpointing.CheckpointWriteError) as e:
    # Bad data or checkpoint paths, data that does not match the config (found while building
    # inputs), a model_dir in use or not writable, a run that cannot go on (non-finite loss or
    # weights; the message names the newest finite checkpoint), a checkpoint that cannot be
    # written; `--verbosity=1` logs the traceback too. TensorFlow runtime errors keep theirs.
    logging.debug('run_experiment failed', exc_info=True)
    _fail(str(e.args[0]) if isinstance(e, KeyError) and e.args else str(e))
  except (tf.errors.InvalidArgumentError, tf.errors.DataLossError) as e:
    # A record file cut short or corrupt, found while reading it: one line naming the file where
    # we know it (our end-of-file check), else the configured input (TensorFlow's own
    # "truncated/corrupted record at N" does not say which file).
    line = pretrain_dataloader.record_error_line(e)
    if line is None and isinstance(e, tf.errors.DataLossError):
      reason = (e.message or str(e)).strip().splitlines()[-1].strip()
      line = (f'task.train_data.input_path={params.task.train_data.input_path}: a truncated or '
              f'corrupt TFRecord ({reason}); rewrite the file, or check every file before '
              'training with task.train_data.verify_records=checksum')
    if line is None:
      raise
    _fail(line)


def help_text() -> str:
  """The usage (this module's docstring) and the flags `--help` lists.

  absl's own `--help` lists the key flags of the main module; under the `mlm-train` console script
  that module is the generated wrapper, which defines none, so the flags are listed from here.
  """
  return f'{__doc__.strip()}\n\nflags:\n{FLAGS.module_help(__name__)}'


def run() -> None:
  """Console-script entry point (`mlm-train`)."""
  if any(arg in ('--help', '-h', '-help', '--helpshort', '-?') for arg in sys.argv[1:]):
    print(help_text())  # asking for help is not an error: exit 0 (absl's --help exits 1)
    sys.exit(0)
  app.run(main)


if __name__ == '__main__':
  run()
