"""Recomputes the recipe table of a dated measurement from its stored run results.

A results file (`results/<date>_*.json`) holds each pretraining run of that measurement as the
sweep stores it (`runs`: name, configuration, cell, seed, steps and held-out losses). This picks
each cell's best configuration and prints the Welch tests over the pretraining seeds, the table
`results.md` prints after a sweep, so a figure of a dated page can be checked from its inputs.

Usage:
  .venv/bin/python -m official.projects.recipe_comparison.recompute \
      official/projects/recipe_comparison/results/2026-12-01_brown_pretraining_avx2.json
"""

import argparse
import json
import sys
from typing import List, Optional, Sequence

from official.projects.recipe_comparison import grid
from official.projects.recipe_comparison import report
from official.projects.recipe_comparison import run_results


def recipe_table(path: str) -> List[str]:
  """The markdown lines of the recipe tests of the stored runs in `path`.

  Raises:
    ValueError: the file is not a results file (no `runs`), naming it.
  """
  with open(path, encoding='utf-8') as f:
    stored = json.load(f)
  runs = stored.get('runs') if isinstance(stored, dict) else None
  if not runs:
    raise ValueError(f'{path}: expected a results file with "runs" (results/<date>_*.json), '
                     f'found keys {sorted(stored) if isinstance(stored, dict) else type(stored)}')
  best = run_results.best_runs(runs)
  cells = [cell.name for cell in grid.ALL_CELLS if cell.name in best]
  header = [f"{stored.get('measured', 'n/a')}, {stored.get('cpu', 'n/a')}: the best "
            'configuration of each cell: ' + ', '.join(f'{cell} {best[cell]}' for cell in cells)]
  return header + report.recipe_test_lines(run_results.recipe_tests(runs, best, cells))


def main(argv: Optional[Sequence[str]] = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
  parser.add_argument('results', help='a results/<date>_*.json file')
  args = parser.parse_args(argv)
  try:
    print('\n'.join(recipe_table(args.results)))
  except (OSError, ValueError) as e:
    print(f'error: {e}', file=sys.stderr)
    return 2
  return 0


if __name__ == '__main__':
  sys.exit(main())
