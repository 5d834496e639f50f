"""Tests of scripts/compare_hf.py: the Hugging Face config mapping against our parameter count,
one tiny step of each framework, a failing torch.compile, the report's ratios and table, flags.

Both frameworks run in this process (the script gives each its own child): fine at tiny sizes.
"""

import importlib.util
import os

import pytest

pytest.importorskip('torch')
pytest.importorskip('transformers')

from official.core import task_factory  # pylint: disable=wrong-import-position
from official.nlp.tools import benchmark  # pylint: disable=wrong-import-position
from tests.paths import ROOT  # pylint: disable=wrong-import-position

_spec = importlib.util.spec_from_file_location(
    'compare_hf', os.path.join(ROOT, 'scripts', 'compare_hf.py'))
compare = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(compare)

_DATA = ['task.train_data.global_batch_size=2', 'task.train_data.seq_length=16',
         'task.train_data.max_predictions_per_seq=3']
# vocab 100, hidden 32, 1 layer, 2 heads; BERT with its next-sentence head.
TINY = {
    'bert_mini': ','.join([f'task.model.encoder.bert.{k}={v}' for k, v in dict(
        vocab_size=100, hidden_size=32, num_layers=1, num_attention_heads=2,
        intermediate_size=64).items()] + _DATA + [
            'task.model.cls_heads=[{name: next_sentence, num_classes: 2, inner_dim: 32}]']),
    'modernbert_mini': ','.join([f'task.model.encoder.modernbert.{k}={v}' for k, v in dict(
        vocab_size=100, hidden_size=32, num_layers=1, num_attention_heads=2,
        intermediate_size=48, local_attention=8).items()] + _DATA),
}


_SPEC = dict(dtypes=['float32'], batch_size=2, seq_length=16, warmup_steps=0, matmul_size=32,
             threads=0)


@pytest.fixture(scope='module', name='ours')
def fixture_ours():
  """Our tiny BERT (next-sentence head) in float32, built by `benchmark.VariantRunner`."""
  return compare.OursBench(dict(_SPEC, models=[dict(
      label='bert_mini', config_file=compare.config_path('bert_mini'),
      params_override=TINY['bert_mini'])]))


@pytest.fixture(scope='module', name='modernbert')
def fixture_modernbert():
  """`describe_model` of our tiny ModernBERT (the task's model, not trained)."""
  params = benchmark.build_params('bert/pretraining', [compare.config_path('modernbert_mini')],
                                  TINY['modernbert_mini'], 'float32')
  model = task_factory.get_task(params.task).build_model()
  return compare.describe_model(model, params)


@pytest.mark.slow
@pytest.mark.parametrize('name', ['bert_mini', 'modernbert_mini'])
def test_hf_config_gives_our_parameter_count(name, ours, modernbert):
  description = ours.info()['models']['bert_mini'] if name == 'bert_mini' else modernbert
  hf = compare.hf_model(description)
  count = sum(p.numel() for p in hf.parameters())  # the tied decoder counted once
  h = 32
  # Ours also builds BertEncoder's own pooler (h x h + h), which the next-sentence head (its own
  # pooler_dense, Hugging Face's bert.pooler) does not use; ModernBERT maps one to one.
  extra = h * h + h if name == 'bert_mini' else 0
  assert description['parameters'] == count + extra
  assert type(hf).__name__ == ('BertForPreTraining' if name == 'bert_mini'
                               else 'ModernBertForMaskedLM')
  assert description['masked_positions'] == 3 and description['seq_length'] == 16
  assert description['optimizer']['clip_norm'] == 1.0


def test_synthetic_batch_labels_the_masked_positions(modernbert):
  batch = compare.synthetic_batch(modernbert)
  assert tuple(batch['positions'].shape) == (2, 3)
  assert (batch['labels'] != -100).sum(dim=1).tolist() == [3, 3]
  assert (batch['labels'].gather(1, batch['positions']) == batch['masked_ids']).all()
  assert (batch['input_ids'].gather(1, batch['positions']) == batch['masked_ids']).all()


@pytest.mark.slow
def test_one_tiny_step_of_each_framework_and_a_failing_compile(ours):
  reply = ours.run_round(1, 0.01)
  assert reply['rates']['ours bert_mini float32'] > 0
  assert reply['roofline']['float32'] > 0

  def failing_compile(function):
    def compiled(batch):
      raise RuntimeError('inductor: no C++ compiler\nsecond line')
    return compiled

  hf = compare.HfBench(dict(_SPEC, models=ours.info()['models'], modes=['eager', 'compile']),
                       compile_fn=failing_compile)
  reply = hf.run_round(1, 0.01)
  for head in ('masked', 'all'):
    assert reply['rates'][f'hf bert_mini float32 eager {head}'] > 0
    assert reply['rates'][f'hf bert_mini float32 compile {head}'] is None
    assert reply['errors'][f'hf bert_mini float32 compile {head}'] == (
        'RuntimeError: inductor: no C++ compiler')
  report = compare.build_report(_settings(), _machine(), ours.info(), hf.info(),
                                {'ours': [ours.run_round(1, 0)], 'hf': [reply]})
  table = compare.format_table(report)
  assert '| hf bert_mini float32 compile masked | masked positions | n/a (RuntimeError: ' in table
  assert 'bert_mini float32 compile: n/a (RuntimeError: inductor: no C++ compiler)' in table
  assert 'bert_mini float32 eager: ' in table


def _settings(**overrides):
  return dict(dict(models=['m'], dtypes=['float32'], modes=['eager'], batch_size=2,
                   seq_length=16, rounds=3, steps_per_round=2, warmup_steps=0, matmul_size=32,
                   cores=[0], threads=1), **overrides)


def _machine():
  return dict(cpu_model='Test CPU', cpu_flags={'avx2': True}, cpu_line='Test CPU (avx2)',
              cpu_count=2, load_average_before=[0.5, 0.5, 0.5], load_average_after=None,
              versions={'torch': 't', 'tensorflow': 'f'})


def test_report_medians_shares_and_ratios():
  variant = lambda name, framework, mode, logits: dict(
      name=name, framework=framework, model='m', dtype='float32', mode=mode, mlm_logits=logits,
      error=None)
  ours_info = {'models': {'m': {'flops_per_sequence': 1e9, 'masked_positions': 3}},
               'variants': [variant('ours m float32', 'ours', 'tf.function', 'masked')]}
  hf_info = {'variants': [variant('hf m float32 eager masked', 'hf', 'eager', 'masked'),
                          variant('hf m float32 eager all', 'hf', 'eager', 'all')]}
  ours_rates, hf_rates = [4.0, 2.0, 3.0], [2.0, 2.0, 1.0]  # per-round ratios 2, 1, 3
  rounds = {'ours': [{'rates': {'ours m float32': r}, 'cpu_seconds_per_step': {},
                      'roofline': {'float32': peak}, 'process_cpu_seconds': clock}
                     for r, peak, clock in zip(ours_rates, [8e9, 1e10, 9e9],
                                               [[1, 2], [2.5, 3], [3.25, 4]])],
            'hf': [{'rates': {'hf m float32 eager masked': r, 'hf m float32 eager all': r / 2},
                    'cpu_seconds_per_step': {}, 'roofline': {'float32': 2e10},
                    'process_cpu_seconds': [i, i + 1]}
                   for i, r in enumerate(hf_rates)]}
  report = compare.build_report(_settings(), _machine(), ours_info, hf_info, rounds)
  ours, masked, everything = report['results']
  assert ours['steps_per_second'] == 3.0 and ours['tokens_per_second'] == 3.0 * 2 * 16
  assert ours['model_tflops'] == pytest.approx(3.0 * 2 * 1e9 / 1e12)
  assert ours['share_of_roofline'] == pytest.approx(3.0 * 2e9 / 1e10)  # the best roofline
  assert masked['steps_per_second'] == 2.0
  assert masked['share_of_roofline'] == pytest.approx(2.0 * 2e9 / 2e10)  # torch's own roofline
  assert masked['ratio_ours_to_this'] == 2.0  # the median of 2, 1, 3 (not 3.0 / 2.0)
  assert everything['ratio_ours_to_this'] == 4.0
  assert report['acceptance'] == [dict(model='m', dtype='float32', mode='eager', ratio=2.0,
                                       target=1.3, met=True, error=None)]
  table = compare.format_table(report)
  rows = table.splitlines()
  assert '| ours m float32 | masked positions | 3.000 | 96 | 60.0% of float32 | - |' in rows
  assert ('| hf m float32 eager masked | masked positions | 2.000 | 64 | 20.0% of float32 | '
          '2.00x |') in rows
  assert '| hf m float32 eager all | all 16 positions | 1.000 | 32 | 10.0% of float32 | 4.00x |' \
      in rows
  assert '- ours / Hugging Face (masked positions), m float32 eager: 2.00x (meets 1.3x)' in table
  assert 'CPU: Test CPU (avx2); cores [0] of 2, 1 threads a framework' in table
  assert 'TensorFlow float32 0.010; PyTorch float32 0.020' in table
  assert report['idle_cpu_seconds'] == {'ours': 0.75, 'hf': 0.0}
  assert 'while the other was timed: ours 0.75s, Hugging Face 0.00s' in table


def test_masked_positions_scale_with_the_length():
  assert compare.masked_positions(20, 128, 128) == 20
  assert compare.masked_positions(38, 128, 32) == 10
  assert compare.masked_positions(20, 128, 2) == 1


def test_flags_are_checked_naming_the_flag(capsys):
  args = compare.parse_args(['--models=bert_tiny', '--precisions=bfloat16', '--modes=eager'])
  assert (args.models, args.precisions, args.modes) == (['bert_tiny'], ['bfloat16'], ['eager'])
  for argv, message in ((['--precisions=float16'], "--precisions: unknown ['float16']"),
                        (['--modes=jit'], "--modes: unknown ['jit']"),
                        (['--models=nope'], "--models: no config"),
                        (['--cores=99999'], '--cores: '),
                        (['--rounds=0'], '--rounds must be >= 1')):
    with pytest.raises(SystemExit):
      compare.parse_args(argv)
    assert message in capsys.readouterr().err


def test_the_old_precision_flag_still_works_with_a_note(capsys):
  assert compare.parse_args(['--models=bert_tiny', '--dtypes=bfloat16']).precisions == ['bfloat16']
  assert compare.parse_args(['--models=bert_tiny', '--dtypes', 'float32']).precisions == [
      'float32']
  note = 'compare_hf: note: --dtypes is now --precisions (the old name still works)\n'
  assert capsys.readouterr().err == note * 2
  with pytest.raises(SystemExit):
    compare.parse_args(['--dtypes=float16'])
  err = capsys.readouterr().err
  assert err.startswith(note) and "--precisions: unknown ['float16']" in err


def test_describe_model_refuses_an_encoder_without_a_counterpart():
  params = benchmark.build_params('bert/pretraining', [compare.config_path('albert_tiny')], '',
                                  'float32')
  with pytest.raises(ValueError, match="task.model.encoder.type='albert'"):
    compare.describe_model(None, params)
