"""Tests of the factor-probe table of the BERT plateau (factor_probes)."""

import json

import pytest

from official.projects.recipe_comparison import factor_probes


def _evaluation(loss, accuracy=0.1):
  return {'in_domain': {'lm_example_loss': loss, 'masked_lm_accuracy': accuracy},
          'ood': {'lm_example_loss': loss + 0.5, 'masked_lm_accuracy': accuracy}}


def _result(losses, seed=0, steps=1000, **settings):
  base = dict(learning_rate=1e-3, warmup_fraction=0.1, seed=seed, steps=steps, batch_size=32,
              encoder_fields={})
  return {'settings': {**base, **settings},
          'evaluations': {'model_garden': {},
                          'mlm_garden': {str(s): _evaluation(loss) for s, loss in losses.items()}},
          'context_free': _evaluation(6.245, 0.146)}


@pytest.mark.parametrize('settings, label', [
    ({}, "none (the study's BERT run)"),
    ({'encoder': 'bert'}, "none (the study's BERT run)"),
    ({'encoder_fields': {'norm_first': True}, 'learning_rate': 3e-3},
     'norm_first=True; peak rate 0.003'),
    ({'warmup_fraction': 0.02}, 'warmup 0.02'),
    ({'encoder': 'ablation', 'encoder_fields': {'positions': 'rotary'}},
     'ablation encoder: positions=rotary'),
])
def test_change_names_what_differs_from_the_study_run(settings, label):
  baseline = dict(learning_rate=1e-3, warmup_fraction=0.1)
  assert factor_probes.change({**baseline, **settings}) == label


def test_table_has_a_row_a_run_and_the_context_free_row_last(tmp_path, capsys):
  runs = []
  for name, result in (('base', _result({500: 6.6, 1000: 6.4})),
                       ('rotary', _result({500: 5.9, 1000: 5.3}, seed=1, encoder='ablation',
                                          encoder_fields={'positions': 'rotary'}))):
    (tmp_path / name).mkdir()
    (tmp_path / name / 'results.json').write_text(json.dumps(result))
    runs.append(str(tmp_path / name))
  lines = factor_probes.main(runs).splitlines()
  assert lines[0].startswith("| change from the study's BERT run | seed | steps | rows x 128 "
                             'tokens seen | in-domain loss at 500 | in-domain loss at 1,000 |')
  assert lines[2] == ("| none (the study's BERT run) | 0 | 1,000 | 4.1 M | 6.600 | 6.400 | "
                      '0.100 | 6.900 |')
  assert lines[3] == ('| ablation encoder: positions=rotary | 1 | 1,000 | 4.1 M | 5.900 | 5.300 | '
                      '0.100 | 5.800 |')
  assert lines[4] == '| context-free predictor |  |  |  | 6.245 | 6.245 | 0.146 | 6.745 |'


def test_a_folder_without_results_is_named(tmp_path):
  with pytest.raises(SystemExit, match=r'factor_probes: error: .*empty: no results.json'):
    factor_probes.main([str(tmp_path / 'empty')])
