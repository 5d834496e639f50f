"""Tests for official/core/export_base.py."""

import os

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official.core import export_base


class _Module(export_base.ExportModule):
  """Serves [batch, 3] floats: preprocessor -> inference step -> postprocessor."""

  @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
  def serve(self, inputs):
    x = self.preprocessor(inputs) if self.preprocessor else inputs
    x = self.inference_step(x)
    return {'outputs': self.postprocessor(x) if self.postprocessor else x}

  def get_inference_signatures(self, function_keys):
    return {key: self.serve.get_concrete_function() for key in function_keys.values()}


def _dense() -> tf_keras.layers.Dense:
  layer = tf_keras.layers.Dense(2, kernel_initializer='ones')
  layer(tf.zeros([1, 3]))
  return layer


def test_export_restores_the_checkpoint_and_serves_it(tmp_path):
  trained = _dense()
  trained.kernel.assign(np.arange(6, dtype=np.float32).reshape(3, 2))
  prefix = tf.train.Checkpoint(model=trained).save(str(tmp_path / 'ckpt' / 'ckpt'))
  module = _Module(params=None, model=_dense())  # untrained: weights come from the checkpoint
  export_dir = export_base.export(module, {'serve': 'predict'}, str(tmp_path / 'export'),
                                  checkpoint_path=os.path.dirname(prefix), timestamped=False)
  assert export_dir == str(tmp_path / 'export')
  inputs = np.array([[1.0, 1.0, 1.0]], np.float32)
  outputs = tf.saved_model.load(export_dir).signatures['predict'](tf.constant(inputs))
  np.testing.assert_allclose(outputs['outputs'].numpy(), inputs @ np.arange(6).reshape(3, 2))


def test_inference_step_gets_the_model_and_processors_wrap_it():
  module = _Module(params=None, model=_dense(),
                   inference_step=lambda inputs, model: tf.nn.softmax(model(inputs)),
                   preprocessor=lambda inputs: inputs * 0.0, postprocessor=lambda x: x + 1.0)
  np.testing.assert_allclose(module.serve(tf.ones([1, 3]))['outputs'].numpy(), [[1.5, 1.5]])


def test_a_list_of_function_keys_serves_serving_default(tmp_path):
  export_dir = export_base.export(_Module(None, _dense()), ['serve'], str(tmp_path))
  assert os.path.dirname(export_dir) == str(tmp_path)
  assert os.path.basename(export_dir).isdigit()
  assert list(tf.saved_model.load(export_dir).signatures) == ['serving_default']
  with pytest.raises(ValueError, match=r"exactly one function key .* found \['a', 'b'\]"):
    export_base.export(_Module(None, _dense()), ['a', 'b'], str(tmp_path))


def test_timestamped_dir_waits_for_a_free_second(tmp_path, monkeypatch):
  clock = iter([100.0, 100.0, 101.0])
  monkeypatch.setattr(export_base.time, 'time', lambda: next(clock))
  monkeypatch.setattr(export_base.time, 'sleep', lambda seconds: None)
  (tmp_path / '100').mkdir()
  assert export_base.get_timestamped_export_dir(str(tmp_path)) == f'{tmp_path}/101'.encode()


def test_timestamped_dir_gives_up_after_the_attempts(tmp_path, monkeypatch):
  monkeypatch.setattr(export_base.time, 'time', lambda: 7.0)
  monkeypatch.setattr(export_base.time, 'sleep', lambda seconds: None)
  (tmp_path / '7').mkdir()
  with pytest.raises(RuntimeError, match='in 10 seconds exists already'):
    export_base.get_timestamped_export_dir(str(tmp_path))
