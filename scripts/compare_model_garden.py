"""Helper of `scripts/compare_model_garden.sh`: writes the run configs, checks them against a
framework's config classes, and reads the runs' results into one table.

Subcommands:
  split CORPUS OUT_DIR            documents (blank-line separated) -> OUT_DIR/train.txt (19 of 20)
                                  and OUT_DIR/eval.txt (every 20th document).
  write-config --out FILE ...     one override YAML for a run (data, batch, steps, schedule,
                                  runtime); it is passed after the shared model YAML, identically to
                                  both frameworks.
  check-config BASE OVERRIDE OUT  run with a framework's python: loads BASE then OVERRIDE strictly
                                  into its `bert/pretraining` config; if some key is unknown there,
                                  writes OUT without the unknown keys (printed as `dropped: a.b.c`)
                                  and prints OUT's path, else prints BASE's path.
  summarize RUN_DIR... --json F   per run: median steps/s (TensorBoard `steps_per_second` of
                                  model_dir/train, the first summary (tracing, warm-up) left out
                                  when there are more), the last eval `masked_lm_accuracy`
                                  (model_dir/validation) and its step. Runs of the same variant
                                  (speed rounds, `round` > 0 in variant.json) are one row: its
                                  steps/s is the median of the runs' figures, its accuracy the first
                                  run's. Prints the side-by-side table and writes it as JSON to F.
                                  Each RUN_DIR holds `variant.json` (written by the shell script)
                                  and `model/`. Also compares the effective params.yaml of the first
                                  Model Garden and mlm-garden runs.

Event files are read with `tf.compat.v1.train.summary_iterator` (no tensorboard package needed);
when a run has no summaries the steps/s rates are taken from its log (Model Garden: `steps/sec:`,
mlm-garden: `N steps/s`).
"""

import argparse
import json
import os
import re
import statistics
import sys
from typing import Any, Dict, List, Optional, Tuple


def _split(corpus: str, out_dir: str) -> None:
  with open(corpus, encoding='utf-8') as f:
    docs = [d.strip('\n') for d in f.read().split('\n\n') if d.strip()]
  os.makedirs(out_dir, exist_ok=True)
  for name, keep in (('train', lambda i: i % 20 != 0), ('eval', lambda i: i % 20 == 0)):
    with open(os.path.join(out_dir, f'{name}.txt'), 'w', encoding='utf-8') as f:
      f.write('\n\n'.join(d for i, d in enumerate(docs) if keep(i)) + '\n')
  print(f'{corpus}: {len(docs)} documents -> {len(docs) - (len(docs) + 19) // 20} train, '
        f'{(len(docs) + 19) // 20} eval')


def _write_config(args: argparse.Namespace) -> None:
  # Function-level: this script also runs under Model Garden's Python, which has its own packages.
  import yaml  # pylint: disable=g-import-not-at-top
  data = dict(seq_length=args.seq_length, max_predictions_per_seq=args.max_predictions_per_seq,
              global_batch_size=args.batch_size, use_next_sentence_label=True)
  config = {
      'task': {
          'model': {'encoder': {'type': 'bert', 'bert': {'vocab_size': args.vocab_size}}},
          'train_data': dict(input_path=args.train_path, is_training=True, **data),
          'validation_data': dict(input_path=args.eval_path, is_training=False, **data),
      },
      'trainer': {
          'train_steps': args.train_steps,
          'steps_per_loop': args.steps_per_loop,
          'summary_interval': args.steps_per_loop,
          'checkpoint_interval': args.train_steps,
          'validation_interval': args.train_steps,
          'validation_steps': args.validation_steps,
          'optimizer_config': {
              'learning_rate': {'type': 'polynomial', 'polynomial': {
                  'initial_learning_rate': args.learning_rate, 'decay_steps': args.schedule_steps,
                  'end_learning_rate': 0.0}},
              'warmup': {'type': 'polynomial', 'polynomial': {
                  'warmup_steps': max(1, args.schedule_steps // 10), 'power': 1}},
          },
      },
      'runtime': {
          'distribution_strategy': 'one_device',
          'num_gpus': 0,
          'enable_xla': args.xla,
          'mixed_precision_dtype': args.precision,
      },
  }
  with open(args.out, 'w', encoding='utf-8') as f:
    yaml.safe_dump(config, f, sort_keys=False)


def _unknown_keys(values: Any, reference: Any, prefix: str) -> List[str]:
  """Dotted paths of the keys of `values` (a YAML tree) that `reference` lacks.

  `reference` is a config's `as_dict()`.
  """
  unknown = []
  if isinstance(values, dict) and isinstance(reference, dict):
    for key, value in values.items():
      path = f'{prefix}{key}'
      if key not in reference:
        unknown.append(path)
      else:
        unknown.extend(_unknown_keys(value, reference[key], path + '.'))
  elif isinstance(values, list) and isinstance(reference, list) and reference:
    for i, value in enumerate(values):  # list items are checked against the default's first item
      unknown.extend(_unknown_keys(value, reference[0], f'{prefix}{i}.'))
  return unknown


def _drop(values: Any, path: List[str]) -> None:
  key = int(path[0]) if isinstance(values, list) else path[0]
  if len(path) == 1:
    del values[key]
  else:
    _drop(values[key], path[1:])


def _check_config(base: str, override: str, out: str) -> None:
  # Function-level: runs under either framework's Python, each with its own `official`.
  import yaml  # pylint: disable=g-import-not-at-top
  # Imported for its registrations (experiments and tasks).
  from official.common import registry_imports  # pylint: disable=g-import-not-at-top,unused-import  # noqa: F401
  from official.core import exp_factory  # pylint: disable=g-import-not-at-top
  from official.modeling import hyperparams  # pylint: disable=g-import-not-at-top
  import official  # pylint: disable=g-import-not-at-top
  print(f'official from {os.path.dirname(official.__file__)}', file=sys.stderr)
  reference = exp_factory.get_exp_config('bert/pretraining').as_dict()
  with open(base, encoding='utf-8') as f:
    values = yaml.safe_load(f)
  unknown = _unknown_keys(values, reference, '')
  use = base
  if unknown:
    for path in unknown:
      print(f'dropped: {path} (not a field of this framework\'s bert/pretraining config)',
            file=sys.stderr)
      _drop(values, path.split('.'))
    with open(out, 'w', encoding='utf-8') as f:
      yaml.safe_dump(values, f, sort_keys=False)
    use = out
  params = exp_factory.get_exp_config('bert/pretraining')
  for path in (use, override):
    params = hyperparams.override_params_dict(params, path, is_strict=True)
  params.validate()
  print(use)


def _events(directory: str) -> Dict[str, List[Tuple[int, float]]]:
  """Scalar summaries of one summary directory: tag -> [(step, value)] in step order (run with the
  project's Python, where `official` is ours)."""
  # Function-level: `official` here must be ours, not Model Garden's (see _check_config).
  from official.nlp.tools import training_curves  # pylint: disable=g-import-not-at-top
  return training_curves.read_scalars(directory)


_LOG_RATES = (re.compile(r'steps/sec:\s*([0-9.]+)'), re.compile(r'\|\s*([0-9.]+) steps/s\s*\|'))


def _log_rates(log_file: str) -> List[float]:
  if not os.path.exists(log_file):
    return []
  rates = []
  with open(log_file, encoding='utf-8', errors='replace') as f:
    for line in f:
      for pattern in _LOG_RATES:
        match = pattern.search(line)
        if match:
          rates.append(float(match.group(1)))
  return rates


def _median_rate(rates: List[float]) -> Optional[float]:
  if not rates:
    return None
  return statistics.median(rates[1:] if len(rates) > 1 else rates)


def _summarize_run(run_dir: str) -> Dict[str, Any]:
  with open(os.path.join(run_dir, 'variant.json'), encoding='utf-8') as f:
    row = json.load(f)
  model_dir = os.path.join(run_dir, 'model')
  train = _events(os.path.join(model_dir, 'train'))
  rates = [v for _, v in train.get('steps_per_second', [])]
  # The last training-loss summary (the mean over its loop of steps_per_loop steps).
  row['train_loss_step'], row['training_loss'] = train.get('training_loss', [(None, None)])[-1]
  row['rate_source'] = 'summaries'
  if not rates:
    rates, row['rate_source'] = _log_rates(os.path.join(run_dir, 'train.log')), 'log'
  row['steps_per_second_all'] = [round(r, 3) for r in rates]
  row['median_steps_per_second'] = _median_rate(rates)
  evals = _events(os.path.join(model_dir, 'validation'))
  accuracy = evals.get('masked_lm_accuracy', [])
  row['eval_step'], row['masked_lm_accuracy'] = accuracy[-1] if accuracy else (None, None)
  for tag in ('lm_example_loss', 'next_sentence_accuracy'):
    row[tag] = evals[tag][-1][1] if evals.get(tag) else None
  return row


def _combine_rounds(runs: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
  """One row per variant (in order of first appearance): the first run (round 0) with its steps/s
  replaced by the median over all the variant's runs; `runs` lists each run's round, start, steps/s
  and load."""
  groups: Dict[str, List[Dict[str, Any]]] = {}
  for run in runs:
    groups.setdefault(run['variant'], []).append(run)
  rows = []
  for group in groups.values():
    group = sorted(group, key=lambda r: r.get('round', 0))
    row = dict(group[0])
    row['runs'] = [{'round': r.get('round', 0), 'start': r.get('start'),
                    'train_steps': r['train_steps'],
                    'median_steps_per_second': r['median_steps_per_second'],
                    'loadavg_before': r.get('loadavg_before')} for r in group]
    rates = [r['median_steps_per_second'] for r in group
             if r['median_steps_per_second'] is not None]
    row['median_steps_per_second'] = statistics.median(rates) if rates else None
    rows.append(row)
  return rows


def _fmt(value: Any, spec: str = '') -> str:
  return '-' if value is None else format(value, spec)


# Fields that differ between variants on purpose.
_PER_VARIANT = ('runtime.mixed_precision_dtype', 'runtime.enable_xla', 'trainer.train_steps',
                'trainer.checkpoint_interval', 'trainer.validation_interval')


def _config_differences(mg_dir: str, ours_dir: str) -> List[str]:
  """Fields of the two runs' effective params.yaml that both frameworks have and that differ."""
  # Function-level: runs with the project's Python (`official` is ours there), not Model Garden's.
  import yaml  # pylint: disable=g-import-not-at-top
  from official.common import nested  # pylint: disable=g-import-not-at-top
  flat = []
  for run_dir in (mg_dir, ours_dir):
    with open(os.path.join(run_dir, 'model', 'params.yaml'), encoding='utf-8') as f:
      flat.append(nested.flatten(yaml.safe_load(f)))
  mg, ours = flat
  return [f'{key}: model_garden={mg[key]!r} mlm_garden={ours[key]!r}'
          for key in sorted(set(mg) & set(ours))
          if mg[key] != ours[key] and key not in _PER_VARIANT]


def _reference(rows: List[Dict[str, Any]], dtype: str) -> Optional[Dict[str, Any]]:
  """The Model Garden run of `dtype` (the longest one when there are several)."""
  runs = [r for r in rows if r['framework'] == 'model_garden' and r['dtype'] == dtype]
  return max(runs, key=lambda r: r['train_steps']) if runs else None


def _ratio(row: Dict[str, Any], reference: Optional[Dict[str, Any]]) -> Optional[float]:
  rate = row['median_steps_per_second']
  base = reference['median_steps_per_second'] if reference else None
  return rate / base if rate and base else None


def _summarize(run_dirs: List[str], json_path: str, settings: Optional[str] = None) -> None:
  rows = _combine_rounds([_summarize_run(d) for d in run_dirs])
  differences = None
  mg_dir = next((d for d, r in zip(run_dirs, rows) if r['framework'] == 'model_garden'), None)
  ours_dir = next((d for d, r in zip(run_dirs, rows) if r['framework'] == 'mlm_garden'), None)
  if mg_dir and ours_dir and all(os.path.exists(os.path.join(d, 'model', 'params.yaml'))
                                 for d in (mg_dir, ours_dir)):
    differences = _config_differences(mg_dir, ours_dir)
    print(f'effective configs (params.yaml of {os.path.basename(mg_dir)} and '
          f'{os.path.basename(ours_dir)}): '
          + ('fields both frameworks have are identical (apart from dtype, XLA and steps)'
             if not differences else f'{len(differences)} shared field(s) differ:'))
    for line in differences:
      print(f'  {line}')
  mg_float32, mg_bfloat16 = _reference(rows, 'float32'), _reference(rows, 'bfloat16')
  header = ('variant', 'framework', 'dtype', 'xla', 'steps', 'steps/s', 'per run', 'vs MG fp32',
            'vs MG bf16', 'eval MLM acc', 'vs MG fp32 (pts)', 'eval MLM loss', 'eval NSP acc',
            'train loss', 'wall s',
            'load 1m before/after')
  lines = []
  for r in rows:
    r['speedup_vs_mg_float32'] = _ratio(r, mg_float32)
    r['speedup_vs_mg_bfloat16'] = _ratio(r, mg_bfloat16)
    # Accuracy difference in points, only against the Model Garden float32 run of the same length.
    same = (mg_float32 and r['masked_lm_accuracy'] is not None
            and mg_float32['masked_lm_accuracy'] is not None
            and r['eval_step'] == mg_float32['eval_step'])
    r['mlm_accuracy_points_vs_mg_float32'] = (
        100 * (r['masked_lm_accuracy'] - mg_float32['masked_lm_accuracy']) if same else None)
    lines.append((r['variant'], r['framework'], r['dtype'], 'on' if r['xla'] else 'off',
                  str(r['train_steps']),
                  _fmt(r['median_steps_per_second'], '.3f'),
                  ' '.join(_fmt(run['median_steps_per_second'], '.3f') for run in r['runs']),
                  _fmt(r['speedup_vs_mg_float32'], '.2f') +
                  ('x' if r['speedup_vs_mg_float32'] else ''),
                  _fmt(r['speedup_vs_mg_bfloat16'], '.2f') +
                  ('x' if r['speedup_vs_mg_bfloat16'] else ''),
                  _fmt(r['masked_lm_accuracy'], '.4f') +
                  (f' @{r["eval_step"]}' if r['eval_step'] else ''),
                  _fmt(r['mlm_accuracy_points_vs_mg_float32'], '+.2f'),
                  _fmt(r['lm_example_loss'], '.3f'), _fmt(r['next_sentence_accuracy'], '.4f'),
                  _fmt(r['training_loss'], '.3f') +
                  (f' @{r["train_loss_step"]}' if r['train_loss_step'] else ''),
                  _fmt(r.get('wall_seconds'), '.0f'),
                  f"{r.get('loadavg_before', '-').split(' ')[0]}/"
                  f"{r.get('loadavg_after', '-').split(' ')[0]}"))
  widths = [max(len(h), *(len(line[i]) for line in lines)) for i, h in enumerate(header)]
  print('  '.join(h.ljust(w) for h, w in zip(header, widths)))
  print('  '.join('-' * w for w in widths))
  for line in lines:
    print('  '.join(c.ljust(w) for c, w in zip(line, widths)))
  print('steps/s: per run, the median of its steps_per_second summaries (one per loop of '
        'steps_per_loop steps), the first left out (tracing/warm-up); per variant, the median of '
        'its runs ("per run", in order of rounds); "vs MG": ratios of steps/s; "(pts)": MLM '
        "accuracy minus Model Garden float32's at the same step, in points; eval MLM loss: "
        "the last evaluation's lm_example_loss; train loss: the last training_loss summary (the "
        'mean over its loop); wall s and load: the first run')
  report: Dict[str, Any] = {}
  if settings and os.path.exists(settings):
    with open(settings, encoding='utf-8') as f:
      report['settings'] = json.load(f)
  report.update(runs=rows, config_differences=differences)
  with open(json_path, 'w', encoding='utf-8') as f:
    json.dump(report, f, indent=2)
  print(f'wrote {json_path}')


# Old flag names -> the names shared by the tools (`official.common.cli_utils.renamed_flags`).
RENAMED_FLAGS = {'dtype': 'precision'}


def _renamed_flags(argv: Optional[List[str]]) -> List[str]:
  """`argv` (default: the command line) with the old flag names of `RENAMED_FLAGS` spelt the new
  way, with a note on stderr. `cli_utils` is imported only when an old name is there: under Model
  Garden's python (check-config) `official` is Model Garden's package."""
  argv = list(sys.argv[1:] if argv is None else argv)
  names = [arg[2:].partition('=')[0] for arg in argv if arg.startswith('--')]
  if not any(name in RENAMED_FLAGS for name in names):
    return argv
  # Function-level: under Model Garden's python (check-config) `official` is Model Garden's.
  from official.common import cli_utils  # pylint: disable=g-import-not-at-top
  return cli_utils.renamed_flags(argv, RENAMED_FLAGS, 'compare_model_garden')


def main(argv: Optional[List[str]] = None) -> int:
  argv = _renamed_flags(argv)
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  sub = parser.add_subparsers(dest='command', required=True)
  p = sub.add_parser('split')
  p.add_argument('corpus')
  p.add_argument('out_dir')
  p = sub.add_parser('write-config')
  p.add_argument('--out', required=True)
  p.add_argument('--train_path', required=True)
  p.add_argument('--eval_path', required=True)
  p.add_argument('--vocab_size', type=int, required=True)
  p.add_argument('--seq_length', type=int, default=128)
  p.add_argument('--max_predictions_per_seq', type=int, default=20)
  p.add_argument('--batch_size', type=int, default=32)
  p.add_argument('--train_steps', type=int, required=True)
  p.add_argument('--schedule_steps', type=int, required=True,
                 help='learning-rate decay steps (warmup: a tenth of them)')
  p.add_argument('--learning_rate', type=float, default=5e-4)
  p.add_argument('--steps_per_loop', type=int, default=50)
  p.add_argument('--validation_steps', type=int, default=50)
  p.add_argument('--precision', choices=('float32', 'bfloat16', 'float16'), default='float32',
                 help='runtime.mixed_precision_dtype')
  p.add_argument('--xla', type=lambda s: s.lower() in ('1', 'true', 'yes', 'on'), default=False)
  p = sub.add_parser('check-config')
  p.add_argument('base')
  p.add_argument('override')
  p.add_argument('out')
  p = sub.add_parser('summarize')
  p.add_argument('run_dirs', nargs='+')
  p.add_argument('--json', required=True)
  p.add_argument('--settings',
                 help='a JSON file of the comparison settings, copied into the report')
  args = parser.parse_args(argv)
  if args.command == 'split':
    _split(args.corpus, args.out_dir)
  elif args.command == 'write-config':
    _write_config(args)
  elif args.command == 'check-config':
    _check_config(args.base, args.override, args.out)
  else:
    for run_dir in args.run_dirs:
      if not os.path.exists(os.path.join(run_dir, 'variant.json')):
        parser.error(f'summarize: {run_dir}: no variant.json; expected a run directory written by '
                     'scripts/compare_model_garden.sh')
    _summarize(args.run_dirs, args.json, args.settings)
  return 0


if __name__ == '__main__':
  sys.exit(main())
