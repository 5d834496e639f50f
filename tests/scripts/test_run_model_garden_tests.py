"""Tests of scripts/run_model_garden_tests.py: per-file pytest runs and their counts (no
download)."""

import importlib.util
import os
import sys

import pytest

from tests.paths import ROOT


_spec = importlib.util.spec_from_file_location(
    'run_model_garden_tests', os.path.join(ROOT, 'scripts', 'run_model_garden_tests.py'))
runner = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = runner  # dataclasses look the module up by name
_spec.loader.exec_module(runner)

# It imports a module of the checkout's `official` without TensorFlow (official.core would load
# it: seconds in the child pytest).
_TESTS = '''
import unittest
from official.common import quiet

def test_passes():
  assert quiet.__name__ == 'official.common.quiet'

def test_fails():
  assert 1 == 2

@unittest.skip('not here')
def test_skipped():
  pass

class CaseTest(unittest.TestCase):
  def test_errors_in_setup(self):
    raise RuntimeError('boom')
'''


def _env():
  env = dict(os.environ)
  env['PYTHONPATH'] = ROOT
  return env


def test_run_file_counts_passed_failed_errors_and_skipped(tmp_path):
  wheel = tmp_path / 'wheel'
  (wheel / 'official' / 'core').mkdir(parents=True)
  (wheel / 'official' / 'core' / 'registry_test.py').write_text(_TESTS)
  work = tmp_path / 'work'
  work.mkdir()
  result = runner.run_file(wheel, 'official/core/registry_test.py', work, _env(), sys.executable,
                           timeout=300)
  assert (result.passed, result.failed, result.skipped) == (1, 2, 1)
  assert result.total == 3
  # The copy is flat: no `official` folder next to it shadows the checkout's package.
  folder = work / 'official__core__registry_test'
  assert sorted(p.name for p in folder.iterdir() if p.suffix == '.py') == [
      'conftest.py', 'official__core__registry_test.py']
  assert 'boom' in (folder / 'output.txt').read_text()


def test_a_file_that_does_not_import_counts_as_one_error(tmp_path):
  wheel = tmp_path / 'wheel'
  (wheel / 'official').mkdir(parents=True)
  (wheel / 'official' / 'missing_test.py').write_text('from official import no_such_module\n')
  work = tmp_path / 'work'
  work.mkdir()
  result = runner.run_file(wheel, 'official/missing_test.py', work, _env(), sys.executable,
                           timeout=300)
  assert (result.passed, result.errors, result.total) == (0, 1, 1)


def test_unknown_files_are_refused_with_their_names(tmp_path, capsys):
  (tmp_path / f'tf-models-official-{runner.MG_VERSION}' / 'official').mkdir(parents=True)
  with pytest.raises(SystemExit) as error:
    runner.main(['--cache_dir', str(tmp_path), '--files', 'official/nope_test.py'])
  assert 'official/nope_test.py' in str(error.value)
  assert '--files' in str(error.value)


def test_table_gives_group_totals_and_the_share_of_the_peer():
  results = [runner.FileResult('a_test.py', passed=9, failed=1),
             runner.FileResult('b_test.py', passed=2, errors=1),
             runner.FileResult('c_test.py', passed=4)]
  table = runner.format_table(results, {'a_test.py': 10, 'b_test.py': 3, 'c_test.py': 4},
                              {'first': ('a_test.py', 'b_test.py'),
                               'other': ('c_test.py', 'd_test.py')})
  assert ('TOTAL first (2 files): passed 11 of 13, skipped 0; '
          'Model Garden itself passes 13: 84.6% of it') in table
  assert 'TOTAL other' not in table  # d_test.py was not run: no partial group total
  assert ('TOTAL run (3 files): passed 15 of 17, skipped 0; '
          'Model Garden itself passes 17: 88.2% of it') in table
