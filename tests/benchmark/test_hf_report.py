"""Tests of official/benchmark/hf_report.py: the Hugging Face comparison's medians, roofline
shares, per-round ratios, acceptance and markdown table, from made-up replies of the children."""

import pytest

from official.benchmark import hf_report


def _settings(**overrides):
  return dict(dict(models=['m'], dtypes=['float32'], modes=['eager'], batch_size=2,
                   seq_length=16, rounds=3, steps_per_round=2, warmup_steps=0, matmul_size=32,
                   cores=[0], threads=1), **overrides)


def _machine():
  return dict(cpu_model='Test CPU', cpu_flags={'avx2': True}, cpu_line='Test CPU (avx2)',
              cpu_count=2, load_average_before=[0.5, 0.5, 0.5], load_average_after=None,
              versions={'torch': 't', 'tensorflow': 'f'})


def _variant(name, framework, mode, logits, error=None):
  return dict(name=name, framework=framework, model='m', dtype='float32', mode=mode,
              mlm_logits=logits, error=error)


_OURS_INFO = {'models': {'m': {'flops_per_sequence': 1e9, 'masked_positions': 3}},
              'variants': [_variant('ours m float32', 'ours', 'tf.function', 'masked')]}


def test_report_medians_shares_and_ratios():
  hf_info = {'variants': [_variant('hf m float32 eager masked', 'hf', 'eager', 'masked'),
                          _variant('hf m float32 eager all', 'hf', 'eager', 'all')]}
  ours_rates, hf_rates = [4.0, 2.0, 3.0], [2.0, 2.0, 1.0]  # per-round ratios 2, 1, 3
  rounds = {'ours': [{'rates': {'ours m float32': r}, 'cpu_seconds_per_step': {},
                      'roofline': {'float32': peak}, 'process_cpu_seconds': clock}
                     for r, peak, clock in zip(ours_rates, [8e9, 1e10, 9e9],
                                               [[1, 2], [2.5, 3], [3.25, 4]])],
            'hf': [{'rates': {'hf m float32 eager masked': r, 'hf m float32 eager all': r / 2},
                    'cpu_seconds_per_step': {}, 'roofline': {'float32': 2e10},
                    'process_cpu_seconds': [i, i + 1]}
                   for i, r in enumerate(hf_rates)]}
  report = hf_report.build_report(_settings(), _machine(), _OURS_INFO, hf_info, rounds)
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
  table = hf_report.format_table(report)
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


def test_a_failed_variant_and_a_run_without_rooflines():
  hf_info = {'variants': [_variant('hf m float32 compile masked', 'hf', 'compile', 'masked',
                                   error='RuntimeError: no compiler')]}
  rounds = {'ours': [{'rates': {'ours m float32': 2.0}, 'cpu_seconds_per_step': {},
                      'roofline': {}}],
            'hf': [{'rates': {'hf m float32 compile masked': None}, 'cpu_seconds_per_step': {},
                    'roofline': {}}]}
  report = hf_report.build_report(_settings(rounds=1), dict(_machine(), load_average_before=None),
                                  _OURS_INFO, hf_info, rounds)
  ours, failed = report['results']
  assert ours['share_of_roofline'] is None and 'ratio_ours_to_this' not in failed
  assert report['acceptance'][0]['met'] is None
  assert report['idle_cpu_seconds'] == {'ours': None, 'hf': None}
  table = hf_report.format_table(report)
  assert '| ours m float32 | masked positions | 2.000 | 64 | - | - |' in table.splitlines()
  assert ('| hf m float32 compile masked | masked positions | n/a (RuntimeError: no compiler) '
          '| - | - | - |') in table
  assert 'm float32 compile: n/a (RuntimeError: no compiler)' in table
  assert 'best of the rounds): -' in table
  assert 'load average' not in table and 'while the other was timed' not in table
