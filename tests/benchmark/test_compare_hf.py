"""Tests of official/benchmark/compare_hf.py (`scripts/compare_hf.py`): its flags, what `main`
prints and writes, a child that fails, and one tiny run of both children (slow)."""

import json

import pytest

from official.benchmark import compare_hf
from official.benchmark import hf_children
from tests import cli

_TINY_RUN = ['--models=bert_tiny', '--precisions=float32', '--modes=eager', '--batch_size=2',
             '--seq_length=16', '--rounds=1', '--steps_per_round=1', '--warmup_steps=0',
             '--peak_seconds=0.05', '--matmul_size=64']


def test_flags_are_checked_naming_the_flag(capsys):
  args = compare_hf.parse_args(['--models=bert_tiny', '--precisions=bfloat16', '--modes=eager'])
  assert (args.models, args.precisions, args.modes) == (['bert_tiny'], ['bfloat16'], ['eager'])
  for argv, message in ((['--precisions=float16'], "--precisions: unknown ['float16']"),
                        (['--modes=jit'], "--modes: unknown ['jit']"),
                        (['--modes=eager,eager'], '--modes: repeated entries'),
                        (['--models=,'], '--models: empty'),
                        (['--models=nope'], "--models: no config"),
                        (['--cores=99999'], '--cores: '),
                        (['--rounds=0'], '--rounds must be >= 1'),
                        (['--threads=-1'], '--threads must be >= 0')):
    with pytest.raises(SystemExit):
      compare_hf.parse_args(argv)
    assert message in capsys.readouterr().err


def test_the_old_precision_flag_still_works_with_a_note(capsys):
  assert compare_hf.parse_args(['--models=bert_tiny', '--dtypes=bfloat16']).precisions == [
      'bfloat16']
  assert compare_hf.parse_args(['--models=bert_tiny', '--dtypes', 'float32']).precisions == [
      'float32']
  note = 'compare_hf: note: --dtypes is now --precisions (the old name still works)\n'
  assert capsys.readouterr().err == note * 2
  with pytest.raises(SystemExit):
    compare_hf.parse_args(['--dtypes=float16'])
  err = capsys.readouterr().err
  assert err.startswith(note) and "--precisions: unknown ['float16']" in err


def test_main_prints_the_table_and_writes_the_report(monkeypatch, tmp_path):
  seen = []

  def fake_run(args):
    seen.append(args)
    return {'settings': 'made up'}

  monkeypatch.setattr(compare_hf, 'run_comparison', fake_run)
  monkeypatch.setattr(compare_hf.hf_report, 'format_table', lambda report: 'TABLE')
  out = tmp_path / 'report.json'
  result = cli.call_main(compare_hf.main, ['--models=bert_tiny', f'--output_json={out}'])
  assert result.returncode == 0, result.stderr
  assert result.stdout == 'TABLE\n' and seen[0].models == ['bert_tiny']
  assert json.loads(out.read_text(encoding='utf-8')) == {'settings': 'made up'}


def test_a_child_that_fails_stops_the_run_naming_it(monkeypatch):
  monkeypatch.setattr(hf_children, 'WORKER_MODULE', 'official.benchmark.no_such_module')
  result = cli.call_main(compare_hf.main, ['--models=bert_tiny', '--cores=', '--threads=1'])
  assert result.returncode == 1
  assert ('compare_hf: the ours child failed (exit status 1): no reply (its log is on stderr '
          'above)') in result.stderr


@pytest.mark.slow
def test_one_tiny_run_of_both_children(tmp_path):
  pytest.importorskip('torch')
  pytest.importorskip('transformers')
  out = tmp_path / 'report.json'
  result = cli.call_main(compare_hf.main, _TINY_RUN + [f'--output_json={out}'])
  assert result.returncode == 0, result.stderr[-3000:]
  rows = result.stdout.splitlines()
  assert rows[0].startswith('| variant | MLM logits | steps/s |')
  assert any(row.startswith('| ours bert_tiny float32 | masked positions | ') for row in rows)
  assert any(row.startswith('| hf bert_tiny float32 eager all | all 16 positions | ')
             for row in rows)
  assert any(row.startswith('- ours / Hugging Face (masked positions), bert_tiny float32 eager: ')
             for row in rows)
  report = json.loads(out.read_text(encoding='utf-8'))
  assert report['settings']['dtypes'] == ['float32']
  assert {r['name'] for r in report['results']} == {
      'ours bert_tiny float32', 'hf bert_tiny float32 eager masked',
      'hf bert_tiny float32 eager all'}
  assert all(r['error'] is None and r['steps_per_second'] > 0 for r in report['results'])
  assert set(report['machine']['versions']) >= {'tensorflow', 'torch', 'transformers', 'python'}
