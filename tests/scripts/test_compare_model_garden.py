"""Tests of scripts/compare_model_garden.py: config pruning and checking, the run config, result
parsing."""

import importlib.util
import json
import os

import pytest
import tensorflow as tf
import yaml

from tests.paths import ROOT

BERT_MINI = os.path.join(ROOT, 'configs', 'pretraining', 'bert_mini.yaml')

_spec = importlib.util.spec_from_file_location(
    'compare_model_garden', os.path.join(ROOT, 'scripts', 'compare_model_garden.py'))
compare = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(compare)


def test_unknown_keys_and_drop_walk_dicts_and_list_items():
  reference = {'task': {'model': {'cls_heads': [{'name': 'x', 'inner_dim': 0}],
                                  'encoder': {'bert': {}}}},
               'runtime': {'enable_xla': False}}
  values = {'task': {'model': {'cls_heads': [{'name': 'nsp', 'pooler': 1},
                                             {'inner_dim': 2, 'gate': 3}],
                               'encoder': {'bert': {}}}},
            'runtime': {'enable_xla': True, 'seed': 4}, 'extra': {'a': 1}}
  unknown = compare._unknown_keys(values, reference, '')
  assert unknown == ['task.model.cls_heads.0.pooler', 'task.model.cls_heads.1.gate', 'runtime.seed',
                     'extra']
  for path in unknown:
    compare._drop(values, path.split('.'))
  assert values == {'task': {'model': {'cls_heads': [{'name': 'nsp'}, {'inner_dim': 2}],
                                       'encoder': {'bert': {}}}},
                    'runtime': {'enable_xla': True}}


def _write_config(tmp_path, **overrides) -> str:
  out = str(tmp_path / 'run.yaml')
  argv = ['write-config', f'--out={out}', '--train_path=/data/train.tfrecord',
          '--eval_path=/data/eval.tfrecord', '--vocab_size=1234', '--train_steps=200',
          '--schedule_steps=1000', '--precision=bfloat16', '--xla=true']
  argv += [f'--{k}={v}' for k, v in overrides.items()]
  assert compare.main(argv) == 0
  return out


def test_write_config_loads_after_bert_mini_in_our_framework(tmp_path):
  from official.core import train_utils  # pylint: disable=g-import-not-at-top
  import official.common.registry_imports  # pylint: disable=g-import-not-at-top,unused-import  # noqa: F401  (registers the experiments)
  params = train_utils.build_params('bert/pretraining',
                                    [BERT_MINI, _write_config(tmp_path, steps_per_loop=25)])
  assert params.task.model.encoder.bert.vocab_size == 1234
  assert params.task.model.encoder.bert.num_layers == 4  # from bert_mini.yaml
  assert params.task.train_data.global_batch_size == 32
  assert params.task.validation_data.is_training is False
  assert params.task.validation_data.input_path == '/data/eval.tfrecord'
  assert (params.trainer.train_steps, params.trainer.steps_per_loop,
          params.trainer.summary_interval) == (200, 25, 25)
  assert params.trainer.validation_interval == params.trainer.checkpoint_interval == 200
  assert params.trainer.optimizer_config.learning_rate.polynomial.decay_steps == 1000
  assert params.trainer.optimizer_config.warmup.polynomial.warmup_steps == 100
  assert params.runtime.mixed_precision_dtype == 'bfloat16' and params.runtime.enable_xla is True
  assert params.runtime.distribution_strategy == 'one_device'


def test_write_config_takes_the_old_precision_flag_with_a_note(tmp_path, capsys):
  with open(_write_config(tmp_path), encoding='utf-8') as f:
    assert yaml.safe_load(f)['runtime']['mixed_precision_dtype'] == 'bfloat16'
  assert capsys.readouterr().err == ''
  out = str(tmp_path / 'old.yaml')
  assert compare.main(['write-config', f'--out={out}', '--train_path=t', '--eval_path=e',
                       '--vocab_size=10', '--train_steps=2', '--schedule_steps=2',
                       '--dtype', 'float16']) == 0
  with open(out, encoding='utf-8') as f:
    assert yaml.safe_load(f)['runtime']['mixed_precision_dtype'] == 'float16'
  assert capsys.readouterr().err == ('compare_model_garden: note: --dtype is now --precision (the '
                                     'old name still works)\n')


def test_check_config_keeps_a_known_yaml_and_prunes_unknown_keys(tmp_path, capsys):
  override = _write_config(tmp_path)
  out = str(tmp_path / 'pruned.yaml')
  compare.main(['check-config', BERT_MINI, override, out])
  assert capsys.readouterr().out.strip().splitlines()[-1] == BERT_MINI
  assert not os.path.exists(out)

  with open(BERT_MINI, encoding='utf-8') as f:
    values = yaml.safe_load(f)
  values['task']['model']['encoder']['bert']['not_a_field'] = 3
  values['trainer']['made_up'] = {'x': 1}
  base = str(tmp_path / 'base.yaml')
  with open(base, 'w', encoding='utf-8') as f:
    yaml.safe_dump(values, f)
  compare.main(['check-config', base, override, out])
  captured = capsys.readouterr()
  assert captured.out.strip().splitlines()[-1] == out
  assert 'dropped: task.model.encoder.bert.not_a_field' in captured.err
  assert 'dropped: trainer.made_up' in captured.err
  with open(out, encoding='utf-8') as f:
    pruned = yaml.safe_load(f)
  del values['task']['model']['encoder']['bert']['not_a_field']
  del values['trainer']['made_up']
  assert pruned == values


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
  assert compare._log_rates(str(log)) == [0.8, 1.5, 2.25]
  assert compare._median_rate([0.8, 1.5, 2.25]) == pytest.approx(1.875)
  assert compare._median_rate([0.7]) == pytest.approx(0.7)
  assert compare._median_rate([]) is None


def test_summarize_names_a_directory_that_is_not_a_run(tmp_path, capsys):
  with pytest.raises(SystemExit) as exit_info:
    compare.main(['summarize', str(tmp_path), '--json', str(tmp_path / 'out.json')])
  assert exit_info.value.code == 2
  assert (f'summarize: {tmp_path}: no variant.json; expected a run directory written by '
          'scripts/compare_model_garden.sh') in capsys.readouterr().err
