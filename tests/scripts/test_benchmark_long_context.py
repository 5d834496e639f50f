"""Tests of scripts/benchmark_long_context.py's flags (the measurement itself runs in child
processes, minutes long: not here)."""

import importlib.util
import os

from tests import cli
from tests.paths import ROOT

_spec = importlib.util.spec_from_file_location(
    'benchmark_long_context', os.path.join(ROOT, 'scripts', 'benchmark_long_context.py'))
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)

NOTE = ('benchmark_long_context: note: --dtype is now --precision (the old name still works)\n')


def _children(monkeypatch, argv):
  """The (config, seq_length, precision) of each child `main(argv)` would start."""
  started = []
  monkeypatch.setattr(bench, '_child', lambda config, seq_length, args: started.append(
      (config, seq_length, args.precision)))
  result = cli.call_main(bench.main, argv)
  assert result.returncode == 0, result.stderr
  return started, result.stderr


def test_the_precision_reaches_the_children(monkeypatch):
  started, stderr = _children(monkeypatch, ['--configs=a.yaml', '--seq_lengths=64,128',
                                            '--precision=bfloat16'])
  assert started == [('a.yaml', 64, 'bfloat16'), ('a.yaml', 128, 'bfloat16')]
  assert stderr == ''
  started, _ = _children(monkeypatch, ['--configs=a.yaml', '--seq_lengths=64'])
  assert started == [('a.yaml', 64, 'float32')]


def test_the_old_precision_flag_still_works_with_a_note(monkeypatch):
  started, stderr = _children(monkeypatch, ['--configs=a.yaml', '--seq_lengths=64',
                                            '--dtype=bfloat16'])
  assert started == [('a.yaml', 64, 'bfloat16')]
  assert stderr == NOTE
  result = cli.call_main(bench.main, ['--dtype', 'float16'])
  assert result.returncode == 2
  assert result.stderr.startswith(NOTE)
  assert "argument --precision: invalid choice: 'float16'" in result.stderr
  help_text = cli.call_main(bench.main, ['--help']).stdout
  assert '--precision' in help_text and '--dtype' not in help_text
