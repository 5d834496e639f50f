"""Tests for official/nlp/tasks/tagging.py and the `bert/tagging` experiment."""

import numpy as np
import pytest
import tensorflow as tf

import official.common.registry_imports  # pylint: disable=unused-import  # noqa: F401  (registers the experiments)
from official.core import exp_factory
from official.core import task_factory
from official.modeling import hyperparams
from official.modeling import optimization
from official.nlp.configs import encoders
from official.nlp.data import tagging_dataloader
from official.nlp.modeling import models
from official.nlp.tasks import tagging
from tests import testing
from tests.nlp.serving import tiny_run

ENCODER = encoders.EncoderConfig(bert=encoders.BertEncoderConfig(**testing.tiny_config(
    vocab_size=30, max_position_embeddings=16, dropout_rate=0.0, attention_dropout_rate=0.0)))
TAGS = ['O', 'B-PER', 'I-PER', 'B-LOC']


def _config(**kwargs):
  data = tagging_dataloader.TaggingDataConfig(seq_length=8, global_batch_size=2)
  return tagging.TaggingConfig(model=tagging.ModelConfig(encoder=ENCODER, head_dropout=0.0),
                               class_names=TAGS, train_data=data, **kwargs)


def _batch():
  ids = tf.constant(np.random.default_rng(0).integers(5, 30, (2, 8)), tf.int32)
  labels = tf.constant([[-1, 1, 2, -1, 0, -1, -1, -1], [-1, 3, 0, 0, -1, -1, -1, -1]], tf.int32)
  return ({'input_word_ids': ids, 'input_mask': tf.ones_like(ids),
           'input_type_ids': tf.zeros_like(ids)}, labels)


def test_loss_counts_only_labelled_positions():
  task = tagging.TaggingTask(_config())
  logits = np.random.default_rng(1).normal(size=(2, 8, 4)).astype(np.float32)
  labels = _batch()[1].numpy()
  log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
  picked = [log_probs[b, s, labels[b, s]] for b in range(2) for s in range(8) if labels[b, s] >= 0]
  expected = -np.mean(picked)
  got = task.build_losses(tf.constant(labels), tf.constant(logits))
  assert float(got) == pytest.approx(expected, rel=1e-5)
  accuracy = task.build_metrics()[0]
  accuracy.update_state(tf.constant(labels), tf.constant(logits))
  correct = [np.argmax(logits[b, s]) == labels[b, s]
             for b in range(2) for s in range(8) if labels[b, s] >= 0]
  assert float(accuracy.result()) == pytest.approx(np.mean(correct))


def test_subword_to_word_labels():
  assert tagging.subword_to_word_labels([9, 1, 2, 2, 3, 9], [-1, 0, 1, 1, 2, -1]) == [1, 2, 3]
  assert tagging.subword_to_word_labels([5, 4, 7], [-1, -1, -1]) == []


def test_word_level_tags_and_span_metrics_from_subword_predictions():
  task = tagging.TaggingTask(_config())
  labels = _batch()[1].numpy()
  # Sentence 0 words: PER span (B-PER I-PER) + O; sentence 1: B-LOC O O.
  predict = np.zeros_like(labels)
  predict[0, [1, 2, 3, 4]] = [1, 2, 3, 0]  # position 3 is a later sub-word: ignored
  predict[1, [1, 2, 3]] = [1, 0, 0]        # LOC predicted as PER
  predicted, gold = tagging.word_level_tags(predict, labels, TAGS)
  assert gold == [['B-PER', 'I-PER', 'O'], ['B-LOC', 'O', 'O']]
  assert predicted == [['B-PER', 'I-PER', 'O'], ['B-PER', 'O', 'O']]
  state = task.aggregate_logs(None, {'predict_ids': [predict[:1]], 'label_ids': [labels[:1]]})
  state = task.aggregate_logs(state, {'predict_ids': [predict[1:]], 'label_ids': [labels[1:]]})
  # 1 of 2 predicted spans right, 1 of 2 gold spans found; 5 of 6 word tags right.
  assert task.reduce_aggregated_logs(state) == pytest.approx(
      {'precision': 0.5, 'recall': 0.5, 'f1': 0.5, 'accuracy': 5 / 6})
  # Model Garden's keyword and per-replica tuples give the same state.
  mg_state = task.aggregate_logs(step_outputs={'predict_ids': (predict[:1], predict[1:]),
                                               'label_ids': (labels[:1], labels[1:])})
  assert task.reduce_aggregated_logs(mg_state) == task.reduce_aggregated_logs(state)


def test_validation_step_returns_ids_for_aggregation():
  task = tagging.TaggingTask(_config())
  model = task.build_model()
  assert isinstance(model, models.BertTokenClassifier)
  features, labels = _batch()
  logs = task.validation_step((features, labels), model, task.build_metrics())
  logits = model(features, training=False)['logits'].numpy()
  np.testing.assert_array_equal(logs['predict_ids'], logits.argmax(-1))
  np.testing.assert_array_equal(logs['label_ids'], labels)


@pytest.mark.slow
@pytest.mark.parametrize('freeze', [True, False])
def test_freeze_encoder(freeze):
  task = tagging.TaggingTask(_config(freeze_encoder=freeze))
  model = task.build_model()
  optimizer = task.create_optimizer(optimization.OptimizationConfig.from_dict({
      'optimizer': {'type': 'adamw'},
      'learning_rate': {'type': 'constant', 'constant': {'learning_rate': 0.01}}}))
  encoder = model.checkpoint_items['encoder']
  before = [v.numpy() for v in encoder.weights]
  head = model.classifier.kernel.numpy()
  for _ in range(2):
    task.train_step(_batch(), model, optimizer)
  changed = any(not np.array_equal(v.numpy(), b) for v, b in zip(encoder.weights, before))
  assert changed != freeze
  assert not np.array_equal(model.classifier.kernel.numpy(), head)


def test_initialize_restores_encoder_only(tmp_path):
  source = tagging.TaggingTask(_config()).build_model()
  for variable in source.weights:
    variable.assign(tf.random.stateless_normal(variable.shape, [3, 4]))
  tf.train.Checkpoint(**source.checkpoint_items).save(str(tmp_path / 'ckpt'))
  task = tagging.TaggingTask(_config(init_checkpoint=str(tmp_path)))
  model = task.build_model()
  head = model.classifier.kernel.numpy()
  task.initialize(model)
  for got, want in zip(model.checkpoint_items['encoder'].weights, source.encoder.weights):
    np.testing.assert_array_equal(got.numpy(), want.numpy())
  np.testing.assert_array_equal(model.classifier.kernel.numpy(), head)


def test_class_names_are_required():
  config = _config()
  config.class_names = None
  with pytest.raises(hyperparams.ConfigError, match='class_names: is required'):
    config.validate()
  config.class_names = ['O', 'O']
  with pytest.raises(hyperparams.ConfigError, match=r"duplicate tags \['O'\]"):
    config.validate()


def test_experiment_is_registered():
  params = exp_factory.get_exp_config('bert/tagging')
  assert isinstance(params.task, tagging.TaggingConfig)
  params.task.class_names = TAGS
  params.task.model.encoder = ENCODER
  with pytest.raises(hyperparams.ConfigError, match=r'task.train_data.seq_length: 128 exceeds '
                     r'model.encoder.bert.max_position_embeddings=16'):
    params.validate()
  params.task.train_data.seq_length = params.task.validation_data.seq_length = 16
  params.validate()
  assert isinstance(task_factory.get_task(params.task), tagging.TaggingTask)


@pytest.mark.slow
def test_dummy_inputs_and_predict(tmp_path):
  config = _config()
  config.train_data = config.train_data.replace(input_path='dummy')
  task = tagging.TaggingTask(config)
  features, labels = next(iter(task.build_inputs(config.train_data)))
  assert features['input_word_ids'].shape == (2, 8) and labels.shape == (2, 8)
  assert labels.numpy().min() >= -1 and labels.numpy().max() < len(TAGS)

  rng = np.random.default_rng(2)
  path = str(tmp_path / 'test.tfrecord')
  all_labels = []
  with tf.io.TFRecordWriter(path) as writer:
    for i in range(5):
      ids = rng.integers(5, 30, 8)
      labels = rng.integers(-1, len(TAGS), 8)
      all_labels.append(labels)
      feature = {name: tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))
                 for name, values in (('input_ids', ids), ('input_mask', np.ones_like(ids)),
                                      ('segment_ids', np.zeros_like(ids)), ('label_ids', labels),
                                      ('sentence_id', [4 - i]), ('sub_sentence_id', [0]))}
      writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
  params = tagging_dataloader.TaggingDataConfig(
      input_path=path, seq_length=8, is_training=False, global_batch_size=2, drop_remainder=False,
      include_sentence_id=True)
  model = task.build_model()
  results = tagging.predict(task, params, model)
  assert [r[:2] for r in results] == [(i, 0) for i in range(5)]
  features, _ = next(iter(task.build_inputs(params.replace(global_batch_size=5))))
  features = {k: v for k, v in features.items() if k not in ('sentence_id', 'sub_sentence_id')}
  predicted = model(features, training=False)['logits'].numpy().argmax(-1)
  for record, labels in enumerate(all_labels):  # record i has sentence id 4 - i
    assert results[4 - record][2] == predicted[record][labels >= 0].tolist()
  with pytest.raises(ValueError, match='include_sentence_id'):
    tagging.predict(task, params.replace(include_sentence_id=False), model)


@pytest.mark.slow
def test_modernbert_encoder_restores_from_its_pretraining_run_and_tags(tiny_runs):
  run = tiny_runs.saved('modernbert')  # the session's (tests/nlp/tiny_runs.py)
  data = tagging_dataloader.TaggingDataConfig(input_path='dummy', seq_length=tiny_run.SEQ_LENGTH,
                                              global_batch_size=2)
  config = tagging.TaggingConfig(
      init_checkpoint=run['model_dir'], class_names=TAGS, train_data=data,
      validation_data=data.replace(is_training=False),
      model=tagging.ModelConfig(encoder=encoders.EncoderConfig.from_dict(
          tiny_run.encoder_config('modernbert')), head_dropout=0.0))
  task = tagging.TaggingTask(config)
  model = task.build_model()
  encoder = model.checkpoint_items['encoder']
  assert type(encoder).__name__ == 'ModernBertEncoder'
  head = model.classifier.kernel.numpy()
  task.initialize(model)
  tiny_run.assert_weights(encoder, tiny_runs.weights('modernbert'))
  np.testing.assert_array_equal(model.classifier.kernel.numpy(), head)  # the head starts fresh
  optimizer = tagging.TaggingTask.create_optimizer(optimization.OptimizationConfig.from_dict({
      'optimizer': {'type': 'adamw'},
      'learning_rate': {'type': 'constant', 'constant': {'learning_rate': 0.01}}}))
  batch = next(iter(task.build_inputs(data)))
  losses = [float(task.train_step(batch, model, optimizer)['loss']) for _ in range(3)]
  assert np.all(np.isfinite(losses)) and losses[-1] < losses[0]
  logs = task.validation_step(batch, model, task.build_metrics(training=False))
  assert logs['predict_ids'].shape == (2, tiny_run.SEQ_LENGTH)
