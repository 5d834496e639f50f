"""Tests for official/nlp/tasks/dual_encoder.py ."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official.core import task_factory
from official.modeling import hyperparams
from official.nlp.configs import encoders
from official.nlp.data import dual_encoder_dataloader
from official.nlp.modeling import models
from official.nlp.tasks import dual_encoder
from tests import testing

ENCODER = encoders.EncoderConfig(bert=encoders.BertEncoderConfig(**testing.tiny_config(
    vocab_size=30, max_position_embeddings=16, dropout_rate=0.0, attention_dropout_rate=0.0)))


def _config(bidirectional=False, **kwargs):
  data = dual_encoder_dataloader.DualEncoderDataConfig(input_path='dummy', seq_length=8,
                                                       global_batch_size=4)
  model = dual_encoder.ModelConfig(encoder=ENCODER, max_sequence_length=8, logit_scale=10.0,
                                   bidirectional=bidirectional, eval_top_k=(1, 2))
  return dual_encoder.DualEncoderConfig(model=model, train_data=data, validation_data=data,
                                        **kwargs)


def _log_softmax(x):
  x = x - x.max(axis=1, keepdims=True)
  return x - np.log(np.exp(x).sum(axis=1, keepdims=True))


LOGITS = np.random.default_rng(0).normal(size=(4, 4)).astype(np.float32)


@pytest.mark.parametrize('bidirectional', [False, True])
def test_loss_ranks_each_pair_s_partner_first(bidirectional):
  task = dual_encoder.DualEncoderTask(_config(bidirectional))
  outputs = {'left_logits': tf.constant(LOGITS), 'right_logits': tf.constant(LOGITS.T)}
  expected = -np.mean(np.diag(_log_softmax(LOGITS)))
  if bidirectional:
    expected += -np.mean(np.diag(_log_softmax(LOGITS.T)))
  assert float(task.build_losses(None, outputs)) == pytest.approx(expected, rel=1e-5)
  with_aux = task.build_losses(None, outputs, aux_losses=[tf.constant(0.5)])
  assert float(with_aux) == pytest.approx(expected + 0.5, rel=1e-5)


def test_metrics_are_in_batch_recall_at_k():
  task = dual_encoder.DualEncoderTask(_config(bidirectional=True))
  metrics = task.build_metrics()
  assert [m.name for m in metrics] == ['batch_size_per_core', 'left_recall_at_1',
                                       'right_recall_at_1', 'left_recall_at_2',
                                       'right_recall_at_2']
  task.process_metrics(metrics, None, {'left_logits': tf.constant(LOGITS),
                                       'right_logits': tf.constant(LOGITS.T)})
  results = {m.name: float(m.result()) for m in metrics}

  def recall(logits, k):
    rank = (logits > np.diag(logits)[:, None]).sum(axis=1)  # better-scored columns
    return np.mean(rank < k)

  assert results['batch_size_per_core'] == 4
  for k in (1, 2):
    assert results[f'left_recall_at_{k}'] == pytest.approx(recall(LOGITS, k))
    assert results[f'right_recall_at_{k}'] == pytest.approx(recall(LOGITS.T, k))


@pytest.mark.slow
def test_build_model_and_dummy_inputs():
  config = _config()
  task = task_factory.get_task(config)
  assert isinstance(task, dual_encoder.DualEncoderTask)
  model = task.build_model()
  assert isinstance(model, models.DualEncoder) and model.weights
  batch = next(iter(task.build_inputs(config.train_data)))
  assert sorted(batch) == ['left_mask', 'left_type_ids', 'left_word_ids', 'right_mask',
                           'right_type_ids', 'right_word_ids']
  assert all(value.shape == (4, 8) and value.dtype == tf.int32 for value in batch.values())
  assert not np.array_equal(batch['left_word_ids'], batch['right_word_ids'])
  outputs = model(batch)
  assert outputs['left_logits'].shape == (4, 4)


@pytest.mark.slow
def test_train_steps_learn_the_pairing():
  config = _config()
  task = dual_encoder.DualEncoderTask(config)
  model = task.build_model()
  batch = next(iter(task.build_inputs(config.train_data)))
  batch['right_word_ids'] = batch['left_word_ids']  # matching texts: an easy ranking
  optimizer = tf_keras.optimizers.Adam(1e-2)
  metrics = task.build_metrics()
  losses = [float(task.train_step(batch, model, optimizer, metrics)['loss']) for _ in range(6)]
  assert losses[-1] < losses[0]
  logs = task.validation_step(batch, model, metrics)
  assert set(logs) == {'loss'}
  assert float(metrics[1].result()) > 0  # left_recall_at_1


@pytest.mark.slow
def test_fit_runs_the_task_steps():
  config = _config()
  task = dual_encoder.DualEncoderTask(config)
  model = task.build_model()
  model.compile(tf_keras.optimizers.SGD(0.1))
  history = model.fit(task.build_inputs(config.train_data), steps_per_epoch=2, epochs=1,
                      verbose=0)
  assert {'loss', 'left_recall_at_1', 'left_recall_at_2'} <= set(history.history)


@pytest.mark.slow
def test_initialize_restores_the_encoder(tmp_path):
  source = dual_encoder.DualEncoderTask(_config()).build_model()
  for variable in source.weights:
    variable.assign(tf.random.stateless_normal(variable.shape, [3, 4]))
  tf.train.Checkpoint(**source.checkpoint_items).save(str(tmp_path / 'ckpt'))
  task = dual_encoder.DualEncoderTask(_config(init_checkpoint=str(tmp_path)))
  model = task.build_model()
  task.initialize(model)
  for got, want in zip(model.checkpoint_items['encoder'].weights, source.network.weights):
    np.testing.assert_array_equal(got.numpy(), want.numpy())
  # A directory without checkpoints restores nothing; a missing path fails.
  empty = tmp_path / 'empty'
  empty.mkdir()
  dual_encoder.DualEncoderTask(_config(init_checkpoint=str(empty))).initialize(model)
  with pytest.raises(FileNotFoundError, match='no checkpoint found'):
    dual_encoder.DualEncoderTask(_config(init_checkpoint=str(tmp_path / 'nope'))).initialize(model)


def test_config_validation():
  config = _config()
  config.model.max_sequence_length = 32
  with pytest.raises(hyperparams.ConfigError, match='model.max_sequence_length.*32 exceeds'):
    config.validate()
  config = _config()
  config.train_data.seq_length = 17
  with pytest.raises(hyperparams.ConfigError, match='train_data.seq_length.*17 exceeds'):
    config.validate()
  config = _config()
  config.model.eval_top_k = (1, 0)
  with pytest.raises(hyperparams.ConfigError, match=r'eval_top_k.*expected values >= 1'):
    config.validate()
  with pytest.raises(hyperparams.ConfigError, match='TF Hub encoders are not supported'):
    _config(hub_module_url='https://tfhub.dev/x').validate()
