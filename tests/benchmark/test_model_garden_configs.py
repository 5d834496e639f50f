"""Tests of official/benchmark/model_garden_configs.py: the run config, config pruning and
checking (in our framework), the old --dtype flag of the comparison's command line."""

import os
import subprocess
import sys

import pytest
import yaml

from official.benchmark import compare_model_garden as compare
from official.benchmark import model_garden_configs as configs
from tests.paths import ROOT

BERT_MINI = os.path.join(ROOT, 'configs', 'pretraining', 'bert_mini.yaml')


def test_unknown_keys_and_drop_walk_dicts_and_list_items():
  reference = {'task': {'model': {'cls_heads': [{'name': 'x', 'inner_dim': 0}],
                                  'encoder': {'bert': {}}}},
               'runtime': {'enable_xla': False}}
  values = {'task': {'model': {'cls_heads': [{'name': 'nsp', 'pooler': 1},
                                             {'inner_dim': 2, 'gate': 3}],
                               'encoder': {'bert': {}}}},
            'runtime': {'enable_xla': True, 'seed': 4}, 'extra': {'a': 1}}
  unknown = configs.unknown_keys(values, reference)
  assert unknown == ['task.model.cls_heads.0.pooler', 'task.model.cls_heads.1.gate', 'runtime.seed',
                     'extra']
  for path in unknown:
    configs.drop(values, path.split('.'))
  assert values == {'task': {'model': {'cls_heads': [{'name': 'nsp'}, {'inner_dim': 2}],
                                       'encoder': {'bert': {}}}},
                    'runtime': {'enable_xla': True}}


def _write_config(tmp_path, **overrides) -> str:
  out = str(tmp_path / 'run.yaml')
  argv = ['write-config', f'--out={out}', '--train_path=/data/train.tfrecord',
          '--eval_path=/data/eval.tfrecord', '--vocab_size=1234', '--train_steps=200',
          '--schedule_steps=1000', '--precision=bfloat16', '--xla=true']
  argv += [f'--{k}={v}' for k, v in overrides.items()]
  assert configs.main(argv) == 0
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
  configs.main(['check-config', BERT_MINI, override, out])
  assert capsys.readouterr().out.strip().splitlines()[-1] == BERT_MINI
  assert not os.path.exists(out)

  with open(BERT_MINI, encoding='utf-8') as f:
    values = yaml.safe_load(f)
  values['task']['model']['encoder']['bert']['not_a_field'] = 3
  values['trainer']['made_up'] = {'x': 1}
  base = str(tmp_path / 'base.yaml')
  with open(base, 'w', encoding='utf-8') as f:
    yaml.safe_dump(values, f)
  configs.main(['check-config', base, override, out])
  captured = capsys.readouterr()
  assert captured.out.strip().splitlines()[-1] == out
  assert 'dropped: task.model.encoder.bert.not_a_field' in captured.err
  assert 'dropped: trainer.made_up' in captured.err
  with open(out, encoding='utf-8') as f:
    pruned = yaml.safe_load(f)
  del values['task']['model']['encoder']['bert']['not_a_field']
  del values['trainer']['made_up']
  assert pruned == values


def test_check_config_runs_by_path_without_the_checkout_on_the_path(tmp_path):
  # The process boundary is the point: Model Garden's Python runs the file by path with -I, so
  # the module must import nothing of ours at its top. Here our Python plays Model Garden's.
  override = _write_config(tmp_path)
  result = subprocess.run(
      [sys.executable, '-I', configs.__file__, 'check-config', BERT_MINI, override,
       str(tmp_path / 'out.yaml')], cwd=tmp_path, capture_output=True, text=True, check=False)
  assert result.returncode == 0, result.stderr[-2000:]
  assert result.stdout.strip().splitlines()[-1] == BERT_MINI
  assert 'official from ' in result.stderr


def test_check_config_prunes_the_override_only_when_asked(tmp_path, capsys):
  override = _write_config(tmp_path)
  with open(override, encoding='utf-8') as f:
    values = yaml.safe_load(f)
  values['trainer']['time_budget_of_another_framework'] = 30
  with open(override, 'w', encoding='utf-8') as f:
    yaml.safe_dump(values, f)
  with pytest.raises(KeyError):  # strict: the override must load as it is
    configs.main(['check-config', BERT_MINI, override, str(tmp_path / 'base.yaml')])
  kept = str(tmp_path / 'kept.yaml')
  configs.main(['check-config', BERT_MINI, override, str(tmp_path / 'base.yaml'),
                f'--override_out={kept}'])
  assert ('dropped: trainer.time_budget_of_another_framework'
          in capsys.readouterr().err)
  with open(kept, encoding='utf-8') as f:
    pruned = yaml.safe_load(f)
  del values['trainer']['time_budget_of_another_framework']
  assert pruned == values
