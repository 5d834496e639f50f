"""The two-level test's calibration check, in miniature
(official/projects/recipe_comparison/two_level_calibration.py)."""

import pytest

from official.projects.recipe_comparison import two_level_calibration as calibration


def test_welch_claims_per_document_luck_and_the_two_level_test_does_not():
  # A recipe effect of N(0, 3) logits per document: over 33 documents the two recipes' means
  # differ by far more than their runs' spread, so Welch over runs (test set fixed) rejects
  # often although the recipes tie on the population of documents. Were either test at its
  # nominal 5%, 10 or more rejections of 40 would have binomial probability below 1e-4.
  welch, two_level = calibration.rejection_rates(3.0, simulations=40)
  assert welch >= 0.5
  assert two_level < 0.25


def test_the_cli_prints_a_row_per_interaction_and_checks_its_flags(capsys):
  assert calibration.main(['--simulations=2', '--interactions=0,1', '--documents=4',
                           '--items_per_document=3']) == 0
  lines = capsys.readouterr().out.splitlines()
  assert lines[0] == '| per-document interaction (logits) | Welch over runs | two-level |'
  assert [line.split(' | ')[0] for line in lines[2:]] == ['| 0', '| 1']
  with pytest.raises(SystemExit):
    calibration.main(['--runs=1'])
  assert 'expected --simulations >= 1, --runs >= 2' in capsys.readouterr().err
  with pytest.raises(SystemExit):
    calibration.main(['--interactions=0,abc'])
  assert "--interactions: expected numbers separated by commas, found '0,abc'" in (
      capsys.readouterr().err)
