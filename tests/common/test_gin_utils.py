"""gin-config is optional: --gin_file/--gin_params without it, or with bad values, end in one
line."""

import sys

import pytest

from official.common import gin_utils
from official.nlp import train
from tests import cli


def _train(flags, monkeypatch, hide_gin=False):
  """Runs official/nlp/train.py's main in this process (`python -m official.nlp.train flags`),
  optionally as if gin were not installed."""
  if hide_gin:
    monkeypatch.setitem(sys.modules, 'gin', None)
  return cli.run_app(train.main, ['train', *flags])


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


def test_train_without_gin_exits_2_with_one_line(tmp_path, monkeypatch):
  result = _train(['--experiment=bert/pretraining', f'--model_dir={tmp_path}',
                   '--gin_params=a.b = 1'], monkeypatch, hide_gin=True)
  assert result.returncode == 2, result.stderr
  assert result.stderr.strip() == (
      "error: --gin_params needs gin-config, which is not installed: pip install 'mlm-garden[gin]'")


def test_train_bad_gin_params_exits_2_with_one_line(tmp_path, monkeypatch):
  pytest.importorskip('gin')
  result = _train(['--experiment=bert/pretraining', f'--model_dir={tmp_path}',
                   '--gin_params=x = = 3'], monkeypatch)
  assert result.returncode == 2, result.stderr
  lines = result.stderr.strip().splitlines()
  assert lines == ["error: --gin_params='x = = 3': gin cannot apply it: Unable to parse value. "
                   '(line 1)']
