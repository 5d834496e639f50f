"""Tests of official/benchmark/model_garden_results.py (through the `summarize` subcommand of
the comparison's command line): medians, speed rounds, accuracy, config differences, log rates."""

import json
import os

import pytest
import tensorflow as tf
import yaml

from official.benchmark import compare_model_garden as compare
from official.benchmark import model_garden_results as results


def _fake_run(run_dir, variant, framework, dtype, rates, accuracy, params, round_=None):
  os.makedirs(run_dir)
  with open(os.path.join(run_dir, 'variant.json'), 'w', encoding='utf-8') as f:
    info = {'variant': variant, 'framework': framework, 'dtype': dtype, 'xla': False,
            'train_steps': 100, 'wall_seconds': 60, 'loadavg_before': '1.00 0.50 0.20',
            'loadavg_after': '2.00 1.0 0.5'}
    if round_ is not None:  # files of the shell script before speed rounds have no 'round'
      info['round'] = round_
    json.dump(info, f)
  model = os.path.join(run_dir, 'model')
  with tf.summary.create_file_writer(os.path.join(model, 'train')).as_default():
    for i, rate in enumerate(rates):
      tf.summary.write('steps_per_second', tf.constant(rate), step=25 * (i + 1))
      tf.summary.write('training_loss', tf.constant(10.0 - i - accuracy if accuracy else 9.0),
                       step=25 * (i + 1))
  if accuracy is not None:
    with tf.summary.create_file_writer(os.path.join(model, 'validation')).as_default():
      tf.summary.write('masked_lm_accuracy', tf.constant(0.01), step=50)
      tf.summary.write('masked_lm_accuracy', tf.constant(accuracy), step=100)
      tf.summary.write('next_sentence_accuracy', tf.constant(0.5), step=100)
      tf.summary.write('lm_example_loss', tf.constant(6.5), step=100)
  with open(os.path.join(model, 'params.yaml'), 'w', encoding='utf-8') as f:
    yaml.safe_dump(params, f)


def test_summarize_medians_accuracy_speedup_and_config_differences(tmp_path, capsys):
  params = {'task': {'train_data': {'global_batch_size': 32, 'shuffle_buffer_size': 100}},
            'runtime': {'mixed_precision_dtype': 'float32'}}
  _fake_run(str(tmp_path / 'mg'), 'mg-float32', 'model_garden', 'float32', [0.5, 2.0, 1.0, 3.0],
            0.25, params)
  ours_params = {'task': {'train_data': {'global_batch_size': 32, 'shuffle_buffer_size': 1000}},
                 'runtime': {'mixed_precision_dtype': 'bfloat16', 'seed': None}}
  _fake_run(str(tmp_path / 'ours'), 'ours-best', 'mlm_garden', 'bfloat16', [1.0, 5.0, 4.0], 0.2575,
            ours_params)
  out = str(tmp_path / 'results.json')
  compare.main(['summarize', str(tmp_path / 'mg'), str(tmp_path / 'ours'), '--json', out])
  printed = capsys.readouterr().out
  with open(out, encoding='utf-8') as f:
    result = json.load(f)
  mg, ours = result['runs']
  # The median of [2, 1, 3]: the first loop left out.
  assert mg['median_steps_per_second'] == pytest.approx(2.0)
  assert ours['median_steps_per_second'] == pytest.approx(4.5)
  assert ours['speedup_vs_mg_float32'] == pytest.approx(2.25)
  assert ours['speedup_vs_mg_bfloat16'] is None  # no Model Garden bfloat16 run
  assert ours['mlm_accuracy_points_vs_mg_float32'] == pytest.approx(0.75)
  assert (mg['eval_step'], mg['masked_lm_accuracy']) == (100, pytest.approx(0.25))
  assert ours['next_sentence_accuracy'] == pytest.approx(0.5)
  assert ours['lm_example_loss'] == pytest.approx(6.5)
  # The last of the loop summaries: 10 - 2 - 0.2575 at step 75, 10 - 3 - 0.25 at step 100.
  assert (ours['train_loss_step'], ours['training_loss']) == (75, pytest.approx(7.7425))
  assert (mg['train_loss_step'], mg['training_loss']) == (100, pytest.approx(6.75))
  assert result['config_differences'] == [
      'task.train_data.shuffle_buffer_size: model_garden=100 mlm_garden=1000']
  assert ('ours-best' in printed and '2.25x' in printed and '0.2575 @100' in printed
          and '+0.75' in printed and f"{ours['training_loss']:.3f} @75" in printed
          and '6.500' in printed)


def test_summarize_takes_the_median_over_speed_rounds(tmp_path):
  params = {'runtime': {'mixed_precision_dtype': 'float32'}}
  runs = [('mg', 'mg-float32', 'model_garden', [0.5, 2.0, 1.0, 3.0], 0.25, 0),  # 2.0
          ('ours', 'ours-best', 'mlm_garden', [1.0, 5.0, 4.0], 0.26, 0),  # 4.5
          ('ours-speed1', 'ours-best', 'mlm_garden', [0.1, 4.0], None, 1),  # 4.0
          ('mg-speed1', 'mg-float32', 'model_garden', [9.0, 1.0, 1.2, 1.4], None, 1)]  # 1.2
  for name, variant, framework, rates, accuracy, round_ in runs:
    _fake_run(str(tmp_path / name), variant, framework, 'float32', rates, accuracy, params, round_)
  out = str(tmp_path / 'results.json')
  compare.main(['summarize'] + [str(tmp_path / r[0]) for r in runs] + ['--json', out])
  with open(out, encoding='utf-8') as f:
    mg, ours = json.load(f)['runs']
  assert [r['median_steps_per_second'] for r in mg['runs']] == [pytest.approx(2.0),
                                                                pytest.approx(1.2)]
  assert mg['median_steps_per_second'] == pytest.approx(1.6)  # the median (mean) of the two runs
  assert ours['median_steps_per_second'] == pytest.approx(4.25)
  assert ours['speedup_vs_mg_float32'] == pytest.approx(4.25 / 1.6)
  # The round-0 run's.
  assert (ours['eval_step'], ours['masked_lm_accuracy']) == (100, pytest.approx(0.26))


def test_log_rates_parse_both_frameworks_formats(tmp_path):
  log = tmp_path / 'train.log'
  log.write_text('I1123 controller.py:535] train | step:     50 | steps/sec:    0.8 | output: \n'
                 'train | step:    100 | steps/sec:    1.5 | output: \n'
                 'step 50/100 | loss 9.1 | 2.25 steps/s | ETA 1m\n'
                 'eval at step 100: masked_lm_accuracy 0.1\n')
  assert results._log_rates(str(log)) == [0.8, 1.5, 2.25]
  assert results._median_rate([0.8, 1.5, 2.25]) == pytest.approx(1.875)
  assert results._median_rate([0.7]) == pytest.approx(0.7)
  assert results._median_rate([]) is None


def test_summarize_names_a_directory_that_is_not_a_run(tmp_path, capsys):
  with pytest.raises(SystemExit) as exit_info:
    compare.main(['summarize', str(tmp_path), '--json', str(tmp_path / 'out.json')])
  assert exit_info.value.code == 2
  assert (f'summarize: {tmp_path}: no variant.json; expected a run directory written by '
          'scripts/compare_model_garden.sh') in capsys.readouterr().err
