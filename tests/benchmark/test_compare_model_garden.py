"""Tests of official/benchmark/compare_model_garden.py (scripts/compare_model_garden.sh): the
variants, the order of the runs, the flags, the corpus split, the data steps, and a whole
comparison with our framework playing Model Garden too (no download)."""

import json
import os
import subprocess
import sys

import pytest

from official.benchmark import compare_model_garden as compare
from tests.paths import ROOT

SHELL = os.path.join(ROOT, 'scripts', 'compare_model_garden.sh')


def test_variants_resolve_names_dtypes_xla_and_steps():
  variants = compare.resolve_variants('mg-float32,mg-bfloat16,ours-float32-xla,ours-best',
                                      'mg-float32,ours-best', 'bfloat16-xla', 1000, 300)
  assert variants == [
      compare.Variant('mg-float32', 'model_garden', 'float32', False, 1000),
      compare.Variant('mg-bfloat16', 'model_garden', 'bfloat16', False, 300),
      compare.Variant('ours-float32-xla', 'mlm_garden', 'float32', True, 300),
      compare.Variant('ours-best', 'mlm_garden', 'bfloat16', True, 1000)]
  assert all(v.steps == 7 for v in compare.resolve_variants('mg-float16,ours-float32', 'all',
                                                            'bfloat16', 7, 3))


@pytest.mark.parametrize('variants, message', [
    ('tf-float32', "'tf-float32': framework must be mg or ours"),
    ('ours-int8', "'ours-int8': dtype must be float32, bfloat16 or float16 (found 'int8')"),
    ('ours', "dtype must be float32, bfloat16 or float16 (found '')"),
    ('ours-float32-jit', "expected FRAMEWORK-DTYPE[-xla], found 'ours-float32-jit'"),
    ('ours-float32-xla-x', "expected FRAMEWORK-DTYPE[-xla], found 'ours-float32-xla-x'"),
    ('mg-bfloat16-xla', 'Model Garden applies runtime.enable_xla only with num_gpus > 0'),
])
def test_bad_variants_are_named(variants, message):
  with pytest.raises(ValueError, match=r'--variants: .*') as error:
    compare.resolve_variants(variants, '', 'bfloat16', 10, 5)
  assert message in str(error.value)


def test_speed_rounds_run_every_variant_again_reversed_in_odd_rounds():
  variants = compare.resolve_variants('mg-float32,ours-best', 'mg-float32', 'bfloat16', 100, 30)
  runs = compare.schedule(variants, 2, 30, 'runs')
  assert [(v.name, d, r, s) for v, d, r, s in runs] == [
      ('mg-float32', 'runs/mg-float32-100', 0, 100),
      ('ours-best', 'runs/ours-best-30', 0, 30),
      ('ours-best', 'runs/ours-best-speed1', 1, 30),
      ('mg-float32', 'runs/mg-float32-speed1', 1, 30),
      ('mg-float32', 'runs/mg-float32-speed2', 2, 30),
      ('ours-best', 'runs/ours-best-speed2', 2, 30)]
  assert len(compare.schedule(variants, 0, 30, 'runs')) == 2


def test_a_finished_run_is_reused_only_for_the_same_dtype_and_xla(tmp_path):
  variant = compare.Variant('ours-best', 'mlm_garden', 'bfloat16', False, 10)
  assert not compare.is_finished(str(tmp_path), variant)
  info = {'finished': True, 'dtype': 'bfloat16', 'xla': False}
  (tmp_path / 'variant.json').write_text(json.dumps(info))
  assert compare.is_finished(str(tmp_path), variant)
  assert not compare.is_finished(str(tmp_path), variant._replace(xla=True))
  (tmp_path / 'variant.json').write_text(json.dumps(dict(info, finished=False)))
  assert not compare.is_finished(str(tmp_path), variant)
  (tmp_path / 'variant.json').write_text('{not json')
  assert not compare.is_finished(str(tmp_path), variant)


@pytest.mark.parametrize('flag, message', [
    ('--steps=0', "expected a positive integer, found '0'"),
    ('--speed_rounds=-1', "expected an integer >= 0, found '-1'"),
    ('--corpus=web', "invalid choice: 'web'"),
    ('--variants=mg-float32-xla', 'Model Garden applies runtime.enable_xla only with'),
])
def test_bad_run_flags_exit_2_before_any_work(tmp_path, capsys, flag, message):
  with pytest.raises(SystemExit) as error:
    compare.main(['run', f'--work_dir={tmp_path}/work', flag])
  assert error.value.code == 2
  assert message in capsys.readouterr().err
  assert not os.path.exists(tmp_path / 'work')


def test_split_keeps_every_20th_document_for_eval(tmp_path, capsys):
  corpus = tmp_path / 'corpus.txt'
  corpus.write_text('\n\n'.join(f'doc {i} line one.\ndoc {i} line two.' for i in range(41)))
  assert compare.main(['split', str(corpus), str(tmp_path / 'out')]) == 0
  assert f'{corpus}: 41 documents -> 38 train, 3 eval' in capsys.readouterr().out
  evaluation = (tmp_path / 'out' / 'eval.txt').read_text()
  assert evaluation == 'doc 0 line one.\ndoc 0 line two.\n\ndoc 20 line one.\ndoc 20 line two.' \
      '\n\ndoc 40 line one.\ndoc 40 line two.\n'
  assert (tmp_path / 'out' / 'train.txt').read_text().count('\n\n') == 37


def _args(tmp_path, *flags):
  parser = compare.argparse.ArgumentParser()
  compare._add_run_flags(parser)
  return parser.parse_args([f'--work_dir={tmp_path}/work', f'--mg_venv={tmp_path}/mg', *flags])


def test_data_steps_write_the_corpus_vocabulary_and_records(tmp_path, monkeypatch, capsys):
  comparison = compare.Comparison(_args(tmp_path, '--corpus=stdlib', '--steps=10'))
  data = comparison.data_dir
  commands = []

  def run_ours(*args, capture=False):
    commands.append(args)
    if 'data_tools.stdlib_corpus' in args:
      with open(os.path.join(data, 'corpus.txt'), 'w', encoding='utf-8') as f:
        f.write('\n\n'.join(f'Sentence {i}.' for i in range(40)))
    if 'data_tools.build_vocab' in args:
      os.makedirs(os.path.join(data, 'vocab'))
      with open(os.path.join(data, 'vocab', 'vocab.txt'), 'w', encoding='utf-8') as f:
        f.write('[PAD]\n[UNK]\nword\n')
    return 'progress\nwrote 12 instances\nlast line\n' if capture else ''

  monkeypatch.setattr(comparison, 'run_ours', run_ours)
  comparison.make_data()
  assert [c[1] for c in commands] == ['data_tools.stdlib_corpus', 'data_tools.build_vocab',
                                      'data_tools.create_pretraining_data',
                                      'data_tools.create_pretraining_data']
  assert '--dupe_factor=10' in commands[2] and '--dupe_factor=3' in commands[3]
  printed = capsys.readouterr().out
  assert 'wrote 12 instances\nlast line' in printed
  assert f'== data: {data} (vocab 3, ? training sequences; 10 steps x 32 = 320)' in printed
  assert os.path.exists(os.path.join(data, 'eval.txt'))


def test_a_failing_data_command_exits_naming_it(tmp_path):
  comparison = compare.Comparison(_args(tmp_path))
  with pytest.raises(SystemExit) as error:
    comparison.run_ours('-c', 'import sys; print("boom"); sys.exit(3)', capture=True)
  assert 'failed (exit 3)' in str(error.value) and 'boom' in str(error.value)


def test_the_project_venv_is_refused_as_model_gardens(tmp_path):
  comparison = compare.Comparison(_args(tmp_path, f'--mg_venv={ROOT}/.venv'))
  with pytest.raises(SystemExit, match="--mg_venv must not be the project's .venv"):
    comparison.setup_model_garden()


def test_the_shell_wrapper_turns_down_an_unknown_flag():
  # The process boundary is the point: the wrapper answers before Python starts.
  result = subprocess.run([SHELL, '--stpes=10'], capture_output=True, text=True, check=False)
  assert result.returncode == 1
  assert result.stderr == ("compare_model_garden: error: unknown argument '--stpes=10' "
                           '(see --help)\n')


def _tiny_records(data_dir):
  """A tiny corpus through our data tools (the records a comparison makes, smaller)."""
  os.makedirs(data_dir)
  words = [f'w{i}' for i in range(30)]
  text = '\n\n'.join('\n'.join(' '.join(words[(d + s + k) % 30] for k in range(6)) + '.'
                               for s in range(3)) for d in range(40))
  for split in ('train', 'eval'):
    with open(os.path.join(data_dir, f'{split}.txt'), 'w', encoding='utf-8') as f:
      f.write(text + '\n')
  run = dict(cwd=ROOT, check=True, capture_output=True)
  subprocess.run([sys.executable, '-m', 'data_tools.build_vocab',
                  f'--input_file={data_dir}/train.txt', f'--output_dir={data_dir}/vocab',
                  '--vocab_size=60'], **run)
  for split in ('train', 'eval'):
    subprocess.run([sys.executable, '-m', 'data_tools.create_pretraining_data',
                    f'--input_file={data_dir}/{split}.txt',
                    f'--output_file={data_dir}/{split}.tfrecord',
                    f'--vocab_file={data_dir}/vocab/vocab.txt', '--max_seq_length=128',
                    '--max_predictions_per_seq=20', '--dupe_factor=1'], **run)


@pytest.mark.slow
def test_a_whole_comparison_with_our_framework_on_both_sides(tmp_path, monkeypatch, capsys):
  args = _args(tmp_path, '--variants=mg-float32,ours-best', '--ours_best=float32', '--steps=2',
               '--speed_steps=1', '--speed_rounds=0', '--steps_per_loop=1',
               '--validation_steps=1', '--threads=2', f'--data_dir={tmp_path}/data')
  _tiny_records(str(tmp_path / 'data'))

  def setup(self):  # our Python plays Model Garden's (check-config by path with -I, the runs)
    self.mg_python, self.versions = sys.executable, 'ours on both sides'

  monkeypatch.setattr(compare.Comparison, 'setup_model_garden', setup)
  variants = compare.resolve_variants(args.variants, args.full, args.ours_best, args.steps,
                                      args.speed_steps)
  assert compare.Comparison(args).run(variants) == 0
  printed = capsys.readouterr().out
  work = tmp_path / 'work'
  assert 'effective configs' in printed and 'mg-float32' in printed and 'ours-best' in printed
  report = json.loads((work / 'results.json').read_text())
  assert [r['variant'] for r in report['runs']] == ['mg-float32', 'ours-best']
  assert report['settings']['versions'] == 'ours on both sides'
  assert report['settings']['vocab_size'] > 0
  for row in report['runs']:
    assert row['finished'] and row['train_steps'] == 2 and row['eval_step'] == 2
  # A second run with --reuse keeps the finished runs.
  args.reuse = True
  assert compare.Comparison(args).run(variants) == 0
  assert printed.count('reusing') == 0 and capsys.readouterr().out.count('reusing') == 2


def _fake_model_garden_venv(venv, official_dir):
  """A "venv" whose python is ours with `official_dir`'s parent first on its path."""
  (venv / 'bin').mkdir(parents=True)
  python = venv / 'bin' / 'python'
  python.write_text(f'#!/bin/sh\nPYTHONPATH={official_dir.parent} exec {sys.executable} "$@"\n')
  python.chmod(0o755)
  (official_dir / 'nlp').mkdir(parents=True)
  for init in ('__init__.py', 'nlp/__init__.py', 'nlp/train.py'):
    (official_dir / init).write_text('')


def test_model_gardens_venv_is_used_when_it_imports_model_garden(tmp_path, capsys):
  venv = tmp_path / 'mg'
  site = venv / 'lib' / 'site-packages'
  _fake_model_garden_venv(venv, site / 'official')
  metadata = site / 'tf_models_official-2.20.0.dist-info'
  metadata.mkdir()
  (metadata / 'METADATA').write_text('Metadata-Version: 2.1\nName: tf-models-official\n'
                                     'Version: 2.20.0\n')
  comparison = compare.Comparison(_args(tmp_path))
  comparison.setup_model_garden()  # no install: it imports official.nlp.train from the venv
  assert comparison.versions.startswith('tf-models-official 2.20.0 tensorflow ')
  assert '; mlm-garden: tensorflow ' in comparison.versions
  assert '== Model Garden: tf-models-official 2.20.0' in capsys.readouterr().out


def test_a_venv_that_imports_another_official_is_refused(tmp_path):
  _fake_model_garden_venv(tmp_path / 'mg', tmp_path / 'elsewhere' / 'official')
  comparison = compare.Comparison(_args(tmp_path))
  with pytest.raises(SystemExit) as error:
    comparison.setup_model_garden()
  assert (f"Model Garden's python imports 'official' from {tmp_path}/elsewhere/official, not "
          f'from {tmp_path}/mg') in str(error.value)
