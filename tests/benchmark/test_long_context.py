"""Tests of official/benchmark/long_context.py (`scripts/benchmark_long_context.py`): its flags,
the children it starts, the table, and one tiny measurement in this process (the real one runs in
child processes, minutes long: not here)."""

import json
import os
import subprocess
import sys

from official.benchmark import long_context
from tests import cli
from tests.paths import ROOT

NOTE = ('benchmark_long_context: note: --dtype is now --precision (the old name still works)\n')
ROW = dict(config='bert_mini.yaml', seq_length=512, batch=16, dtype='float32',
           train_tokens_per_second=1234.4, inference_tokens_per_second=5678.6,
           train_step_seconds=6.6, idle_peak_mb=700.0, train_peak_mb=987.5, peak_mb=990.0)


def _children(monkeypatch, argv, row=None):
  """The (config, seq_length, precision) of each child `main(argv)` would start, and the run."""
  started = []

  def fake_child(config, seq_length, tokens_per_batch, steps, precision):
    del tokens_per_batch, steps
    started.append((config, seq_length, precision))
    return row

  monkeypatch.setattr(long_context, 'measure_in_child', fake_child)
  result = cli.call_main(long_context.main, argv)
  assert result.returncode == 0, result.stderr
  return started, result


def test_the_precision_reaches_the_children(monkeypatch):
  started, result = _children(monkeypatch, ['--configs=a.yaml', '--seq_lengths=64,128',
                                            '--precision=bfloat16'])
  assert started == [('a.yaml', 64, 'bfloat16'), ('a.yaml', 128, 'bfloat16')]
  assert result.stderr == ''
  started, _ = _children(monkeypatch, ['--configs=a.yaml', '--seq_lengths=64'])
  assert started == [('a.yaml', 64, 'float32')]


def test_the_old_precision_flag_still_works_with_a_note(monkeypatch):
  started, result = _children(monkeypatch, ['--configs=a.yaml', '--seq_lengths=64',
                                            '--dtype=bfloat16'])
  assert started == [('a.yaml', 64, 'bfloat16')]
  assert result.stderr == NOTE
  result = cli.call_main(long_context.main, ['--dtype', 'float16'])
  assert result.returncode == 2
  assert result.stderr.startswith(NOTE)
  assert "argument --precision: invalid choice: 'float16'" in result.stderr
  help_text = cli.call_main(long_context.main, ['--help']).stdout
  assert '--precision' in help_text and '--dtype' not in help_text


def test_lengths_are_outermost_and_rows_go_to_the_table_and_the_json(monkeypatch, tmp_path):
  path = tmp_path / 'rows.json'
  started, result = _children(monkeypatch, ['--seq_lengths=512,2048', f'--json={path}'], ROW)
  configs = list(long_context.DEFAULT_CONFIGS)
  assert started == [(c, n, 'float32') for n in (512, 2048) for c in configs]
  assert result.value == [ROW] * 4
  assert json.loads(path.read_text()) == [ROW] * 4
  assert result.stderr == f'{json.dumps(ROW)}\n' * 4  # each row as it arrives
  lines = result.stdout.splitlines()
  assert lines[0].startswith('| model | seq | batch |') and len(lines) == 6
  assert lines[2] == '| bert_mini.yaml | 512 | 16 | 1234 | 5679 | 988 |'


def test_a_failed_child_is_left_out_of_the_table(monkeypatch):
  _, result = _children(monkeypatch, ['--configs=a.yaml', '--seq_lengths=64'], None)
  assert result.value == []
  assert result.stdout == long_context.table([]) + '\n'


def test_measure_in_child_reads_the_last_json_line_or_reports_the_failure(monkeypatch, capsys):
  calls = []

  def fake_run(command, **kwargs):
    calls.append((command, kwargs))
    return outcomes.pop(0)

  outcomes = [subprocess.CompletedProcess([], 0, 'a log line\n{"batch": 1}\n{"batch": 2}\n', ''),
              subprocess.CompletedProcess([], 1, '', 'x' * 3000 + 'Traceback: boom'),
              subprocess.CompletedProcess([], 0, 'no row\n', '')]
  monkeypatch.setattr(long_context.subprocess, 'run', fake_run)
  assert long_context.measure_in_child('a.yaml', 64, 128, 2, 'bfloat16') == {'batch': 2}
  command, kwargs = calls[0]
  assert command == [sys.executable, '-m', 'official.benchmark.long_context', '--worker',
                     '--config=a.yaml', '--seq_length=64', '--tokens_per_batch=128', '--steps=2',
                     '--precision=bfloat16']
  assert kwargs['cwd'] == long_context.REPO == ROOT
  assert kwargs['env']['PYTHONPATH'] == ROOT
  capsys.readouterr()
  assert long_context.measure_in_child('a.yaml', 64, 128, 2, 'float32') is None
  stderr = capsys.readouterr().err
  assert stderr.startswith('a.yaml at 64: failed (1)\n') and stderr.endswith('boom\n')
  assert len(stderr) < 2100  # the end of the child's stderr only
  assert long_context.measure_in_child('a.yaml', 64, 128, 2, 'float32') is None
  assert capsys.readouterr().err.startswith('a.yaml at 64: failed (0)')


def test_a_worker_measures_a_tiny_model_and_prints_its_row():
  config = os.path.join(ROOT, 'configs', 'pretraining', 'bert_tiny.yaml')
  result = cli.call_main(long_context.main, ['--worker', f'--config={config}', '--seq_length=16',
                                             '--tokens_per_batch=32', '--steps=1'])
  assert result.returncode == 0, result.stderr
  assert result.value == []
  row = json.loads(result.stdout.strip().splitlines()[-1])
  assert (row['config'], row['seq_length'], row['batch'], row['dtype']) == (
      'bert_tiny.yaml', 16, 2, 'float32')
  assert row['train_tokens_per_second'] > 0 and row['inference_tokens_per_second'] > 0
  assert 0 < row['idle_peak_mb'] <= row['train_peak_mb'] <= row['peak_mb']
  assert abs(row['train_tokens_per_second'] * row['train_step_seconds'] - 32) < 1e-6


def test_the_script_is_the_command_line():
  result = subprocess.run([sys.executable, os.path.join(ROOT, 'scripts',
                                                        'benchmark_long_context.py'), '--help'],
                          capture_output=True, text=True, check=False)
  assert result.returncode == 0, result.stderr
  assert result.stdout.startswith('usage: benchmark_long_context.py')
  assert 'ModernBERT against BERT' in result.stdout and '--precision' in result.stdout
