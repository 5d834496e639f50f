"""Tests of official/core/model_dir_snapshot.py: a start that fails before its first step leaves
model_dir as it found it (and the corrected rerun is not refused as "another config")."""

import pytest

from official.core import model_dir_snapshot
from tests.core import toy_task


def test_put_back_removes_what_the_run_added_and_restores_params(tmp_path):
  model_dir = tmp_path / 'run'
  model_dir.mkdir()
  (model_dir / 'notes.txt').write_text('mine')
  (model_dir / 'params.yaml').write_text('old: 1\n')
  snapshot = model_dir_snapshot.ModelDirSnapshot.take(str(model_dir))
  (model_dir / 'params.yaml').write_text('new: 2\n')
  (model_dir / 'vocab.txt').write_text('[PAD]\n')
  (model_dir / 'train').mkdir()
  (model_dir / 'train' / 'events').write_text('x')
  assert snapshot.put_back()
  assert sorted(p.name for p in model_dir.iterdir()) == ['notes.txt', 'params.yaml']
  assert (model_dir / 'params.yaml').read_text() == 'old: 1\n'
  assert not snapshot.put_back()  # nothing left to put back


def test_put_back_removes_a_directory_it_did_not_find_and_keeps_checkpoints(tmp_path):
  model_dir = tmp_path / 'new'
  snapshot = model_dir_snapshot.ModelDirSnapshot.take(str(model_dir))
  model_dir.mkdir()
  (model_dir / 'params.yaml').write_text('a: 1\n')
  assert snapshot.put_back() and not model_dir.exists()
  # A directory with a checkpoint holds a run: it is not touched.
  model_dir.mkdir()
  (model_dir / 'params.yaml').write_text('a: 1\n')
  (model_dir / 'checkpoint').write_text('model_checkpoint_path: "ckpt-5"\n')
  (model_dir / 'ckpt-5.index').write_bytes(b'')
  assert not snapshot.put_back() and (model_dir / 'params.yaml').exists()
  assert model_dir_snapshot.ModelDirSnapshot.take('gs://bucket/run') is None


def test_a_start_that_fails_before_step_0_leaves_model_dir_as_found(tmp_path, monkeypatch):
  model_dir = tmp_path / 'run'

  def broken_inputs(self, params, input_context=None):
    raise ValueError('the records do not match the config')

  with monkeypatch.context() as patch:
    patch.setattr(toy_task.ToyRegressionTask, 'build_inputs', broken_inputs)
    with pytest.raises(ValueError, match='do not match'):
      toy_task.run_in_process(model_dir, train_steps=4, steps_per_loop=2)
  assert not model_dir.exists()
  # The corrected rerun, with another config, trains: nothing was refused as "another config".
  toy_task.run_in_process(model_dir, train_steps=2, steps_per_loop=2)
  assert toy_task.checkpoint_steps(model_dir)[-1] == 2
