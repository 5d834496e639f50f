"""Tests of official/benchmark/model_garden_tests.py (scripts/run_model_garden_tests.py): per-file
pytest runs and their counts, the flags, the table (no download)."""

import json
import os
import subprocess
import sys
import zipfile

import pytest

from official.benchmark import model_garden_tests as runner
from tests.paths import ROOT

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


def test_the_peer_counts_file_gives_passed_per_file(tmp_path):
  counts = tmp_path / 'counts.json'
  counts.write_text(json.dumps({'files': {'a_test.py': {'passed': 7, 'failed': 1}}}))
  assert runner.load_peer_counts(str(counts)) == {'a_test.py': 7}
  assert runner.load_peer_counts('') == {}
  assert runner.load_peer_counts(str(tmp_path / 'missing.json')) == {}
  counts.write_text('{"not": "counts"}')
  with pytest.raises(SystemExit) as error:
    runner.load_peer_counts(str(counts))
  assert 'expected the JSON written by --save_counts' in str(error.value)
  # The checked-in reference counts cover every file of the sets.
  reference = runner.load_peer_counts(str(runner.PEER_COUNTS))
  assert set(runner.SETS['all']) <= set(reference)


def test_jobs_below_one_exit_2_naming_the_flag(capsys):
  with pytest.raises(SystemExit) as error:
    runner.parse_args(['--jobs=0'])
  assert error.value.code == 2
  assert '--jobs must be >= 1, got 0' in capsys.readouterr().err
  assert runner.parse_args(['--set=core']).set == 'core'


def test_main_runs_the_files_saves_counts_and_prints_the_table(tmp_path, capsys):
  wheel = tmp_path / f'tf-models-official-{runner.MG_VERSION}'
  (wheel / 'official').mkdir(parents=True)
  (wheel / 'official' / 'one_test.py').write_text('def test_passes():\n  pass\n')
  saved, keep = tmp_path / 'counts.json', tmp_path / 'keep'
  assert runner.main(['--cache_dir', str(tmp_path), '--files', 'official/one_test.py',
                      '--keep', str(keep), '--save_counts', str(saved), '--peer_counts', '']) == 0
  printed = capsys.readouterr().out
  assert f'Running 1 Model Garden test files against this checkout ({runner.REPO})' in printed
  assert 'TOTAL run (1 files): passed 1 of 1, skipped 0' in printed
  assert 'peer passed' not in printed
  assert json.loads(saved.read_text())['files']['official/one_test.py']['passed'] == 1
  assert (keep / 'official__one_test' / 'output.txt').exists()


def test_the_script_is_the_modules_command_line(tmp_path):
  # The process boundary is the point: the script finds the package from any directory.
  (tmp_path / f'tf-models-official-{runner.MG_VERSION}' / 'official').mkdir(parents=True)
  result = subprocess.run(
      [sys.executable, os.path.join(ROOT, 'scripts', 'run_model_garden_tests.py'),
       f'--cache_dir={tmp_path}', '--files=official/nope_test.py'],
      cwd=tmp_path, capture_output=True, text=True, check=False)
  assert result.returncode == 1
  assert 'error: --files: not in tf-models-official' in result.stderr


def test_a_cached_wheel_is_unpacked_once_without_pip(tmp_path):
  wheel = tmp_path / f'tf_models_official-{runner.MG_VERSION}-py2.py3-none-any.whl'
  with zipfile.ZipFile(wheel, 'w') as archive:
    archive.writestr('official/core/registry_test.py', 'def test_x():\n  pass\n')
  unpacked = runner.fetch_wheel(tmp_path, python='no-such-python')  # pip is not asked
  assert unpacked == tmp_path / f'tf-models-official-{runner.MG_VERSION}'
  assert (unpacked / 'official' / 'core' / 'registry_test.py').is_file()
  wheel.unlink()
  assert runner.fetch_wheel(tmp_path, python='no-such-python') == unpacked
  assert [p.name for p in tmp_path.iterdir()] == [unpacked.name]  # no partial folder left


def test_a_file_that_runs_too_long_is_noted(tmp_path):
  wheel = tmp_path / 'wheel'
  (wheel / 'official').mkdir(parents=True)
  (wheel / 'official' / 'slow_test.py').write_text(
      'import time\n\ndef test_sleeps():\n  time.sleep(60)\n')
  work = tmp_path / 'work'
  work.mkdir()
  result = runner.run_file(wheel, 'official/slow_test.py', work, _env(), sys.executable,
                           timeout=1)
  assert result.note == 'timed out after 1 s'
  assert result.total == 0
