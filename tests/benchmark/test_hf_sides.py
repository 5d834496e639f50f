"""Tests of both sides of the Hugging Face comparison (official/benchmark/hf_ours.py,
hf_torch_step.py, hf_torch_bench.py): the Hugging Face config mapping against our parameter
count, one tiny step of each framework, a failing torch.compile, the synthetic batch.

Both frameworks run in this process (the comparison gives each its own child): fine at tiny sizes.
"""

import pytest

pytest.importorskip('torch')
pytest.importorskip('transformers')

from official.benchmark import hf_ours  # pylint: disable=wrong-import-position
from official.benchmark import hf_report  # pylint: disable=wrong-import-position
from official.benchmark import hf_shared  # pylint: disable=wrong-import-position
from official.benchmark import hf_torch_bench  # pylint: disable=wrong-import-position
from official.benchmark import hf_torch_step  # pylint: disable=wrong-import-position
from official.core import task_factory  # pylint: disable=wrong-import-position
from official.nlp.tools import benchmark  # pylint: disable=wrong-import-position

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
  bench = hf_ours.OursBench(dict(_SPEC, models=[dict(
      label='bert_mini', config_file=hf_shared.config_path('bert_mini'),
      params_override=TINY['bert_mini'])]))
  yield bench
  bench.close()


@pytest.fixture(scope='module', name='modernbert')
def fixture_modernbert():
  """`describe_model` of our tiny ModernBERT (the task's model, not trained)."""
  params = benchmark.build_params('bert/pretraining', [hf_shared.config_path('modernbert_mini')],
                                  TINY['modernbert_mini'], 'float32')
  model = task_factory.get_task(params.task).build_model()
  return hf_ours.describe_model(model, params)


@pytest.mark.slow
@pytest.mark.parametrize('name', ['bert_mini', 'modernbert_mini'])
def test_hf_config_gives_our_parameter_count(name, ours, modernbert):
  description = ours.info()['models']['bert_mini'] if name == 'bert_mini' else modernbert
  hf = hf_torch_step.hf_model(description)
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
  batch = hf_torch_step.synthetic_batch(modernbert)
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

  hf = hf_torch_bench.HfBench(dict(_SPEC, models=ours.info()['models'],
                                   modes=['eager', 'compile']),
                              compile_fn=failing_compile)
  reply = hf.run_round(1, 0.01)
  for head in ('masked', 'all'):
    assert reply['rates'][f'hf bert_mini float32 eager {head}'] > 0
    assert reply['rates'][f'hf bert_mini float32 compile {head}'] is None
    assert reply['errors'][f'hf bert_mini float32 compile {head}'] == (
        'RuntimeError: inductor: no C++ compiler')
  settings = dict(models=['m'], dtypes=['float32'], modes=['eager'], batch_size=2, seq_length=16,
                  rounds=3, steps_per_round=2, warmup_steps=0, matmul_size=32, cores=[0],
                  threads=1)
  machine = dict(cpu_model='Test CPU', cpu_flags={'avx2': True}, cpu_line='Test CPU (avx2)',
                 cpu_count=2, load_average_before=[0.5, 0.5, 0.5], load_average_after=None,
                 versions={'torch': 't', 'tensorflow': 'f'})
  report = hf_report.build_report(settings, machine, ours.info(), hf.info(),
                                  {'ours': [ours.run_round(1, 0)], 'hf': [reply]})
  table = hf_report.format_table(report)
  assert '| hf bert_mini float32 compile masked | masked positions | n/a (RuntimeError: ' in table
  assert 'bert_mini float32 compile: n/a (RuntimeError: inductor: no C++ compiler)' in table
  assert 'bert_mini float32 eager: ' in table


def test_the_override_scales_the_masked_positions_with_the_length():
  override = hf_ours.ours_override(
      dict(config_file=hf_shared.config_path('modernbert_mini'), params_override='a.b=1'),
      dict(batch_size=4, seq_length=32))
  assert override == ('task.train_data.global_batch_size=4,task.train_data.seq_length=32,'
                      'task.train_data.max_predictions_per_seq=10,a.b=1')


def test_describe_model_refuses_an_encoder_without_a_counterpart():
  params = benchmark.build_params('bert/pretraining', [hf_shared.config_path('albert_tiny')], '',
                                  'float32')
  with pytest.raises(ValueError, match="task.model.encoder.type='albert'"):
    hf_ours.describe_model(None, params)
