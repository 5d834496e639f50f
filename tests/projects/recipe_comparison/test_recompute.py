"""The project README's worked example: a dated page's recipe table recomputed from its stored run
results (official/projects/recipe_comparison/recompute.py) prints the row the README shows, and
that row agrees with scipy's Welch test of the stored losses."""

import json
import os
import re

import numpy as np
import pytest
from scipy import stats

from official.nlp.tools import claims
from official.nlp.tools import significance
from official.projects.recipe_comparison import recompute
from tests.paths import ROOT

PROJECT = os.path.join('official', 'projects', 'recipe_comparison')
README = os.path.join(ROOT, PROJECT, 'README.md')


def _worked_example():
  """(the stored results path the README's command names, the row the README says it prints)."""
  with open(README, encoding='utf-8') as f:
    text = f.read()
  command = re.search(r'python -m official\.projects\.recipe_comparison\.recompute (\S+)', text)
  row = re.search(r'prints, among its lines.*?\n```\n(\|[^\n]*\|)\n```', text, re.S)
  assert command and row, f'{README}: no worked example (command and printed row)'
  return os.path.join(ROOT, command.group(1)), row.group(1)


def test_the_readme_worked_example_prints_its_row(capsys):
  path, row = _worked_example()
  assert recompute.main([path]) == 0
  assert row in capsys.readouterr().out.splitlines()


def test_the_row_is_welchs_test_of_the_stored_losses_holm_adjusted():
  path, row = _worked_example()
  with open(path, encoding='utf-8') as f:
    runs = json.load(f)['runs'].values()
  p_values = []
  for held_out in ('in_domain', 'ood'):
    bert, modern = ([run['held_out'][held_out]['lm_example_loss'] for run in runs
                     if run['cell'] == cell] for cell in ('bert-bert', 'modern-modern'))
    p_values.append(stats.ttest_ind(bert, modern, equal_var=False).pvalue)
    if held_out == 'in_domain':
      result = stats.ttest_ind(bert, modern, equal_var=False)
      low, high = result.confidence_interval(0.95)
      difference = sum(bert) / len(bert) - sum(modern) / len(modern)
  cells = [cell.strip() for cell in row.strip('|').split('|')]
  assert float(cells[4]) == pytest.approx(difference, abs=5e-4)
  assert [float(x) for x in cells[5].strip('[]').split(',')] == pytest.approx([low, high], abs=5e-4)
  assert float(cells[6]) == pytest.approx(min(1.0, 2 * min(p_values)), abs=5e-5)  # Holm, 2 tests
  assert cells[7] == 'B better'  # a loss: BERT's is higher
  # Detectable with 80% power at 0.05 / 2: beyond the z-test's (z_0.9875 + z_0.8) * se, which the
  # t distribution of few degrees of freedom only widens.
  se = (high - low) / (2 * stats.t.ppf(0.975, result.df))
  assert float(cells[8]) > (stats.norm.ppf(1 - 0.025 / 2) + stats.norm.ppf(0.8)) * se


def test_a_file_without_runs_is_refused_by_name(tmp_path, capsys):
  path = tmp_path / 'results.json'
  path.write_text(json.dumps({'measured': '2026-12-01'}), encoding='utf-8')
  assert recompute.main([str(path)]) == 2
  assert capsys.readouterr().err.strip() == (
      f'error: {path}: expected a results file with "runs" (results/<date>_*.json), found keys '
      "['measured']")


def _stored_test(task, b, runs_a, runs_b):
  """A run_level_tests row as downstream_eval stores it, from significance's own tests."""
  rng = np.random.default_rng(len(task) + len(b))
  items_a, items_b = (rng.random(80) < 0.7).astype(float), (rng.random(80) < 0.6).astype(float)
  clusters = np.arange(80)
  welch = significance.welch_t_test(runs_a, runs_b)
  both = significance.two_level_test(runs_a, runs_b, items_a, items_b, clusters)
  return dict(task=task, a='modern', b=b, runs_a=len(runs_a),
              runs_b=None if isinstance(runs_b, float) else len(runs_b),
              difference=welch['difference'], low=welch['low'], high=welch['high'],
              dof=welch['dof'], two_level_low=both['low'], two_level_high=both['high'],
              two_level_dof=both['dof'])


def test_power_with_more_runs_per_row_of_a_pages_family(tmp_path, capsys):
  tests = [_stored_test('mr', 'bert', [0.70, 0.74, 0.69], [0.61, 0.66, 0.60]),
           _stored_test('mr', 'bert (random init)', [0.70, 0.74, 0.69], [0.65, 0.67]),
           _stored_test('mr', 'bag_of_words', [0.70, 0.74, 0.69], 0.72),
           _stored_test('hedge', 'bert', [0.70, 0.72, 0.75], [0.68, 0.69, 0.73])]
  path = tmp_path / 'page.json'
  path.write_text(json.dumps({'measured': '2026-12-04', 'cpu': 'a CPU',
                              'downstream': {'run_level_tests': tests}}), encoding='utf-8')
  assert recompute.main([str(path), '--power_with_runs=5', '--tasks=mr']) == 0
  lines = capsys.readouterr().out.splitlines()
  assert lines[0].startswith('2026-12-04, a CPU:') and 'alpha 0.05 / 3' in lines[0]
  rows = [[cell.strip() for cell in line.strip('|').split('|')] for line in lines[3:]]
  assert [row[2] for row in rows] == ['bert', 'bert (random init)', 'bag_of_words']  # no hedge
  first = tests[0]
  now = claims.detectable_difference(
      claims.standard_error_of(first['two_level_low'], first['two_level_high'],
                               first['two_level_dof']), first['two_level_dof'], tests=3)
  assert float(rows[0][5]) == pytest.approx(100 * now, abs=0.05)
  # More runs detect less, the test set alone least; a control's sample is not projected.
  assert float(rows[0][5]) > float(rows[0][6]) > float(rows[0][7])
  assert rows[1][6:] == ['n/a (a control)'] * 2
  assert rows[2][3] == '3 / deterministic' and float(rows[2][7]) <= float(rows[2][5])


def test_power_needs_two_level_rows_and_two_runs(tmp_path, capsys):
  path = tmp_path / 'page.json'
  path.write_text(json.dumps({'downstream': {'run_level_tests': []}}), encoding='utf-8')
  assert recompute.main([str(path), '--power_with_runs=5', '--tasks=mr']) == 2
  assert capsys.readouterr().err.strip() == (
      f'error: {path}: expected downstream.run_level_tests with two-level intervals for tasks '
      'mr, found none')
  with pytest.raises(SystemExit):
    recompute.main([str(path), '--power_with_runs=1'])
  assert '--power_with_runs: expected 2 or more runs, found 1' in capsys.readouterr().err


def test_the_readme_power_example_prints_its_row(capsys):
  with open(README, encoding='utf-8') as f:
    text = f.read()
  found = re.search(r'recompute (--power_with_runs=\S+ --tasks=\S+) (\S+)\n```\n\n'
                    r'prints, for .*?\n```\n(\|[^\n]*\|)\n```', text, re.S)
  assert found, f'{README}: no --power_with_runs example with its printed row'
  flags, path, row = found.groups()
  assert recompute.main(flags.split() + [os.path.join(ROOT, path)]) == 0
  assert row in capsys.readouterr().out.splitlines()


def test_a_file_that_is_not_json_is_refused_by_name(tmp_path, capsys):
  path = tmp_path / 'notes.md'
  path.write_text('# not JSON\n', encoding='utf-8')
  assert recompute.main([str(path), '--power_with_runs=5']) == 2
  assert capsys.readouterr().err.startswith(
      f'error: {path}: expected a results/<date>_*.json file, found text that is not JSON (')
