"""Tests of official/benchmark/hf_shared.py: the Hugging Face comparison's configs, masked
positions, cores and error reasons."""

import os

import pytest

from official.benchmark import hf_shared


def test_masked_positions_scale_with_the_length():
  assert hf_shared.masked_positions(20, 128, 128) == 20
  assert hf_shared.masked_positions(38, 128, 32) == 10
  assert hf_shared.masked_positions(20, 128, 2) == 1


def test_models_are_config_names_or_yaml_paths(tmp_path):
  assert hf_shared.config_path('bert_mini') == os.path.join(hf_shared.CONFIG_DIR,
                                                            'bert_mini.yaml')
  path = tmp_path / 'mine.yaml'
  path.write_text('task: {}\n', encoding='utf-8')
  assert hf_shared.config_path(str(path)) == str(path)
  assert hf_shared.model_label(str(path)) == 'mine'
  with pytest.raises(FileNotFoundError, match=r"--models: no config .* for 'nope'; .*bert_mini"):
    hf_shared.config_path('nope')


def test_cores_are_a_list_of_allowed_cores():
  allowed = sorted(os.sched_getaffinity(0))
  assert hf_shared.parse_cores('') == allowed
  assert hf_shared.parse_cores(f'{allowed[0]}-{allowed[0]}') == [allowed[0]]
  with pytest.raises(ValueError, match='--cores: expected a list such as 0,1'):
    hf_shared.parse_cores('a-b')
  with pytest.raises(ValueError, match=r'--cores: .* names cores \[99999\]'):
    hf_shared.parse_cores('99999')


def test_the_reason_of_an_error_is_its_first_line_shortened():
  assert hf_shared.reason(RuntimeError('no compiler\nsecond line')) == 'RuntimeError: no compiler'
  assert hf_shared.reason(KeyError()) == 'KeyError'
  long = hf_shared.reason(ValueError('x' * 300))
  assert len(long) == 160 and long.endswith('...')
