"""A row's stored fine-tuning runs belong to one model: reusing its name for another is refused."""

import json
import os

import pytest
import tensorflow as tf

from official.nlp.tools import downstream_eval

SETTINGS = downstream_eval.FinetuneSettings(learning_rates=(1e-3,), seeds=1, max_epochs=1,
                                            precision='float32')


def _source(init_checkpoint, encoder=None):
  return downstream_eval.ModelSource(name='m', path=init_checkpoint, model_dir=init_checkpoint,
                                     init_checkpoint=init_checkpoint,
                                     encoder=encoder or {'type': 'bert', 'bert': {'num_layers': 2}},
                                     origin='ours')


def test_identity_is_the_latest_checkpoint_or_the_random_encoder(tmp_path):
  model_dir = tmp_path / 'model'
  checkpoint = tf.train.Checkpoint(v=tf.Variable(1.0))
  checkpoint.save(str(model_dir / 'ckpt'))
  second = checkpoint.save(str(model_dir / 'ckpt'))
  source = _source(str(model_dir))
  assert downstream_eval.model_identity(source, pretrained=True) == os.path.abspath(second)
  random = downstream_eval.model_identity(source, pretrained=False)
  assert random.startswith('random init: ')
  assert json.loads(random[len('random init: '):]) == source.encoder


def test_another_model_under_the_same_row_is_refused(tmp_path):
  run_dir = str(tmp_path / 'row')
  os.makedirs(run_dir)
  downstream_eval.check_run_settings(run_dir, SETTINGS, model='/runs/a/ckpt-10')
  downstream_eval.check_run_settings(run_dir, SETTINGS, model='/runs/a/ckpt-10')  # the same
  with pytest.raises(ValueError, match=r"model='/runs/a/ckpt-10' \(now '/runs/b/ckpt-10'\)"):
    downstream_eval.check_run_settings(run_dir, SETTINGS, model='/runs/b/ckpt-10')


def test_rows_stored_before_the_model_was_recorded_take_it_on(tmp_path):
  run_dir = str(tmp_path / 'row')
  os.makedirs(run_dir)
  downstream_eval.check_run_settings(run_dir, SETTINGS)  # as written before `model` existed
  downstream_eval.check_run_settings(run_dir, SETTINGS, model='/runs/a/ckpt-10')
  with open(os.path.join(run_dir, downstream_eval.RUN_SETTINGS_FILE)) as f:
    assert json.load(f)['model'] == '/runs/a/ckpt-10'
  with pytest.raises(ValueError, match='model='):
    downstream_eval.check_run_settings(run_dir, SETTINGS, model='/runs/b/ckpt-10')
