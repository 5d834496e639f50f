"""Tests for official/core/train_utils.py."""

import types

import pytest
import tensorflow as tf
import yaml

from official.core import checkpointing
from official.core import train_utils
from official.modeling import hyperparams
from tests.core import toy_task  # pylint: disable=unused-import  # noqa: F401  (registers test/toy_regression)


def _flags(**kwargs):
  defaults = dict(experiment='test/toy_regression', config_file=[], params_override=None)
  defaults.update(kwargs)
  return types.SimpleNamespace(**defaults)


def test_precedence_defaults_then_files_in_order_then_override(tmp_path):
  first, second = tmp_path / 'a.yaml', tmp_path / 'b.yaml'
  first.write_text('trainer: {train_steps: 7, steps_per_loop: 7}\ntask: {model: {width: 3}}\n')
  second.write_text('trainer: {train_steps: 9}\n')
  params = train_utils.parse_configuration(_flags(
      config_file=[str(first), str(second)], params_override='trainer.steps_per_loop=2'))
  assert params.trainer.train_steps == 9          # the later file wins
  assert params.trainer.steps_per_loop == 2       # the override wins over the files
  assert params.task.model.width == 3             # the first file still applies
  assert params.trainer.summary_interval == 5     # the experiment default


def test_errors_name_the_file_or_key(tmp_path):
  with pytest.raises(FileNotFoundError, match='missing.yaml'):
    train_utils.parse_configuration(_flags(config_file=[str(tmp_path / 'missing.yaml')]))
  bad = tmp_path / 'bad.yaml'
  bad.write_text('task: {model: {widht: 3}}\n')
  with pytest.raises(hyperparams.ConfigError, match=r'task\.model\.widht.*bad\.yaml'):
    train_utils.parse_configuration(_flags(config_file=[str(bad)]))
  with pytest.raises(hyperparams.ConfigError, match=r'task\.model\.width'):
    train_utils.parse_configuration(_flags(params_override='task.model.width=0'))


def test_serialize_config_round_trips(tmp_path):
  params = train_utils.parse_configuration(_flags(params_override='trainer.train_steps=3'))
  path = train_utils.serialize_config(params, str(tmp_path / 'new_dir'))
  with open(path) as f:
    written = yaml.safe_load(f)
  assert written['trainer']['train_steps'] == 3
  assert written['task']['model']['width'] == 4
  assert train_utils.is_chief()
  assert train_utils.writable_dir(str(tmp_path)) == str(tmp_path)


def _strategy(cluster, task_type, task_id):
  resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
      tf.train.ClusterSpec(cluster), task_type=task_type, task_id=task_id)
  return types.SimpleNamespace(cluster_resolver=resolver)


def test_only_the_chief_writes_into_model_dir(tmp_path):
  workers = {'worker': ['a:1', 'b:2']}
  assert train_utils.is_chief(_strategy(workers, 'worker', 0))
  non_chief = _strategy(workers, 'worker', 1)
  assert not train_utils.is_chief(non_chief)
  private = train_utils.writable_dir(str(tmp_path), non_chief)
  assert private != str(tmp_path) and tf.io.gfile.isdir(private)
  tf.io.gfile.rmtree(private)
  with_chief = {'chief': ['c:0'], 'worker': ['a:1']}
  assert train_utils.is_chief(_strategy(with_chief, 'chief', 0))
  assert not train_utils.is_chief(_strategy(with_chief, 'worker', 0))


def test_finite_checks_of_variables_checkpoints_and_files(tmp_path):
  weights = tf.Variable([1.0, 2.0])
  checkpoint = tf.train.Checkpoint(weights=weights, step=tf.Variable(3, dtype=tf.int64))
  assert checkpointing.checkpoint_is_finite(checkpoint)
  assert [v.name for v in checkpointing.checkpoint_variables(checkpoint)] == [weights.name]
  path = checkpoint.write(str(tmp_path / 'good'))
  assert checkpointing.checkpoint_file_is_finite(path)
  weights.assign([1.0, float('inf')])
  assert not checkpointing.checkpoint_is_finite(checkpoint)
  assert not checkpointing.variables_are_finite([weights])
  path = checkpoint.write(str(tmp_path / 'bad'))
  assert not checkpointing.checkpoint_file_is_finite(path)


def test_best_checkpoint_exporter_refuses_non_finite_weights(tmp_path, caplog):
  weights = tf.Variable([float('nan')])
  exporter = train_utils.BestCheckpointExporter(str(tmp_path / 'best'), 'accuracy', 'higher')
  assert not exporter.maybe_export_checkpoint(tf.train.Checkpoint(w=weights), {'accuracy': 0.5},
                                              global_step=5)
  assert 'step 5: the weights hold NaN or Inf; not exported' in caplog.text
  assert exporter.best_ckpt_path is None and exporter.best_ckpt_logs is None
  assert not (tmp_path / 'best' / 'info.json').exists()
  weights.assign([1.0])
  assert exporter.maybe_export_checkpoint(tf.train.Checkpoint(w=weights), {'accuracy': 0.5}, 6)
  assert exporter.best_ckpt_path.endswith('best_ckpt-1')


def test_check_model_dir(tmp_path):
  train_utils.check_model_dir(str(tmp_path / 'new' / 'run'))
  assert (tmp_path / 'new' / 'run').is_dir()
  (tmp_path / 'file').write_text('x')
  with pytest.raises(ValueError, match=f'--model_dir={tmp_path}/file: expected a directory, '
                     'found a file'):
    train_utils.check_model_dir(str(tmp_path / 'file'))
  with pytest.raises(ValueError, match='cannot create the directory'):
    train_utils.check_model_dir(str(tmp_path / 'file' / 'run'))


def test_check_model_dir_refuses_a_directory_it_cannot_write(tmp_path, monkeypatch):
  # (A chmod'ed directory stops no one when the tests run as root: the check itself is tested.)
  monkeypatch.setattr(train_utils.os, 'access', lambda path, mode: False)
  with pytest.raises(ValueError, match=f'--model_dir={tmp_path}: expected a writable directory, '
                     'found one that is not writable'):
    train_utils.check_model_dir(str(tmp_path))
