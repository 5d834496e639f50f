"""The results of the Model Garden comparison (`official.benchmark.compare_model_garden`): one
table and one JSON of the runs.

Per run directory (`variant.json`, written by the comparison, and `model/`): the median steps/s
(TensorBoard `steps_per_second` of model/train, the first summary (tracing, warm-up) left out when
there are more), the last eval `masked_lm_accuracy` (model/validation) and its step. Runs of the
same variant (speed rounds, `round` > 0 in variant.json) are one row: its steps/s is the median of
the runs' figures, its accuracy the first run's. Also compares the effective params.yaml of the
first Model Garden and mlm-garden runs.

Event files are read with `training_curves.read_scalars` (no tensorboard package needed); when a run
has no summaries the steps/s rates are taken from its log (Model Garden: `steps/sec:`, mlm-garden:
`N steps/s`).

Example:
  >>> summarize(['/tmp/mg-compare/runs/mg-float32-1000', '/tmp/mg-compare/runs/ours-best-1000'],
  ...           '/tmp/mg-compare/results.json')
"""

import json
import os
import re
import statistics
from typing import Any, Dict, List, Optional, Tuple

import yaml

from official.common import nested
from official.nlp.tools import training_curves


def _events(directory: str) -> Dict[str, List[Tuple[int, float]]]:
  """Scalar summaries of one summary directory: tag -> [(step, value)] in step order."""
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


def summarize(run_dirs: List[str], json_path: str, settings: Optional[str] = None) -> None:
  """Prints the side-by-side table of the runs and writes it as JSON.

  Args:
    run_dirs: the run directories (each with `variant.json` and `model/`), in the table's order.
    json_path: the JSON file to write (`settings`, `runs`, `config_differences`).
    settings: a JSON file of the comparison's settings, copied into the report when it exists.

  Example:
    >>> summarize(['runs/mg-float32-1000', 'runs/ours-best-1000'], 'results.json')
  """
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
