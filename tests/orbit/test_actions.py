"""Tests for orbit/actions: ConditionalAction, NewBestMetric, JSONPersistedValue, exports."""

import json
import os

import tensorflow as tf

import orbit
from orbit.actions import export_saved_model


def test_conditional_action_runs_every_action_when_the_condition_holds():
  seen = []
  action = orbit.actions.ConditionalAction(lambda out: out['ok'],
                                           [lambda out: seen.append(1), lambda out: seen.append(2)])
  action({'ok': False})
  assert seen == []
  action({'ok': True})
  assert seen == [1, 2]


def test_new_best_metric_compares_and_persists(tmp_path):
  path = str(tmp_path / 'sub' / 'best.json')
  best = orbit.actions.NewBestMetric('loss', higher_is_better=False, filename=path)
  assert best.best_value == float('inf')
  assert best({'loss': tf.constant(2.0)}) and not best({'loss': 3.0}) and best({'loss': 1.5})
  with open(path) as f:
    assert json.load(f) == 1.5
  again = orbit.actions.NewBestMetric('loss', higher_is_better=False, filename=path)
  assert again.best_value == 1.5 and not again.test({'loss': 1.5})
  by_fn = orbit.actions.NewBestMetric(lambda out: out['a'] + out['b'])
  assert by_fn.commit({'a': 1, 'b': 2}) and by_fn.best_value == 3.0


def test_json_persisted_value_reads_before_the_initial_value(tmp_path):
  path = str(tmp_path / 'value.json')
  read_only = orbit.actions.JSONPersistedValue({'x': 1}, path, write_value=False)
  assert read_only.read() == {'x': 1} and not os.path.exists(path)
  value = orbit.actions.JSONPersistedValue({'x': 1}, path)
  value.write([1, 2])
  assert orbit.actions.JSONPersistedValue('ignored', path).read() == [1, 2]


def test_export_file_manager_ids_cleanup_and_subdirectories(tmp_path):
  base = str(tmp_path / 'export')
  for name in ('export-3', 'export-12', 'export-12-tmp', 'other-1'):
    (tmp_path / name).write_text('x')
  manager = orbit.actions.ExportFileManager(base, max_to_keep=2)
  assert [os.path.basename(p) for p in manager.managed_files] == ['export-3', 'export-12']
  assert manager.next_name() == f'{base}-13' and manager.next_name() == f'{base}-14'
  (tmp_path / 'export-14').write_text('x')
  manager.clean_up()
  assert [os.path.basename(p) for p in manager.managed_files] == ['export-12', 'export-14']

  step = {'value': 5}
  nested = orbit.actions.ExportFileManager(str(tmp_path / 'model'), max_to_keep=1,
                                           next_id_fn=lambda: step['value'], subdirectory='saved')
  for value in (5, 9):
    step['value'] = value
    os.makedirs(nested.next_name())
  nested.clean_up()
  assert os.listdir(tmp_path / 'model-5') == []   # only the subdirectory is removed
  assert os.listdir(tmp_path / 'model-9') == ['saved']


def test_export_saved_model_round_trip(tmp_path):
  class Model(tf.Module):
    def __init__(self):
      super().__init__()
      self.value = tf.Variable(1.0)

    @tf.function(input_signature=[])
    def serve(self):
      return self.value * 2.0

  model = Model()
  manager = orbit.actions.ExportFileManager(str(tmp_path / 'sm'), max_to_keep=1)
  export = orbit.actions.ExportSavedModel(model, manager, signatures=model.serve)
  export({})
  model.value.assign(4.0)
  path = export({})
  assert manager.managed_files == [path]
  assert float(tf.saved_model.load(path).serve()) == 8.0


def test_safe_normpath_keeps_the_scheme():
  assert export_saved_model.safe_normpath('gs://bucket//a/./b') == 'gs://bucket/a/b'
  assert export_saved_model.safe_normpath('/tmp//a/') == '/tmp/a'
