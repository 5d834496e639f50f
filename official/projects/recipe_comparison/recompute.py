"""Recomputes the recipe table of a dated measurement from its stored run results.

A results file (`results/<date>_*.json`) holds each pretraining run of that measurement as the
sweep stores it (`runs`: name, configuration, cell, seed, steps and held-out losses). This picks
each cell's best configuration and prints the Welch tests over the pretraining seeds, the table
`results.md` prints after a sweep, so a figure of a dated page can be checked from its inputs.

With `--power_with_runs=N` it prints instead what each downstream row of the page
(`downstream.run_level_tests`, two-level) could detect with N pretraining runs a recipe and with
any number (the test set's floor), beside what it detects now (`claims.detectable_with_runs`):
whether more pretraining seeds can bring a difference within reach.

Usage:
  .venv/bin/python -m official.projects.recipe_comparison.recompute \
      official/projects/recipe_comparison/results/2026-12-01_brown_pretraining_avx2.json
  .venv/bin/python -m official.projects.recipe_comparison.recompute --power_with_runs=5 \
      --tasks=brown_genre \
      official/projects/recipe_comparison/results/2026-12-04_one_machine_amx.json
"""

import argparse
import json
import math
import sys
from typing import Any, Dict, List, Optional, Sequence

from official.nlp.tools import claims
from official.projects.recipe_comparison import grid
from official.projects.recipe_comparison import report
from official.projects.recipe_comparison import run_results


def _load(path: str) -> Any:
  """The JSON in `path`; ValueError naming the file when it is not JSON."""
  with open(path, encoding='utf-8') as f:
    try:
      return json.load(f)
    except json.JSONDecodeError as e:
      raise ValueError(f'{path}: expected a results/<date>_*.json file, found text that is not '
                       f'JSON ({e})') from e


def recipe_table(path: str) -> List[str]:
  """The markdown lines of the recipe tests of the stored runs in `path`.

  Raises:
    ValueError: the file is not a results file (no `runs`), naming it.
  """
  stored = _load(path)
  runs = stored.get('runs') if isinstance(stored, dict) else None
  if not runs:
    raise ValueError(f'{path}: expected a results file with "runs" (results/<date>_*.json), '
                     f'found keys {sorted(stored) if isinstance(stored, dict) else type(stored)}')
  best = run_results.best_runs(runs)
  cells = [cell.name for cell in grid.ALL_CELLS if cell.name in best]
  header = [f"{stored.get('measured', 'n/a')}, {stored.get('cpu', 'n/a')}: the best "
            'configuration of each cell: ' + ', '.join(f'{cell} {best[cell]}' for cell in cells)]
  return header + report.recipe_test_lines(run_results.recipe_tests(runs, best, cells))


def power_table(path: str, planned_runs: int, tasks: Optional[Sequence[str]] = None
                ) -> List[str]:
  """The markdown lines of what each downstream row of `path` could detect with `planned_runs`.

  Args:
    path: a dated page's JSON whose `downstream.run_level_tests` hold two-level intervals.
    planned_runs: pretraining runs a recipe to project to.
    tasks: the tasks (a subset row counts as its task) making one Holm family, as the page's
      table; None: every row of the file.

  The detectable differences are at 80% power, alpha 0.05 over the selected rows (Holm's
  strictest level). Rows against a random-init control (its fine-tuning seeds as the other
  sample, which more pretraining seeds do not add to) are not projected.

  Raises:
    ValueError: no two-level rows (or none of `tasks`), naming the file.
  """
  stored = _load(path)
  tests = (stored.get('downstream', {}).get('run_level_tests', [])
           if isinstance(stored, dict) else [])
  selected = [t for t in tests if 'two_level_dof' in t
              and (tasks is None or t['task'].split(',')[0] in tasks)]
  if not selected:
    raise ValueError(f'{path}: expected downstream.run_level_tests with two-level intervals'
                     + (f' for tasks {",".join(tasks)}' if tasks else '') + ', found none')
  lines = [f'{stored.get("measured", "n/a")}, {stored.get("cpu", "n/a")}: what each row could '
           f'detect (80% power, alpha 0.05 / {len(selected)}), points',
           f'| task | A | B | runs | A - B | detectable now | with {planned_runs} runs a recipe | '
           'with any number (test set) |', '|---|---|---|---|---|---|---|---|']
  for t in selected:
    lines.append(_power_row(t, planned_runs, len(selected)))
  return lines


def _power_row(test: Dict[str, Any], planned_runs: int, family: int) -> str:
  welch = (test['low'], test['high'], test['dof'])
  two_level = (test['two_level_low'], test['two_level_high'], test['two_level_dof'])
  now = claims.detectable_difference(claims.standard_error_of(*two_level), two_level[2],
                                     tests=family)
  runs_b = 'deterministic' if test['runs_b'] is None else test['runs_b']
  projected = ['n/a (a control)'] * 2
  if test['runs_b'] in (None, test['runs_a']):
    projected = [f'{100 * value:.1f}' for value in (
        claims.detectable_with_runs(welch, two_level, test['runs_a'], runs, tests=family)
        for runs in (planned_runs, math.inf))]
  return (f'| {test["task"]} | {test["a"]} | {test["b"]} | {test["runs_a"]} / {runs_b} | '
          f'{100 * test["difference"]:+.2f} | {100 * now:.1f} | ' + ' | '.join(projected) + ' |')


def main(argv: Optional[Sequence[str]] = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
  parser.add_argument('results', help='a results/<date>_*.json file')
  parser.add_argument('--power_with_runs', type=int, default=None,
                      help='print what each downstream row could detect with this many '
                      'pretraining runs a recipe (2 or more), instead of the recipe table')
  parser.add_argument('--tasks', default=None,
                      help='with --power_with_runs: comma-separated tasks making the Holm family '
                      '(default: every row of the file)')
  args = parser.parse_args(argv)
  if args.power_with_runs is not None and args.power_with_runs < 2:
    parser.error(f'--power_with_runs: expected 2 or more runs, found {args.power_with_runs}')
  try:
    if args.power_with_runs is None:
      print('\n'.join(recipe_table(args.results)))
    else:
      tasks = args.tasks.split(',') if args.tasks else None
      print('\n'.join(power_table(args.results, args.power_with_runs, tasks)))
  except (OSError, ValueError) as e:
    print(f'error: {e}', file=sys.stderr)
    return 2
  return 0


if __name__ == '__main__':
  sys.exit(main())
