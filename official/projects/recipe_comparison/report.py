"""results.md (the tables) and the curves plot."""

import math
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from official.projects.recipe_comparison import grid
from official.projects.recipe_comparison import run_results


def _number(value: Optional[float], fmt: str) -> str:
  if value is None or (isinstance(value, float) and math.isnan(value)):
    return 'n/a'
  return fmt.format(value)


def _count(value: float) -> str:
  """A count for the tables: '812,032' below 10 million, '12.35M' from there."""
  return f'{value:,.0f}' if value < 1e7 else f'{value / 1e6:.2f}M'


def markdown_report(results: Mapping[str, Any]) -> str:
  """results.md: the context-free predictor, the sweep, the best run per cell, downstream.

  Args:
    results: `results.json`'s content (`settings`, `context_free`, `runs`, `best`, and
      optionally `downstream` with a `markdown` table).

  Returns:
    Markdown text.
  """
  settings, free, runs, best = (results['settings'], results['context_free'], results['runs'],
                                results['best'])
  budget = (f"{settings['train_steps']:,} steps a run" if settings.get('train_steps') else
            f"Budget {settings['budget_minutes']:g} minutes a run")
  lines = [f"{budget}, one core each "
           f"({settings.get('cpu', 'n/a')}; {settings['batch_size']} rows of "
           f"{grid.SEQ_LENGTH} tokens a step, {settings['mixed_precision']}); "
           f"corpus: {settings.get('corpus', 'n/a')}; "
           f"out-of-domain: {settings.get('ood_corpus', 'n/a')}. Held-out records: single "
           'segments, 15% masked, one fixed set of positions. Loss: cross-entropy (nats) of the '
           'masked positions, the mean over batches of 32 (`lm_example_loss`).', '',
           '### Context-free predictor', '',
           '| held-out set | records | masked targets | of them kept (copied) | loss | accuracy '
           '| token frequencies alone: loss | accuracy |', '|---|---|---|---|---|---|---|---|']
  for name in grid.HELD_OUT_SETS:
    f = free[name]
    lines.append(f"| {_SET_LABELS[name]} | {f['records']:,} | {f['masked_targets']:,} | "
                 f"{f['kept']:,} | {f['lm_example_loss']:.3f} | {f['masked_lm_accuracy']:.3f} | "
                 f"{f['unigram_lm_example_loss']:.3f} | {f['unigram_masked_lm_accuracy']:.3f} |")
  lines += ['', '### The sweep (best learning rate of each cell in bold)', '',
            '| cell | peak lr | steps (planned) | minutes | tokens seen | real tokens | '
            'masked targets seen | in-domain loss | in-domain acc | lowest in-domain loss during '
            'the run (step) | OOD loss | OOD acc |',
            '|---|---|---|---|---|---|---|---|---|---|---|---|']
  curves = results.get('curves') or {}
  order = {cell.name: i for i, cell in enumerate(grid.ALL_CELLS)}
  for name, run in sorted(runs.items(), key=lambda item: (
      order[item[1]['cell']], item[1]['learning_rate'], item[1].get('config', ''),
      item[1].get('seed', 0))):
    bold = (lambda text: f'**{text}**') if best.get(run['cell']) == name else (lambda text: text)
    held = run['held_out']
    stopped = ', cut off after the budget' if run['stopped_at_budget'] else ''
    variant = run.get('variant')
    config = format(run['learning_rate'], 'g') + (
        f", beta2 {variant['beta_2']:g}, dropout {variant['dropout']:g}" if variant else '') + (
            f", seed {run['seed']}" if run.get('seed') else '')
    lines.append(
        f"| {_cell_label(run['cell'])} | {bold(config)} | "
        f"{run['steps']:,} ({run['planned_steps']:,}{stopped}) | {run['minutes']:.1f} | "
        f"{_count(run['tokens_seen'])} | {_count(run['real_tokens_seen'])} | "
        f"{_count(run['masked_targets_seen'])} | "
        f"{bold(_number(held['in_domain']['lm_example_loss'], '{:.3f}'))} | "
        f"{_number(held['in_domain']['masked_lm_accuracy'], '{:.3f}')} | "
        f"{_lowest_point(curves.get(name))} | "
        f"{_number(held['ood']['lm_example_loss'], '{:.3f}')} | "
        f"{_number(held['ood']['masked_lm_accuracy'], '{:.3f}')} |")
  cells = [cell for cell in grid.ALL_CELLS if cell.name in best]
  if cells:
    chosen = [runs[best[cell.name]] for cell in cells]
    lines += ['', '### The best run of each cell', '',
              '| | ' + ' | '.join(cell.label for cell in cells) + ' | context-free predictor |',
              '|---' * (len(cells) + 2) + '|']

    def row(label, values, free_value='—'):
      lines.append(f'| {label} | ' + ' | '.join(values) + f' | {free_value} |')

    row('data recipe', [grid.DATA_RECIPES[cell.data].description for cell in cells])
    row('peak learning rate', [format(run['learning_rate'], 'g') for run in chosen])
    row('steps', [f"{run['steps']:,}" for run in chosen])
    row('wall-clock minutes', [f"{run['minutes']:.1f}" for run in chosen])
    row('tokens seen (rows x 128)', [_count(run['tokens_seen']) for run in chosen])
    row('real (non-padding) tokens seen', [_count(run['real_tokens_seen']) for run in chosen])
    row('padding fraction', [f"{run['padding_fraction']:.3f}" for run in chosen])
    row('masked targets seen', [_count(run['masked_targets_seen']) for run in chosen])
    for name in grid.HELD_OUT_SETS:
      for key, label in (('lm_example_loss', 'masked-LM loss'),
                         ('masked_lm_accuracy', 'masked-LM accuracy')):
        row(f'{_SET_LABELS[name]} held-out {label}',
            [_number(run['held_out'][name][key], '{:.3f}') for run in chosen],
            f'{free[name][key]:.3f}')
    row('in-domain loss below the context-free predictor',
        ['yes' if (run['held_out']['in_domain']['lm_example_loss'] or math.inf)
         < free['in_domain']['lm_example_loss'] else '**no**' for run in chosen])
  lines += recipe_test_lines(results.get('recipe_tests') or [])
  lines += _ablation_lines(results.get('ablation_tests') or [])
  downstream = results.get('downstream')
  if downstream and downstream.get('markdown'):
    lines += ['', '### Downstream (the best run of each cell named)', '', downstream['markdown']]
  return '\n'.join(lines) + '\n'


_SET_LABELS = {'in_domain': 'in-domain', 'ood': 'out-of-domain'}


def checkpoint_lines(rows: Mapping[str, Mapping[str, Any]]) -> List[str]:
  """The table of the pretraining runs a downstream table fine-tunes: what each saw.

  Args:
    rows: the downstream table's row name -> its pretraining run's `run_results.run_result`.

  Returns:
    Markdown lines: per row its steps, tokens (rows x 128) and masked targets seen, and its
    in-domain held-out loss, so that a table's conclusions can be read at the data each side saw.

  Example:
    >>> checkpoint_lines({'modern_arch-modern_data-lr0.003': runs['modern-modern_lr0.003']})[2]
    '| modern_arch-modern_data-lr0.003 | 1,500 | 6,144,000 | 1,463,808 | 4.354 |'
  """
  lines = ['| pretrained row | steps | tokens seen | masked targets seen | '
           'in-domain held-out loss |', '|---|---|---|---|---|']
  for row, run in rows.items():
    lines.append(f"| {row} | {run['steps']:,} | {_count(run['tokens_seen'])} | "
                 f"{_count(run['masked_targets_seen'])} | "
                 f"{_number(run['held_out']['in_domain']['lm_example_loss'], '{:.3f}')} |")
  return lines


def recipe_test_lines(tests: Sequence[Dict[str, Any]]) -> List[str]:
  """The markdown table of `run_results.recipe_tests` (none without tests).

  Example:
    >>> recipe_test_lines(run_results.recipe_tests(runs, best, ['bert-bert', 'modern-modern']))[-2]
    '| BERT arch x BERT data | modern arch x modern data | in-domain | 3 / 3 | +1.720 | ...'
  """
  if not tests:
    return []
  from official.nlp.tools import claims  # Function-level: as in `recipe_tests`.
  from official.nlp.tools import significance  # Function-level: as in `recipe_tests`.
  lines = ['', '### Recipes over pretraining seeds (best configuration of each)', '',
           'Welch\'s t-test over the seeds\' held-out losses, 95% interval of the difference '
           '(A - B, negative: A better), p Holm-adjusted over this table; the claim by '
           '`claims.verdict` (no equivalence margin: never a tie), and the smallest difference '
           'the row could detect with 80% power at the table\'s strictest Holm level.', '',
           '| A | B | held-out set | seeds | A - B (loss) | 95% interval | p (Holm) | claim | '
           'detectable, 80% power |',
           '|---|---|---|---|---|---|---|---|---|']
  for test in tests:
    claim = claims.verdict(test['difference'], test['low'], test['high'], test['p_holm'],
                           higher_is_better=False)
    detectable = claims.detectable_difference(
        claims.standard_error_of(test['low'], test['high'], test['dof']), test['dof'],
        tests=len(tests))
    lines.append(f"| {_cell_label(test['a'])} | {_cell_label(test['b'])} | "
                 f"{_SET_LABELS[test['held_out']]} | {test['seeds_a']} / {test['seeds_b']} | "
                 f"{test['difference']:+.3f} | [{test['low']:+.3f}, {test['high']:+.3f}] | "
                 f"{significance.format_p(test['p_holm'])} | {claim} | {detectable:.3f} |")
  return lines


def _ablation_lines(tests: Sequence[Dict[str, Any]]) -> List[str]:
  """The markdown table of `ablation_tests` (none without tests)."""
  if not tests:
    return []
  from official.nlp.tools import significance  # Function-level: as in `recipe_tests`.
  lines = ['', '### The ablation, one factor at a time (at an optimizer setting all cells ran)',
           '', 'Each cell\'s best configuration at the setting named (beta2 / dropout / AdamW '
           'epsilon); optimizer/regularisation: the cell\'s best configuration overall against '
           'that one. Welch\'s t-test over the seeds\' held-out losses, 95% interval of the '
           'difference (A - B, negative: A better), p Holm-adjusted over this table.', '',
           '| factor | setting | A | B | held-out set | seeds | A - B (loss) | 95% interval | '
           'p (Holm) |', '|---|---|---|---|---|---|---|---|---|']
  for test in tests:
    lines.append(f"| {test['factor']} | {test['setting']} | {test['a_config']} | "
                 f"{test['b_config']} | {_SET_LABELS[test['held_out']]} | "
                 f"{test['seeds_a']} / {test['seeds_b']} | {test['difference']:+.3f} | "
                 f"[{test['low']:+.3f}, {test['high']:+.3f}] | "
                 f"{significance.format_p(test['p_holm'])} |")
  return lines


def _cell_label(name: str) -> str:
  return next(cell.label for cell in grid.ALL_CELLS if cell.name == name)


def _lowest_point(curve: Optional[Sequence[Tuple[float, int, float]]]) -> str:
  """'4.410 (2,400)': the lowest loss of a `run_curve` and its step ('—' without a curve); below
  the final loss, the run overfitted (or its schedule ended high) after that step."""
  points = [(loss, step) for _, step, loss in curve or ()
            if loss is not None and math.isfinite(loss)]
  if not points:
    return '—'
  loss, step = min(points)
  return f'{loss:.3f} ({step:,})'


def run_curve(work_dir: str, run: Mapping[str, Any]) -> List[Tuple[float, int, float]]:
  """(minutes since the run started, step, in-domain held-out loss) of the run's evaluations,
  ending with the final checkpoint's (at the run's end) when training stopped between two."""
  model_dir = os.path.join(grid.run_of(run).directory(work_dir), 'model')
  series = run_results.read_events(os.path.join(model_dir, 'validation')).get('lm_example_loss', [])
  curve = [((wall - run['started']) / 60, step, value) for step, wall, value in series]
  if not curve or curve[-1][1] < run['steps']:
    curve.append((run['minutes'], run['steps'], run['held_out']['in_domain']['lm_example_loss']))
  return curve



def plot_curves(curves: Mapping[str, List[Tuple[float, int, float]]], runs: Mapping[str, Any],
                best: Mapping[str, str], free: Mapping[str, Any], output_path: str) -> str:
  """Held-out in-domain loss against wall-clock minutes: every run (the best of each cell bold),
  the context-free predictor dashed."""
  import matplotlib  # Function-level: the [plot] extra.
  matplotlib.use('Agg')
  from matplotlib import pyplot  # Function-level: as above.
  figure, axes = pyplot.subplots(figsize=(9, 5))
  colors = {cell.name: f'C{i}' for i, cell in enumerate(grid.ALL_CELLS)}
  for name, curve in sorted(curves.items()):
    if not curve:
      continue
    run = runs[name]
    is_best = best.get(run['cell']) == name
    axes.plot([m for m, _, _ in curve], [v for _, _, v in curve], marker='.',
              color=colors[run['cell']], linewidth=2.2 if is_best else 0.8,
              alpha=1.0 if is_best else 0.45,
              label=f"{_cell_label(run['cell'])}, lr {run['learning_rate']:g}")
  axes.axhline(free['in_domain']['lm_example_loss'], color='black', linestyle='--',
               linewidth=1, label='context-free predictor')
  axes.set_xlim(left=0)
  axes.set_xlabel('wall-clock minutes since the run started')
  axes.set_ylabel('held-out in-domain masked-LM loss (15%)')
  axes.grid(alpha=0.3)
  axes.legend(fontsize=7)
  figure.tight_layout()
  figure.savefig(output_path, dpi=100)
  pyplot.close(figure)
  return output_path
