"""Tests of official/nlp/tools/benchmark.py (`mlm-benchmark`, `scripts/benchmark.py`): FLOP
counting against a hand count (every encoder type: tests/nlp/tools/test_model_flops.py),
variants, the report's CPU line and roofline shares, and the JSON report."""

import json
import logging
import os

import pytest

from official.nlp.tools import benchmark
from official.nlp.tools import model_flops
from official.nlp.tools import step_profile
from official.utils.misc import cpu_info
from tests.paths import ROOT


# 2 layers, hidden 32, 2 heads, feed-forward 64, vocab 100, seq 16, 3 predictions, batch 4,
# a next-sentence head with inner_dim 32.
TINY = ','.join([
    'task.model.encoder.bert.vocab_size=100', 'task.model.encoder.bert.hidden_size=32',
    'task.model.encoder.bert.num_layers=2', 'task.model.encoder.bert.num_attention_heads=2',
    'task.model.encoder.bert.intermediate_size=64', 'task.train_data.global_batch_size=4',
    'task.train_data.seq_length=16', 'task.train_data.max_predictions_per_seq=3',
    'task.model.cls_heads=[{name: next_sentence, num_classes: 2, inner_dim: 32}]'])


def _hand_count() -> int:
  """Forward matmul FLOPs of one TINY sequence, from the (m, k, n) shapes of every matmul."""
  s, h, i, v, p = 16, 32, 64, 100, 3
  heads, head_dim = 2, 16
  per_layer = [(s, h, h)] * 3                      # query, key, value projections
  per_layer += [(s, head_dim, s)] * heads          # scores q @ k^T per head
  per_layer += [(s, s, head_dim)] * heads          # probabilities @ v per head
  per_layer += [(s, h, h), (s, h, i), (s, i, h)]   # attention output, feed-forward in and out
  shapes = per_layer * 2
  shapes += [(1, h, h)]                            # pooler on the first token
  shapes += [(p, h, h), (p, h, v)]                 # masked-LM transform, vocabulary projection
  shapes += [(1, h, 32), (1, 32, 2)]               # next-sentence head: inner dense, logits
  return sum(2 * m * k * n for m, k, n in shapes)


def test_flops_match_hand_count():
  params = benchmark.build_params('bert/pretraining', [benchmark.DEFAULT_CONFIG], TINY, 'float32')
  flops = benchmark.model_flops_per_sequence(params)
  assert flops['forward'] == _hand_count() == 619392
  assert flops['train'] == 3 * flops['forward']
  assert flops['mlm_vocab'] == 2 * 3 * 32 * 100
  assert flops['embedding_projection'] == 0


def test_flops_count_the_embedding_projection():
  params = benchmark.build_params('bert/pretraining', [benchmark.DEFAULT_CONFIG],
                                  TINY + ',task.model.encoder.bert.embedding_size=8', 'float32')
  flops = benchmark.model_flops_per_sequence(params)
  assert flops['embedding_projection'] == 2 * 16 * 8 * 32
  assert flops['mlm_vocab'] == 2 * 3 * 8 * 100
  assert flops['mlm_transform'] == 2 * 3 * 32 * 8


def test_variants_set_dtype_and_xla():
  params = benchmark.build_params('bert/pretraining', [benchmark.DEFAULT_CONFIG], TINY,
                                  'bfloat16+xla')
  assert params.runtime.mixed_precision_dtype == 'bfloat16'
  assert params.runtime.enable_xla is True
  assert params.task.train_data.input_path == 'dummy'
  params = benchmark.build_params('bert/pretraining', [benchmark.DEFAULT_CONFIG], TINY, 'float32')
  assert params.runtime.mixed_precision_dtype is None and params.runtime.enable_xla is False


@pytest.mark.parametrize('variant, message', [
    ('float64', "--variants: 'float64' starts with 'float64'"),
    ('float32+jit', "--variants: 'float32+jit' has unknown options ['jit']"),
])
def test_bad_variants_are_named(variant, message):
  with pytest.raises(ValueError) as error:
    benchmark.parse_variant(variant)
  assert str(error.value).startswith(message)


def test_datasheet_peaks():
  assert benchmark.datasheet_peak_tflops('NVIDIA A100-SXM4-40GB', 'bfloat16') == 312.0
  assert benchmark.datasheet_peak_tflops('Tesla T4', 'bfloat16') is None
  assert benchmark.datasheet_peak_tflops(None, 'float32') is None


@pytest.mark.slow
def test_three_steps_report(tmp_path, capsys):
  path = tmp_path / 'report.json'
  assert benchmark.main(['--params_override', TINY, '--variants', 'float32', '--windows', '1',
                         '--steps_per_window', '3', '--warmup_steps', '0', '--peak_seconds',
                         '0.05', '--peak_size', '64', '--profile_steps', '2', '--json',
                         str(path)]) == 0
  table = capsys.readouterr().out
  assert table.splitlines()[0].split(' | ')[0].strip() == 'variant'
  assert 'profile of float32: ' in table and 'vocabulary projection' in table
  report = json.loads(path.read_text())
  (result,) = report['results']
  assert result['variant'] == 'float32' and result['ratio_to_first'] == 1.0
  assert len(result['steps_per_second_windows']) == 1 and result['steps_per_second'] > 0
  # Derived throughputs follow from steps/s, batch 4 and seq 16.
  assert result['sequences_per_second'] == pytest.approx(4 * result['steps_per_second'])
  assert result['tokens_per_second'] == pytest.approx(64 * result['steps_per_second'])
  assert result['model_tflops'] == pytest.approx(
      3 * 619392 * 4 * result['steps_per_second'] / 1e12)
  assert result['fraction_of_matmul_peak'] == pytest.approx(
      result['model_tflops'] / result['matmul_peak_tflops'])
  assert result['time_to_first_step_s'] > 0
  # What the variant added can be 0 (a tiny model in pages freed by earlier tests), never less.
  assert 0 <= result['variant_host_memory_mb'] <= result['peak_host_memory_mb']
  assert result['peak_host_memory_mb'] > 0
  assert result['loop_tracing_count'] == 1  # the windows reuse one traced train loop
  assert result['final_loss'] > 0
  assert report['flops_per_sequence']['forward'] == 619392
  assert report['machine']['matmul_peak_tflops']['float32'] > 0
  # Where the time went: every category present, shares of the summed op time.
  profile = result['profile']
  assert profile['steps'] == 2 and profile['wall_ms_per_step'] > 0
  categories = profile['categories']
  assert list(categories) == list(step_profile.CATEGORIES)
  assert sum(c['share'] for c in categories.values()) == pytest.approx(1.0)
  for part in (step_profile.MATMUL_DENSE, step_profile.MATMUL_VOCAB, step_profile.FUSED,
               step_profile.OPTIMIZER, step_profile.VOCAB_LOSS):
    assert categories[part]['ms_per_step'] > 0, part
  assert sum(c['ms_per_step'] for c in categories.values()) == pytest.approx(
      profile['op_ms_per_step'])


# ModernBERT: 3 layers (global, local with window 8 < seq 16, global), hidden 32, 2 heads, GeGLU
# 24, vocab 100, 3 predictions, batch 4, no classification head.
MODERNBERT_CONFIG = os.path.join(ROOT, 'configs', 'pretraining', 'modernbert_tiny.yaml')
MODERNBERT_TINY = ','.join([
    'task.model.encoder.modernbert.vocab_size=100', 'task.model.encoder.modernbert.hidden_size=32',
    'task.model.encoder.modernbert.num_layers=3',
    'task.model.encoder.modernbert.num_attention_heads=2',
    'task.model.encoder.modernbert.intermediate_size=24',
    'task.model.encoder.modernbert.local_attention=8',
    'task.model.encoder.modernbert.global_attn_every_n_layers=2',
    'task.train_data.global_batch_size=4', 'task.train_data.seq_length=16',
    'task.train_data.max_predictions_per_seq=3'])


@pytest.mark.slow
def test_modernbert_report_end_to_end(tmp_path, capsys):
  """Issue 30: a modernbert config ran every round, then died in the FLOP count (BERT's fields).

  About 20 s on 2 shared cores: building each variant's trainer and tracing its train loop.
  """
  path = tmp_path / 'report.json'
  assert benchmark.main(['--config_file', MODERNBERT_CONFIG, '--params_override', MODERNBERT_TINY,
                         '--variants', 'float32,bfloat16', '--windows', '1',
                         '--steps_per_window', '2', '--warmup_steps', '0', '--peak_seconds',
                         '0.02', '--peak_size', '64', '--json', str(path)]) == 0
  table = capsys.readouterr().out.splitlines()
  report = json.loads(path.read_text())
  params = benchmark.build_params('bert/pretraining', [MODERNBERT_CONFIG], MODERNBERT_TINY,
                                  'float32')
  forward = model_flops.model_flops_per_sequence(params)['forward']
  assert report['flops_per_sequence']['forward'] == forward
  assert report['config']['encoder_type'] == 'modernbert'
  cpu = cpu_info.read_cpu_info()
  assert report['machine']['cpu_model'] == cpu.model
  assert report['machine']['cpu_flags'] == cpu.flags
  assert f'cpu {cpu.line()}' in table[-2]
  peaks = report['machine']['matmul_peak_tflops']
  assert sorted(peaks) == ['bfloat16', 'float32'] and min(peaks.values()) > 0
  for result, row in zip(report['results'], table[2:4]):
    dtype = result['dtype']
    assert result['variant'] == dtype and row.startswith(dtype)
    assert (result['cpu_model'], result['cpu_flags']) == (cpu.model, cpu.flags)
    # Each variant against the roofline of its own dtype, measured in this run.
    assert result['matmul_peak_tflops'] == pytest.approx(peaks[dtype])
    assert result['model_tflops'] == pytest.approx(
        3 * forward * 4 * result['steps_per_second'] / 1e12)
    share = result['fraction_of_matmul_peak']
    assert share == pytest.approx(result['model_tflops'] / peaks[dtype])
    assert f'{100 * share:.1f}% {dtype}' in row


def test_an_uncounted_encoder_type_stops_before_building(monkeypatch, capsys):
  counters = model_flops._ENCODER_COUNTERS  # pylint: disable=protected-access
  monkeypatch.delitem(counters, 'modernbert')
  monkeypatch.setattr(benchmark, 'VariantRunner', None)  # building a variant would raise
  assert benchmark.main(['--config_file', MODERNBERT_CONFIG, '--params_override', MODERNBERT_TINY,
                         '--variants', 'float32']) == 2
  assert capsys.readouterr().err == (
      "mlm-benchmark: error: task.model.encoder.type='modernbert': no FLOP count for this encoder "
      "type; expected one of ['albert', 'bert', 'bert_v2']\n")


def test_a_repeated_variant_or_a_missing_config_file_is_one_line(tmp_path, capsys):
  assert benchmark.main(['--params_override', TINY, '--variants', 'float32,float32']) == 2
  assert capsys.readouterr().err.startswith('mlm-benchmark: error: --variants: repeated variant')
  missing = tmp_path / 'nope.yaml'
  assert benchmark.main(['--config_file', str(missing), '--variants', 'float32']) == 2
  assert capsys.readouterr().err == f'mlm-benchmark: error: config file not found: {missing}\n'


def test_bfloat16_on_a_cpu_that_emulates_it_warns_in_one_line(monkeypatch, caplog):
  class Built(Exception):
    pass

  def build(*args, **kwargs):
    raise Built  # the warning comes before anything is built

  monkeypatch.setattr(benchmark, 'VariantRunner', build)
  for flags, variants, warned in (('avx2', 'float32,bfloat16', True), ('avx2', 'float32', False),
                                  ('avx2,avx512f,avx512_bf16', 'bfloat16', False)):
    monkeypatch.setenv('MLM_CPU_FLAGS', flags)
    caplog.clear()
    with caplog.at_level(logging.WARNING), pytest.raises(Built):
      benchmark.run_benchmark(benchmark.parse_args(['--params_override', TINY,
                                                    '--variants', variants]))
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    if not warned:
      assert warnings == []
      continue
    (message,) = warnings
    assert message.startswith('mlm-benchmark: bfloat16 on ') and '\n' not in message
    assert 'no bfloat16 units: TensorFlow emulates it and float32 is faster here' in message


def test_executed_flops_leave_out_the_last_layers_other_positions():
  """TINY: seq 16, 3 predictions: the last layer runs at 4 positions, 12 are left out."""
  params = benchmark.build_params('bert/pretraining', [benchmark.DEFAULT_CONFIG], TINY, 'float32')
  full = model_flops.model_flops_per_sequence(params)
  executed = model_flops.executed_flops_per_sequence(params)
  s, h, i, rest = 16, 32, 64, 16 - 4
  # Per left-out position: query and output projections (2 x 2hd), its scores and weighted sum
  # over s keys (2 x 2sd), the feed-forward layer (2 x 2hi); d = h here.
  skipped = rest * (4 * h * h + 4 * s * h + 4 * h * i)
  assert executed['skipped_last_layer'] == skipped
  assert executed['forward'] == full['forward'] - skipped == _hand_count() - skipped
  assert executed['train'] == 3 * executed['forward']
  assert executed['mlm_vocab'] == full['mlm_vocab']
  # A head reading another token, or an encoder without output positions: every position.
  for override in (',task.model.cls_heads=[{name: nsp, num_classes: 2, cls_token_idx: 1}]',
                   ',task.model.encoder.type=albert'):
    other = benchmark.build_params('bert/pretraining', [benchmark.DEFAULT_CONFIG],
                                   TINY.replace('task.model.encoder.bert.', 'task.model.encoder.'
                                                + ('albert.' if 'albert' in override else 'bert.'))
                                   + override, 'float32')
    assert model_flops.executed_flops_per_sequence(other)['skipped_last_layer'] == 0


def test_the_executed_count_knows_which_encoders_take_output_positions():
  from official.nlp.modeling import networks  # pylint: disable=g-import-not-at-top
  takes = {'bert': networks.BertEncoder, 'bert_v2': networks.BertEncoderV2,
           'albert': networks.AlbertEncoder, 'modernbert': networks.ModernBertEncoder}
  assert sorted(model_flops.LAST_LAYER_AT_MASKED_POSITIONS) == sorted(
      name for name, cls in takes.items() if getattr(cls, 'supports_output_positions', False))
