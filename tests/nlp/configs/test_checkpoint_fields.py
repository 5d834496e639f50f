"""Tests of official/nlp/configs/checkpoint_fields.py: a fine-tuning config takes the encoder of its
init_checkpoint's params.yaml (keeping its own dropout), refuses an override that disagrees, and
leaves configs without such a checkpoint alone."""

import os

import pytest
import yaml

from official.modeling import hyperparams
from official.nlp import api
from official.nlp.configs import checkpoint_fields
from official.nlp.configs import known_fields
from tests.paths import ROOT

TINY_CLS = os.path.join(ROOT, 'configs', 'finetuning', 'sentence_prediction_tiny.yaml')
MINI = dict(vocab_size=900, hidden_size=64, num_layers=3, num_attention_heads=2,
            intermediate_size=96, dropout_rate=0.0, attention_dropout_rate=0.0,
            max_position_embeddings=128)


def _model_dir(directory, kind='bert', **fields):
  os.makedirs(directory, exist_ok=True)
  encoder = {'type': kind, kind: dict(MINI, **fields) if kind == 'bert' else dict(fields)}
  with open(os.path.join(directory, 'params.yaml'), 'w', encoding='utf-8') as f:
    yaml.safe_dump({'task': {'model': {'encoder': encoder}}, 'trainer': {'train_steps': 5}}, f)
  return str(directory)


def test_the_checkpoints_encoder_replaces_the_configs_keeping_its_dropout(tmp_path):
  model_dir = _model_dir(tmp_path / 'mini')
  for init in (model_dir, os.path.join(model_dir, 'ckpt-5')):
    params = api.load_config(TINY_CLS, 'bert/sentence_prediction',
                             {'task.init_checkpoint': init})
    bert = params.task.model.encoder.bert
    assert (bert.vocab_size, bert.hidden_size, bert.num_layers, bert.intermediate_size,
            bert.max_position_embeddings) == (900, 64, 3, 96, 128)
    assert bert.dropout_rate == 0.1  # the fine-tuning config's, not the checkpoint's 0.0
  params = api.load_config(TINY_CLS, 'bert/sentence_prediction')
  params.override({'task': {'init_checkpoint': model_dir}})
  (line,) = checkpoint_fields.fill_encoder_from_checkpoint(params)
  assert line.startswith(f'{model_dir}/params.yaml: task.model.encoder.bert: ')
  for change in ('vocab_size=900 (the config had 30522)', 'hidden_size=64 (the config had 128)',
                 'num_layers=3 (the config had 2)'):
    assert change in line
  assert 'dropout' not in line
  assert checkpoint_fields.fill_encoder_from_checkpoint(params) == []  # the same encoder now


def test_a_modernbert_checkpoint_changes_the_encoder_type(tmp_path):
  model_dir = _model_dir(tmp_path / 'modern', 'modernbert', vocab_size=50, hidden_size=32,
                         num_layers=2, num_attention_heads=2, intermediate_size=48)
  params = api.load_config(TINY_CLS, 'bert/sentence_prediction',
                           f'task.init_checkpoint={model_dir}')
  assert params.task.model.encoder.type == 'modernbert'
  assert params.task.model.encoder.modernbert.hidden_size == 32
  assert params.task.model.encoder.modernbert.vocab_size == 50


def test_an_override_that_disagrees_with_the_checkpoint_is_refused(tmp_path):
  model_dir = _model_dir(tmp_path / 'mini')
  with pytest.raises(hyperparams.ConfigError,
                     match=r'task.model.encoder.bert.hidden_size=128 in --params_override, but '
                           r'the init_checkpoint was trained with hidden_size=64 \(.*mini/params'):
    api.load_config(TINY_CLS, 'bert/sentence_prediction',
                    f'task.init_checkpoint={model_dir},task.model.encoder.bert.hidden_size=128')
  # Agreeing overrides and dropout (a fine-tuning setting) are the user's to give.
  params = api.load_config(TINY_CLS, 'bert/sentence_prediction', {
      'task.init_checkpoint': model_dir, 'task.model.encoder.bert.hidden_size': 64,
      'task.model.encoder.bert.dropout_rate': 0.3})
  assert params.task.model.encoder.bert.dropout_rate == 0.3


def test_nothing_changes_without_a_params_yaml_beside_the_checkpoint(tmp_path):
  params = api.load_config(TINY_CLS, 'bert/sentence_prediction',
                           {'task.init_checkpoint': str(tmp_path / 'bert_model.ckpt')})
  assert params.task.model.encoder.bert.hidden_size == 128
  assert checkpoint_fields.checkpoint_params_path('') is None
  assert checkpoint_fields.checkpoint_params_path(str(tmp_path)) is None
  assert checkpoint_fields.fill_encoder_from_checkpoint(params) == []


def test_known_fields_fill_names_its_source_and_guards_the_overrides(tmp_path):
  model_dir = _model_dir(tmp_path / 'mini')
  params = api.load_config(TINY_CLS, 'bert/sentence_prediction')
  params.override({'task': {'init_checkpoint': model_dir}})
  (line,) = known_fields.fill(params, None)  # no records in a fine-tuning config's data
  assert line.startswith(known_fields.CHECKPOINT_PREFIX + f'{model_dir}/params.yaml: ')
  params = api.load_config(TINY_CLS, 'bert/sentence_prediction')
  override = f'task.init_checkpoint={model_dir},task.model.encoder.bert.hidden_size=128'
  params.override({'task': {'init_checkpoint': model_dir}})
  with pytest.raises(ValueError, match=r'hidden_size=128 in --params_override.*hidden_size=64'):
    known_fields.fill(params, override)
