"""Tests for official/nlp/tasks/electra_task.py (and an in-process run of `electra/pretraining`)."""

import os

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official.core import config_definitions as cfg
from official.nlp import api
from official.nlp.configs import electra
from official.nlp.configs import encoders
from official.nlp.data import pretrain_dataloader
from official.nlp.tasks import electra_task
from tests.paths import ROOT

TINY_YAML = os.path.join(ROOT, 'configs', 'electra', 'electra_tiny.yaml')


def _bert(hidden_size, **kwargs):
  return encoders.EncoderConfig(bert=encoders.BertEncoderConfig(
      vocab_size=40, hidden_size=hidden_size, num_layers=1, num_attention_heads=2,
      intermediate_size=2 * hidden_size, max_position_embeddings=16, **kwargs))


def _task(use_next_sentence_label=True, discriminator_loss_weight=50.0, **data):
  data = dict(dict(input_path='dummy', seq_length=8, max_predictions_per_seq=2,
                   global_batch_size=2, use_next_sentence_label=use_next_sentence_label), **data)
  return electra_task.ElectraPretrainTask(electra_task.ElectraPretrainConfig(
      model=electra.ElectraPretrainerConfig(
          generator_encoder=_bert(8, embedding_size=16), discriminator_encoder=_bert(16),
          num_masked_tokens=2, sequence_length=8,
          discriminator_loss_weight=discriminator_loss_weight),
      train_data=pretrain_dataloader.BertPretrainDataConfig(**data)))


def _log_softmax(x):
  x = x - x.max(-1, keepdims=True)
  return x - np.log(np.exp(x).sum(-1, keepdims=True))


def test_losses_and_metrics_match_numpy():
  rng = np.random.default_rng(0)
  task = _task(discriminator_loss_weight=10.0)
  labels = {'masked_lm_ids': rng.integers(0, 40, (2, 2)).astype(np.int32),
            'masked_lm_weights': np.array([[1.0, 1.0], [1.0, 0.0]], np.float32),
            'next_sentence_labels': np.array([[1], [0]], np.int32),
            'input_mask': np.array([[1] * 8, [1] * 5 + [0] * 3], np.int32)}
  outputs = {'lm_outputs': rng.normal(size=(2, 2, 40)).astype(np.float32),
             'sentence_outputs': rng.normal(size=(2, 2)).astype(np.float32),
             'disc_logits': rng.normal(size=(2, 8)).astype(np.float32),
             'disc_label': rng.integers(0, 2, (2, 8)).astype(np.int32)}
  metrics = task.build_metrics()
  assert [m.name for m in metrics] == [
      'masked_lm_accuracy', 'lm_example_loss', 'discriminator_accuracy', 'next_sentence_accuracy',
      'next_sentence_loss', 'discriminator_loss', 'total_loss']
  loss = task.build_losses(labels, {k: tf.constant(v) for k, v in outputs.items()}, metrics)
  task.process_metrics(metrics, labels, outputs)
  values = {m.name: float(m.result()) for m in metrics}

  lm = -np.take_along_axis(_log_softmax(outputs['lm_outputs']),
                           labels['masked_lm_ids'][..., None], -1)[..., 0]
  weights = labels['masked_lm_weights']
  mlm = (lm * weights).sum() / weights.sum()
  nsp = -np.take_along_axis(_log_softmax(outputs['sentence_outputs']),
                            labels['next_sentence_labels'], -1).mean()
  z, y, mask = outputs['disc_logits'], outputs['disc_label'], labels['input_mask']
  per_token = np.maximum(z, 0) - z * y + np.log1p(np.exp(-np.abs(z)))
  rtd = (per_token * mask).sum() / mask.sum()
  np.testing.assert_allclose(float(loss), mlm + nsp + 10.0 * rtd, rtol=1e-5)
  np.testing.assert_allclose(values['lm_example_loss'], mlm, rtol=1e-5)
  np.testing.assert_allclose(values['next_sentence_loss'], nsp, rtol=1e-5)
  np.testing.assert_allclose(values['discriminator_loss'], rtd, rtol=1e-5)
  np.testing.assert_allclose(values['total_loss'], float(loss), rtol=1e-6)
  right = ((z > 0).astype(int) == y) * mask
  np.testing.assert_allclose(values['discriminator_accuracy'], right.sum() / mask.sum(), rtol=1e-6)
  lm_right = (outputs['lm_outputs'].argmax(-1) == labels['masked_lm_ids']) * weights
  np.testing.assert_allclose(values['masked_lm_accuracy'], lm_right.sum() / weights.sum())


def test_without_next_sentence_labels_there_is_no_sentence_loss():
  task = _task(use_next_sentence_label=False)
  assert 'next_sentence_loss' not in [m.name for m in task.build_metrics()]
  batch = next(iter(task.build_inputs(task.task_config.train_data)))
  assert 'next_sentence_labels' not in batch
  model = task.build_model()
  logs = task.validation_step(batch, model, task.build_metrics())
  assert np.isfinite(float(logs['loss']))


def test_build_model_ties_embeddings_and_initialize_restores_the_discriminator(tmp_path):
  task = _task()
  model = task.build_model()
  assert (model.generator_network.get_embedding_table() is
          model.discriminator_network.get_embedding_table())
  assert model.masked_lm.activation == 'gelu'
  source = _task().build_model()
  path = tf.train.Checkpoint(**source.checkpoint_items).write(str(tmp_path / 'ckpt'))
  task.task_config.init_checkpoint = path
  task.initialize(model)
  for mine, theirs in zip(model.discriminator_network.weights,
                          source.discriminator_network.weights):
    np.testing.assert_array_equal(mine.numpy(), theirs.numpy())


@pytest.mark.slow
def test_train_step_lowers_the_loss_on_a_fixed_batch():
  tf.random.set_seed(0)
  task = _task()
  model = task.build_model()
  batch = next(iter(task.build_inputs(task.task_config.train_data)))
  optimizer = tf_keras.optimizers.Adam(1e-2)
  metrics = task.build_metrics()
  first = float(task.train_step(batch, model, optimizer, metrics)['loss'])
  for _ in range(5):
    last = float(task.train_step(batch, model, optimizer, metrics)['loss'])
  assert last < first


def test_build_inputs_refuses_a_generic_data_config():
  with pytest.raises(TypeError, match='needs a BertPretrainDataConfig, found DataConfig'):
    _task().build_inputs(cfg.DataConfig(input_path='dummy'))


@pytest.mark.slow
def test_tiny_experiment_trains_in_process(tmp_path):
  overrides = {
      'task.model.generator_encoder.bert': {'vocab_size': 50, 'hidden_size': 8,
                                            'intermediate_size': 16, 'embedding_size': 16,
                                            'max_position_embeddings': 16},
      'task.model.discriminator_encoder.bert': {'vocab_size': 50, 'hidden_size': 16,
                                                'intermediate_size': 32, 'num_layers': 1,
                                                'max_position_embeddings': 16},
      'task.train_data': {'input_path': 'dummy', 'seq_length': 16, 'max_predictions_per_seq': 3,
                          'global_batch_size': 4},
      'task.validation_data': {'input_path': 'dummy', 'seq_length': 16,
                               'max_predictions_per_seq': 3, 'global_batch_size': 4},
      'trainer': {'steps_per_loop': 2, 'summary_interval': 2, 'checkpoint_interval': 2,
                  'validation_steps': 1},
      'runtime.distribution_strategy': 'off'}
  params = api.load_config(TINY_YAML, experiment='electra/pretraining', overrides=overrides)
  result = api.train(params, str(tmp_path), steps=2)
  assert result.step == 2
  assert {'lm_example_loss', 'discriminator_loss', 'discriminator_accuracy',
          'total_loss'} <= set(result.eval_logs)
  assert all(np.isfinite(v) for v in result.eval_logs.values())
  assert os.path.exists(os.path.join(tmp_path, 'ckpt-2.index'))
