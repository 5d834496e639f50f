"""gin-config is optional: --gin_file/--gin_params without it, or with bad values, end in one line."""

import subprocess
import sys

import pytest

from official.common import gin_utils
from tests.paths import ROOT


def _train(flags, hide_gin=False):
  """Runs official/nlp/train.py as `python -m` would, optionally as if gin were not installed."""
  prelude = "sys.modules['gin'] = None; " if hide_gin else ''
  code = (f'import runpy, sys; {prelude}sys.argv = ["train"] + {flags!r}; '
          'runpy.run_module("official.nlp.train", run_name="__main__", alter_sys=True)')
  return subprocess.run([sys.executable, '-c', code], cwd=ROOT, capture_output=True, text=True,
                        timeout=120)


def test_missing_gin_is_one_line_with_install_hint(monkeypatch):
  monkeypatch.setitem(sys.modules, 'gin', None)
  with pytest.raises(gin_utils.GinError, match=r"--gin_params needs gin-config.*mlm-garden\[gin\]"):
    gin_utils.parse_gin_flags([], ['a.b = 1'])


def test_bad_binding_names_flag_and_gin_reason():
  pytest.importorskip('gin')
  with pytest.raises(gin_utils.GinError, match=r"--gin_params='nope.width = 3'.*No configurable"):
    gin_utils.parse_gin_flags([], ['nope.width = 3'])


def test_missing_gin_file(tmp_path):
  pytest.importorskip('gin')
  with pytest.raises(gin_utils.GinError, match='--gin_file=.*missing.gin: no such file'):
    gin_utils.parse_gin_flags([str(tmp_path / 'missing.gin')], [])


def test_train_without_gin_exits_2_with_one_line(tmp_path):
  result = _train(['--experiment=bert/pretraining', f'--model_dir={tmp_path}',
                   '--gin_params=a.b = 1'], hide_gin=True)
  assert result.returncode == 2, result.stderr
  assert result.stderr.strip() == (
      "error: --gin_params needs gin-config, which is not installed: pip install 'mlm-garden[gin]'")


def test_train_bad_gin_params_exits_2_with_one_line(tmp_path):
  pytest.importorskip('gin')
  result = _train(['--experiment=bert/pretraining', f'--model_dir={tmp_path}',
                   '--gin_params=x = = 3'])
  assert result.returncode == 2, result.stderr
  lines = result.stderr.strip().splitlines()
  assert lines == ["error: --gin_params='x = = 3': gin cannot apply it: Unable to parse value. (line 1)"]
