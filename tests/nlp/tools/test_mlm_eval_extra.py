"""`mlm-eval` without its `[eval]` extra (scipy, scikit-learn): one line naming the extra."""

import sys

import pytest

from official.nlp.tools import mlm_eval


def test_the_extra_is_installed_here():
  assert mlm_eval.missing_extra() == []


@pytest.mark.parametrize('module', ['scipy', 'sklearn'])
def test_a_missing_extra_is_one_line_naming_it(module, monkeypatch, capsys, tmp_path):
  monkeypatch.setitem(sys.modules, module, None)  # what `import` sees when it is not installed
  assert mlm_eval.missing_extra() == [module]
  status = mlm_eval.main(['mlm_eval', f'--model={tmp_path / "model"}',
                          f'--output_dir={tmp_path / "out"}'])
  assert status == 1
  assert capsys.readouterr().err == (
      "mlm_eval: error: mlm-eval needs scipy and scikit-learn: pip install 'mlm-garden[eval]'\n")
  assert not (tmp_path / 'out').exists()
