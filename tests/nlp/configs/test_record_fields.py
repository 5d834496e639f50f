"""Tests of official/nlp/configs/record_fields.py: the config takes what the pretraining records'
metadata knows (sequence length, predictions, packing, vocabulary size, the held-out set), and
`mlm-train` on the shipped YAML trains on records of another vocabulary and length."""

import os
import random

import pytest
import tensorflow as tf

from official.core import train_utils
from official.nlp.configs import record_fields
from official.nlp.data import create_pretraining_data as cpd
from tests import testing
from tests.core import toy_task
from tests.paths import ROOT

MODERN_YAML = os.path.join(ROOT, 'configs', 'pretraining', 'modernbert_tiny.yaml')
WORDS = [f'w{i}' for i in range(40)]
VOCAB = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]', '.'] + WORDS


@pytest.fixture(name='records', scope='module')
def fixture_records(tmp_path_factory):
  """Packed, 30%-masked records of 32 tokens with a 20% held-out split: the data directory."""
  root = tmp_path_factory.mktemp('record_fields')
  rng = random.Random(0)
  documents = ['\n'.join(' '.join(rng.choices(WORDS, k=rng.randint(4, 9))) + '.'
                         for _ in range(rng.randint(2, 5))) for _ in range(30)]
  (root / 'corpus.txt').write_text('\n\n'.join(documents) + '\n', encoding='utf-8')
  (root / 'vocab.txt').write_text(''.join(t + '\n' for t in VOCAB), encoding='utf-8')
  cpd.create_pretraining_data(str(root / 'corpus.txt'), str(root / 'train.tfrecord'),
                              str(root / 'vocab.txt'), pack=True, masked_lm_prob=0.3,
                              max_seq_length=32, max_predictions_per_seq=10, dupe_factor=2,
                              num_workers=1, num_output_shards=2, validation_fraction=0.2)
  return root


def _params(records, override=''):
  """The validated config of the shipped YAML on `records`, filled from their metadata; the lines
  `fill_from_records` returned."""
  text = ','.join(filter(None, [f'task.train_data.input_path={records}/train.tfrecord*', override]))
  lines = []
  params = train_utils.build_params(
      'bert/pretraining', [MODERN_YAML], text, complete=lambda p: lines.extend(
          record_fields.fill_from_records(p, record_fields.override_keys(text))))
  return params, lines


def test_fields_come_from_the_records_and_say_so(records):
  params, lines = _params(records)
  train, validation = params.task.train_data, params.task.validation_data
  assert (train.seq_length, train.max_predictions_per_seq, train.use_position_id) == (32, 10, True)
  assert params.task.model.encoder.modernbert.vocab_size == len(VOCAB)
  assert validation.input_path == os.path.join(str(records), 'validation.tfrecord')
  assert (validation.seq_length, validation.max_predictions_per_seq) == (32, 10)
  assert lines[0] == (
      f'{records}/train.metadata.json: seq_length=32 (the config had 128), '
      'max_predictions_per_seq=10 (the config had 38), use_position_id=true, '
      'use_v2_feature_names=false, task.model.encoder.modernbert.vocab_size=46 (the config had '
      f'30522), task.validation_data.input_path={records}/validation.tfrecord (the held-out '
      'documents)')
  assert lines[1].startswith(f'{records}/validation.metadata.json: seq_length=32 (the config')


def test_a_value_given_in_params_override_that_disagrees_is_refused(records):
  with pytest.raises(ValueError, match=(
      r"task.train_data.seq_length is 64 in params_override but the records were written with "
      r"max_seq_length=32 \(.*train.metadata.json\); make them match, or leave seq_length out")):
    _params(records, 'task.train_data.seq_length=64')
  # An agreeing value is taken; records without metadata change nothing.
  params, lines = _params(records, 'task.train_data.seq_length=32')
  assert params.task.train_data.seq_length == 32 and 'seq_length=32,' in lines[0]
  params = train_utils.build_params('bert/pretraining', [MODERN_YAML],
                                    'task.train_data.input_path=dummy')
  assert record_fields.fill_from_records(params) == []
  assert params.task.train_data.seq_length == 128


def test_override_keys_of_each_form():
  assert record_fields.override_keys('a.b=1,c.d.e=x') == {'a', 'a.b', 'c', 'c.d', 'c.d.e'}
  assert record_fields.override_keys({'task.train_data.seq_length': 8}) == {
      'task', 'task.train_data', 'task.train_data.seq_length'}
  assert record_fields.override_keys('{trainer: {train_steps: 3}}') == {
      'trainer', 'trainer.train_steps'}
  assert record_fields.override_keys(None) == set()


@pytest.mark.slow
def test_train_py_on_the_shipped_yaml_takes_the_records_fields(records, tmp_path):
  model_dir = tmp_path / 'run'
  overrides = ','.join(
      testing.tiny_overrides('modernbert') + [
          f'task.train_data.input_path={records}/train.tfrecord*',
          'task.train_data.global_batch_size=4', 'task.validation_data.global_batch_size=4',
          'trainer.train_steps=2', 'trainer.steps_per_loop=1', 'trainer.validation_steps=1',
          'trainer.validation_interval=2', 'trainer.checkpoint_interval=2',
          'runtime.distribution_strategy=one_device'])
  result = toy_task.train_py(f'--config_file={MODERN_YAML}', '--experiment=bert/pretraining',
                             '--mode=train_and_eval', f'--model_dir={model_dir}',
                             f'--params_override={overrides}')
  assert result.returncode == 0, result.stderr[-3000:]
  assert "from the records' metadata: " in result.stderr
  assert 'vocab_size=46 (the config had 30522)' in result.stderr
  assert 'eval at step 2: ' in result.stdout
  # A bad start (a disagreeing override) leaves a fresh model_dir as it was: not there.
  bad_dir = tmp_path / 'bad'
  result = toy_task.train_py(f'--config_file={MODERN_YAML}', '--experiment=bert/pretraining',
                             f'--model_dir={bad_dir}',
                             f'--params_override={overrides},task.train_data.seq_length=64')
  assert result.returncode == 1 and 'make them match' in result.stderr
  assert not bad_dir.exists()


def test_fields_come_from_records_at_a_url(records):
  """The same set in a bucket (TensorFlow's ram:// stands in for gs://): its metadata is found
  through the glob and the held-out set named at that URL."""
  remote = 'ram://record_fields'
  tf.io.gfile.makedirs(remote)
  for name in os.listdir(records):
    tf.io.gfile.copy(os.path.join(records, name), f'{remote}/{name}', overwrite=True)
  params, lines = _params(remote)
  assert params.task.train_data.seq_length == 32
  assert params.task.validation_data.input_path == f'{remote}/validation.tfrecord'
  assert lines[0].startswith(f'{remote}/train.metadata.json: seq_length=32 (the config had 128)')
