"""ModernBERT masked-LM pretraining: configs/pretraining/modernbert_tiny.yaml through
`bert/pretraining` builds a `BertPretrainerV2` on a `ModernBertEncoder` that trains."""

import os

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

import official.common.registry_imports  # pylint: disable=unused-import  # noqa: F401  (registers the experiments)
from official.core import task_factory
from official.core import train_utils
from official.nlp.modeling import networks
from tests.paths import ROOT


@pytest.mark.slow
def test_modernbert_tiny_yaml_builds_and_trains_one_step():
  overrides = ','.join([
      'task.model.encoder.modernbert.vocab_size=64', 'task.model.encoder.modernbert.hidden_size=32',
      'task.model.encoder.modernbert.intermediate_size=48',
      'task.model.encoder.modernbert.local_attention=8',
      'task.train_data.input_path=dummy', 'task.train_data.seq_length=16',
      'task.train_data.max_predictions_per_seq=3', 'task.train_data.global_batch_size=4'])
  params = train_utils.build_params(
      'bert/pretraining', [os.path.join(ROOT, 'configs/pretraining/modernbert_tiny.yaml')],
      overrides)
  assert params.task.model.encoder.type == 'modernbert'
  assert params.task.model.cls_heads == []
  task = task_factory.get_task(params.task)
  model = task.build_model()
  encoder = model.encoder_network
  assert type(encoder) is networks.ModernBertEncoder
  assert [block.attention_window for block in encoder.transformer_layers] == [None, 8, 8]
  # Hugging Face's ModernBERT masked-LM head: no dense bias, LayerNorm without bias at norm_eps.
  head = model.masked_lm.get_config()
  assert (head['use_bias'], head['norm_use_bias'], head['norm_epsilon']) == (False, False, 1e-5)
  assert sorted(v.name for v in model.masked_lm.trainable_variables
                if v is not encoder.get_embedding_table()) == [
                    'bert/cls/predictions/output_bias/bias:0',
                    'bert/cls/predictions/transform/LayerNorm/gamma:0',
                    'bert/cls/predictions/transform/dense/kernel:0']
  batch = next(iter(task.build_inputs(params.task.train_data)))
  optimizer = tf_keras.optimizers.Adam(1e-3)
  before = [v.numpy() for v in encoder.trainable_weights]
  logs = task.train_step(batch, model, optimizer, task.build_metrics())
  assert np.isfinite(float(logs['loss']))
  changed = [not np.allclose(b, v.numpy()) for b, v in zip(before, encoder.trainable_weights)]
  assert all(changed), [v.name for v, c in zip(encoder.trainable_weights, changed) if not c]
  assert model(batch)['mlm_logits'].shape == (4, 3, 64)
  assert tf.reduce_all(tf.math.is_finite(model(batch)['mlm_logits']))
