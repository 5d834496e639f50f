"""Tests of official/nlp/tools/demo.py (`make demo`, scripts/demo.py): the content-word rule, the
summary and prediction lines, the probe sentences, the flags, and a smoke run with tiny settings."""

import os
import re
import subprocess
import sys

import pytest

from official.nlp.tools import demo
from tests import cli
from tests.paths import ROOT


@pytest.mark.parametrize('token', ['directory', 'list', 'exist', 'keyerror', 'Connection'])
def test_content_words(token):
  assert demo.is_content_word(token)


@pytest.mark.parametrize('token', ['the', 'of', 'a', 'is', 'The', 'should', 'not', ',', '.', '(',
                                   '42', '##s', '##ing', '[UNK]', '[MASK]', '[CLS]', 'x86', ''])
def test_not_content_words(token):
  assert not demo.is_content_word(token)


def test_stop_words_are_lower_case_single_words():
  assert all(w == w.lower() and w.isalpha() for w in demo.STOP_WORDS)
  assert {'the', 'of', 'a', 'an', 'and', 'to', 'is', 'if', 'be'} <= demo.STOP_WORDS


def test_top1_summary_counts_content_words():
  predictions = [[('list', 0.5), ('the', 0.1)], [('the', 0.4)], [('##s', 0.3)],
                 [('directory', 0.2), ('file', 0.1)]]
  fitting = [frozenset({'list'}), frozenset({'a'}), frozenset({'x'}), frozenset({'file'})]
  assert demo.top1_summary('after training (step 7)', predictions, fitting) == (
      'after training (step 7): top-1 content words 2/4, fitting 1/4: list, the, ##s, directory')


def test_fitting_words_follow_the_sentences():
  assert len(demo.FITTING_WORDS) == len(demo.SENTENCES)
  # The word the docstrings use in each context (the comment above SENTENCES) fits it.
  for sentence, words, word in zip(demo.SENTENCES, demo.FITTING_WORDS,
                                   ['true', 'list', 'keyerror', 'bytes', 'exist', 'directory',
                                    'method', 'name']):
    assert word in words, sentence
  for words in demo.FITTING_WORDS:
    assert all(w == w.lower() and demo.is_content_word(w) for w in words)
  predictions = [[('true', 0.5)], [('the', 0.4)], [('keyerror', 0.3)], [('number', 0.3)],
                 [('exist', 0.3)], [('path', 0.3)], [('method', 0.3)], [('Name', 0.3)]]
  assert ', fitting 5/8: ' in demo.top1_summary('after', predictions)


def test_format_predictions_marks_content_words():
  text = demo.format_predictions(['Return a [MASK] of it.'], [[('list', 0.4123), ('the', 0.05)]])
  assert text == 'Return a [MASK] of it.\n    -> list* (0.41), the (0.05)'


def test_sentences_have_exactly_one_mask_and_are_new():
  assert len(demo.SENTENCES) >= 6
  assert len(set(demo.SENTENCES)) == len(demo.SENTENCES)
  for sentence in demo.SENTENCES:
    assert sentence.count('[MASK]') == 1, sentence


@pytest.mark.slow
def test_sentences_are_not_in_the_corpus(tmp_path):
  # The probe sentences are new: with any one word in the [MASK] slot, none occurs in the
  # docstrings.
  from official.nlp.data import stdlib_corpus  # pylint: disable=g-import-not-at-top
  corpus = str(tmp_path / 'corpus.txt')
  stdlib_corpus.write_stdlib_corpus(corpus)
  with open(corpus, encoding='utf-8') as f:
    text = ' '.join(f.read().lower().split())
  for sentence in demo.SENTENCES:
    before, after = (re.escape(part.strip()) for part in sentence.lower().split('[mask]'))
    assert not re.search(before + r'\s*\S+\s*' + after, text), sentence
  # ... while their contexts are common: e.g. 'return true if' and 'current working directory'.
  assert text.count('return true if') > 50 and text.count('current working directory') > 5


def test_overrides_follow_flags():
  args = demo._parse_args(['--train_steps=30', '--seq_length=32', '--max_predictions_per_seq=5',
                           '--precision=float32'])
  overrides = demo._overrides(args, 1234, '/data')
  assert 'task.model.encoder.bert.vocab_size=1234' in overrides
  assert 'task.train_data.seq_length=32' in overrides
  assert 'task.validation_data.max_predictions_per_seq=5' in overrides
  assert 'trainer.train_steps=30' in overrides
  assert 'trainer.optimizer_config.warmup.polynomial.warmup_steps=3' in overrides
  assert 'runtime.mixed_precision_dtype=float32' in overrides
  assert 'task.model.encoder.bert.dropout_rate=0.0' in overrides
  assert 'trainer.time_budget_minutes=3.0' in overrides  # the default budget
  long_args = demo._parse_args(['--train_steps=5000', '--minutes=0'])
  demo.choose_model_size(long_args)
  long_run = demo._overrides(long_args, 1234, '/data')
  assert 'task.train_data.seq_length=64' in long_run
  assert 'task.train_data.max_predictions_per_seq=10' in long_run
  assert 'trainer.optimizer_config.warmup.polynomial.warmup_steps=300' in long_run
  assert 'trainer.time_budget_minutes=0.0' in long_run


def test_the_model_size_follows_the_cpu(monkeypatch):
  assert demo.model_size_for(840.0) == (2, 8000, 64)  # AVX-512 BF16 EPYC, 2 cores, bfloat16
  assert demo.model_size_for(244.0) == (1, 3000, 32)  # one float32 AVX-512 core
  assert demo.model_size_for(105.0) == (1, 3000, 32)  # Zen 3, 2 cores: learns more in 3 minutes
  from official.nlp.tools import benchmark  # pylint: disable=g-import-not-at-top
  measured = []
  monkeypatch.setattr(benchmark, 'measure_matmul_peak',
                      lambda dtype, *a, **k: measured.append(dtype) or 105e9)
  args = demo._parse_args(['--precision=float32'])
  line = demo.choose_model_size(args)
  assert measured == ['float32']  # the precision the run trains in
  assert (args.num_layers, args.vocab_size, args.seq_length) == (1, 3000, 32)
  assert args.max_predictions_per_seq == 5  # 15% of 32
  assert line == ('1 layer(s), a 3,000-token vocabulary, 32-token sequences (this CPU: 105 GFLOP/s '
                  'float32 matmul, below 500)')
  overrides = demo._overrides(args, 3000, '/data')
  assert 'task.model.encoder.bert.num_layers=1' in overrides
  assert 'task.validation_data.seq_length=32' in overrides
  # A flag wins over the CPU's choice for its field only.
  partly = demo._parse_args(['--seq_length=48'])
  demo.choose_model_size(partly)
  assert (partly.num_layers, partly.seq_length, partly.max_predictions_per_seq) == (1, 48, 7)
  # All flags: nothing measured; a fixed number of steps keeps the full size without measuring.
  monkeypatch.setattr(benchmark, 'measure_matmul_peak', None)  # (must not be called)
  flagged = demo._parse_args(['--num_layers=2', '--vocab_size=500', '--seq_length=16'])
  assert demo.choose_model_size(flagged).endswith('(flags)') and flagged.num_layers == 2
  assert flagged.max_predictions_per_seq == 2
  fixed = demo._parse_args(['--minutes=0'])
  demo.choose_model_size(fixed)
  assert (fixed.num_layers, fixed.vocab_size, fixed.seq_length) == (2, 8000, 64)


def test_default_precision_reads_cpu_flags(tmp_path, monkeypatch):
  monkeypatch.delenv('MLM_CPU_FLAGS', raising=False)  # the file's flags, not an emulated CPU's
  cpuinfo = tmp_path / 'cpuinfo'
  cpuinfo.write_text('flags\t\t: fpu avx2 avx512f avx512_bf16 amx_tile\n')
  assert demo.default_precision(str(cpuinfo)) == 'bfloat16'
  cpuinfo.write_text('flags\t\t: fpu avx2 avx512f\n')
  assert demo.default_precision(str(cpuinfo)) == 'float32'
  assert demo.default_precision(str(tmp_path / 'missing')) == 'float32'
  assert demo._parse_args(['--precision=float32']).precision == 'float32'
  assert demo._parse_args([]).precision in ('float32', 'bfloat16')


def test_bad_flag_exits_2_with_one_line(capsys):
  with pytest.raises(SystemExit) as raised:
    demo._parse_args(['--train_steps=0'])
  assert raised.value.code == 2
  assert '--train_steps must be at least 1; got 0' in capsys.readouterr().err
  with pytest.raises(SystemExit):
    demo._parse_args(['--minutes=-1'])
  assert '--minutes must be >= 0; got -1.0' in capsys.readouterr().err


def test_the_old_flag_name_still_works_with_a_note(capsys):
  assert demo._parse_args(['--train_minutes=0.5']).minutes == 0.5
  assert demo._parse_args(['--train_minutes', '0']).minutes == 0.0
  assert capsys.readouterr().err == (
      'demo: note: --train_minutes is now --minutes (the old name still works)\n' * 2)
  result = cli.call_main(demo.main, ['--train_minutes=-1'])  # exits before any work
  assert result.returncode == 2
  assert result.stderr.startswith('demo: note: --train_minutes is now --minutes (the old name '
                                  'still works)\n')
  assert '--minutes must be >= 0; got -1.0' in result.stderr
  help_text = cli.call_main(demo.main, ['--help']).stdout
  assert '--minutes' in help_text and '--train_minutes' not in help_text


def test_the_script_is_the_modules_command_line(tmp_path):
  # The process boundary is the point: `make demo` runs the script from any directory.
  result = subprocess.run([sys.executable, os.path.join(ROOT, 'scripts', 'demo.py'),
                           '--train_minutes=-1'], cwd=tmp_path, capture_output=True, text=True,
                          check=False)
  assert result.returncode == 2
  assert result.stderr.startswith('demo: note: --train_minutes is now --minutes')
  assert '--minutes must be >= 0; got -1.0' in result.stderr
  assert not os.path.exists(tmp_path / 'demo_output')
  assert demo.ROOT == ROOT  # the default output folder and the config are the checkout's


@pytest.mark.slow
def test_smoke_run_prints_before_and_after(tmp_path):
  out = str(tmp_path / 'demo')
  result = cli.call_main(demo.main, [f'--output_dir={out}', '--minutes=0', '--train_steps=20',
                                      '--vocab_size=1000', '--batch_size=8', '--dupe_factor=1',
                                      '--precision=float32'])
  assert result.returncode == 0, result.stderr[-3000:]
  stdout = result.stdout
  n = len(demo.SENTENCES)
  assert stdout.count('    -> ') == n
  for sentence in demo.SENTENCES:
    assert sentence in stdout
  for label in (r'before training \(step 0\)', r'after training \(step 20\)'):
    match = re.search(label + r': top-1 content words (\d+)/(\d+), fitting (\d+)/\2: (.*) '
                      r'\| mean top-1 probability [01]\.\d{3} \| eval masked-LM accuracy '
                      r'[01]\.\d{3}\n', stdout)
    assert match, stdout[-2000:]
    assert int(match.group(2)) == n and int(match.group(1)) <= n
    assert int(match.group(3)) <= int(match.group(1))
    assert len(match.group(4).split(', ')) == n
  assert os.path.exists(os.path.join(out, 'bert_tiny', 'ckpt-20.index'))
