"""ALBERT pretraining end to end, in process: text -> sentence-order records ->
configs/pretraining/albert_tiny.yaml through `bert/pretraining` -> a checkpoint with Model Garden's
AlbertEncoder keys -> a sentence-prediction task initialized from it."""

import os

import numpy as np
import pytest
import tensorflow as tf

import official.common.registry_imports  # pylint: disable=unused-import  # noqa: F401  (registers the experiments)
from official.core import task_factory
from official.core import train_lib
from official.core import train_utils
from official.nlp.modeling import networks
from official.nlp.tools import training_curves
from tests.nlp.data import pretraining_records
from tests.paths import ROOT

WORDS = [f'w{i}' for i in range(24)]
SEQ, PREDICTIONS = 16, 3


def _records(tmp_path):
  """Sentence-order records of a corpus whose sentences walk the word list in order."""
  output, metadata = pretraining_records.walking_corpus_records(
      tmp_path, WORDS, 40, SEQ, PREDICTIONS, dupe_factor=4, sentence_order=True)
  assert metadata['sentence_order']
  return output, len(WORDS) + 5  # the 5 special tokens, then the words


@pytest.mark.slow
def test_tiny_albert_pretrains_from_sentence_order_records(tmp_path):
  path, vocab_size = _records(tmp_path)
  overrides = ','.join([
      f'task.model.encoder.albert.vocab_size={vocab_size}',
      'task.model.encoder.albert.embedding_width=16', 'task.model.encoder.albert.hidden_size=32',
      'task.model.encoder.albert.intermediate_size=64',
      'task.model.encoder.albert.num_attention_heads=2',
      'task.model.encoder.albert.max_position_embeddings=16',
      'task.model.cls_heads=[{name: next_sentence, num_classes: 2, inner_dim: 32}]',
      f'task.train_data.input_path={path}', f'task.train_data.seq_length={SEQ}',
      f'task.train_data.max_predictions_per_seq={PREDICTIONS}',
      'task.train_data.global_batch_size=16',
      f'task.validation_data.input_path={path}', f'task.validation_data.seq_length={SEQ}',
      f'task.validation_data.max_predictions_per_seq={PREDICTIONS}',
      'task.validation_data.global_batch_size=16',
      'trainer.train_steps=20', 'trainer.steps_per_loop=10', 'trainer.summary_interval=10',
      'trainer.checkpoint_interval=20', 'trainer.validation_interval=20',
      'trainer.validation_steps=2',
      'trainer.optimizer_config.learning_rate.polynomial.initial_learning_rate=0.01',
      'trainer.optimizer_config.learning_rate.polynomial.decay_steps=20',
      'trainer.optimizer_config.warmup.polynomial.warmup_steps=2',
      'runtime.distribution_strategy=one_device',
  ])
  params = train_utils.build_params(
      'bert/pretraining', [os.path.join(ROOT, 'configs/pretraining/albert_tiny.yaml')], overrides)
  assert params.task.model.encoder.type == 'albert'
  assert params.trainer.optimizer_config.optimizer.type == 'lamb'
  model_dir = str(tmp_path / 'model')
  task = task_factory.get_task(params.task, logging_dir=model_dir)
  model, _ = train_lib.run_experiment(tf.distribute.get_strategy(), task, 'train_and_eval', params,
                                      model_dir)
  assert type(model.encoder_network) is networks.AlbertEncoder
  losses = [value for _, value in training_curves.read_scalars(
      os.path.join(model_dir, 'train'))['training_loss']]
  assert len(losses) == 2 and np.all(np.isfinite(losses)) and losses[-1] < losses[0], losses
  validation = training_curves.read_scalars(os.path.join(model_dir, 'validation'))
  assert validation['next_sentence_accuracy'] and validation['masked_lm_accuracy']

  # The checkpoint holds the encoder under Model Garden's AlbertEncoder keys ...
  prefix = tf.train.latest_checkpoint(model_dir)
  keys = {name.split('/.ATTRIBUTES/')[0] for name, _ in tf.train.list_variables(prefix)}
  # The tied word embeddings are saved once, as the masked-LM table (as Model Garden's are).
  assert 'masked_lm/embedding_table' in keys
  assert 'encoder/layer_with_weights-4/kernel' in keys  # embedding_projection
  assert not [k for k in keys if '/layer-' in k]
  # ... and initializes a fine-tuning task's ALBERT encoder.
  finetune = train_utils.build_params('bert/sentence_prediction', params_override=','.join([
      'task.model.encoder.type=albert', f'task.model.encoder.albert.vocab_size={vocab_size}',
      'task.model.encoder.albert.embedding_width=16', 'task.model.encoder.albert.hidden_size=32',
      'task.model.encoder.albert.intermediate_size=64',
      'task.model.encoder.albert.num_attention_heads=2',
      'task.model.encoder.albert.max_position_embeddings=16', 'task.model.num_classes=2',
      f'task.init_checkpoint={prefix}', 'task.train_data.input_path=dummy',
      f'task.train_data.seq_length={SEQ}', 'task.validation_data.input_path=dummy',
      f'task.validation_data.seq_length={SEQ}']))
  classifier_task = task_factory.get_task(finetune.task)
  classifier = classifier_task.build_model()
  classifier_task.initialize(classifier)
  np.testing.assert_array_equal(
      classifier.checkpoint_items['encoder'].get_embedding_table().numpy(),
      model.encoder_network.get_embedding_table().numpy())
