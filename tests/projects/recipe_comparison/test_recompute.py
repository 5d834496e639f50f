"""The project README's worked example: a dated page's recipe table recomputed from its stored run
results (official/projects/recipe_comparison/recompute.py) prints the row the README shows, and
that row agrees with scipy's Welch test of the stored losses."""

import json
import os
import re

import pytest
from scipy import stats

from official.projects.recipe_comparison import recompute
from tests.paths import ROOT

PROJECT = os.path.join('official', 'projects', 'recipe_comparison')
README = os.path.join(ROOT, PROJECT, 'README.md')


def _worked_example():
  """(the stored results path the README's command names, the row the README says it prints)."""
  with open(README, encoding='utf-8') as f:
    text = f.read()
  command = re.search(r'python -m official\.projects\.recipe_comparison\.recompute (\S+)', text)
  row = re.search(r'prints, among its lines.*?\n```\n(\|.*\|)\n```', text, re.S)
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
