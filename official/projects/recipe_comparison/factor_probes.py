"""The factor probes of the BERT plateau side by side: one row a `model_garden_peer` run of ours.

Each probe changes one thing of the study's BERT run (the encoder type or a field, the peak rate,
the warmup); its row shows what changed, the steps and rows seen, the held-out masked-LM loss on
the in-domain set at every checkpoint and, at the last one, the accuracy and the out-of-domain
loss, beside the context-free predictor.

Usage:
  .venv/bin/python -m official.projects.recipe_comparison.factor_probes \
      /work/ttq_mg/study/model_garden_peer/lr0.001_b2_0.98-do0.1_1000steps_wu0.1_s0 \
      /work/ttq_mg/study/model_garden_peer/ablation_lr0.001_b2_0.98-do0.1_1000steps_wu0.1_s0_positions-rotary
"""

import argparse
import json
import os
import sys
from typing import Any, Dict, List, Mapping, Optional, Sequence

# The study's BERT run (`model_garden_peer`'s defaults): what a probe's row says it changed.
BASELINE = dict(encoder='bert', learning_rate=1e-3, warmup_fraction=0.1)


def change(settings: Mapping[str, Any]) -> str:
  """What a run changed from the study's BERT run, e.g. 'rotary positions' or 'none'.

  Example:
    >>> change({'encoder': 'ablation', 'encoder_fields': {'positions': 'rotary'},
    ...         'learning_rate': 1e-3, 'warmup_fraction': 0.1})
    'ablation encoder: positions=rotary'
  """
  parts = []
  encoder = settings.get('encoder', 'bert')  # runs before --encoder existed were BERT's
  fields = ', '.join(f'{k}={v}' for k, v in (settings.get('encoder_fields') or {}).items())
  if encoder != BASELINE['encoder']:
    parts.append(f'{encoder} encoder' + (f': {fields}' if fields else ''))
  elif fields:
    parts.append(fields)
  for key, label in (('learning_rate', 'peak rate'), ('warmup_fraction', 'warmup')):
    if settings[key] != BASELINE[key]:
      parts.append(f'{label} {settings[key]:g}')
  return '; '.join(parts) or 'none (the study\'s BERT run)'


def table(results: Sequence[Mapping[str, Any]], seq_length: int = 128) -> str:
  """The Markdown table of `results` (each a run's `results.json`), in their order.

  Args:
    results: the runs' results (`settings`, `evaluations['mlm_garden']`, `context_free`).
    seq_length: tokens a row (for the tokens seen: steps x batch x seq_length, padding included).

  Returns:
    One row a run, the context-free predictor's (of the first run) last, its loss in every
    step's column.
  """
  steps = sorted({int(s) for r in results for s in r['evaluations']['mlm_garden']})
  header = (['change from the study\'s BERT run', 'seed', 'steps', 'rows x 128 tokens seen']
            + [f'in-domain loss at {s:,}' for s in steps]
            + ['in-domain acc (last)', 'OOD loss (last)'])
  lines = ['| ' + ' | '.join(header) + ' |', '|' + '---|' * len(header)]
  for result in results:
    settings, ours = result['settings'], result['evaluations']['mlm_garden']
    last = ours[str(max(int(s) for s in ours))]
    cells = [change(settings), str(settings['seed']), f"{settings['steps']:,}",
             f"{settings['steps'] * settings['batch_size'] * seq_length / 1e6:.1f} M"]
    cells += [format(ours[str(s)]['in_domain']['lm_example_loss'], '.3f') if str(s) in ours
              else '' for s in steps]
    cells += [format(last['in_domain']['masked_lm_accuracy'], '.3f'),
              format(last['ood']['lm_example_loss'], '.3f')]
    lines.append('| ' + ' | '.join(cells) + ' |')
  context_free = results[0]['context_free']  # needs no training: the same at every step
  lines.append('| ' + ' | '.join(
      ['context-free predictor', '', '', '']
      + [format(context_free['in_domain']['lm_example_loss'], '.3f')] * len(steps)
      + [format(context_free['in_domain']['masked_lm_accuracy'], '.3f'),
         format(context_free['ood']['lm_example_loss'], '.3f')]) + ' |')
  return '\n'.join(lines)


def read_results(run_dirs: Sequence[str]) -> List[Dict[str, Any]]:
  """Each run's `results.json`; a SystemExit naming a folder without one."""
  results = []
  for run_dir in run_dirs:
    path = os.path.join(run_dir, 'results.json')
    if not os.path.exists(path):
      raise SystemExit(f'factor_probes: error: {run_dir}: no results.json (run model_garden_peer '
                       'there, or with --no_train to evaluate a stopped run)')
    with open(path, encoding='utf-8') as f:
      results.append(json.load(f))
  return results


def main(argv: Optional[Sequence[str]] = None) -> str:
  parser = argparse.ArgumentParser(description=__doc__.split('\n', 1)[0])
  parser.add_argument('run_dirs', nargs='+', help="model_garden_peer run folders")
  args = parser.parse_args(argv)
  text = table(read_results(args.run_dirs))
  print(text)
  return text


if __name__ == '__main__':
  main()
  sys.exit(0)
