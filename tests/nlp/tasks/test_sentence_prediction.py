"""Tests for official/nlp/tasks/sentence_prediction.py and the registered fine-tuning
experiments."""

import json
import re
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

import official.common.registry_imports  # pylint: disable=unused-import  # noqa: F401  (registers the experiments)
from official.core import exp_factory
from official.core import task_factory
from official.modeling import hyperparams
from official.modeling import optimization
from official.nlp.configs import bert
from official.nlp.configs import encoders
from official.nlp.data import sentence_prediction_dataloader as sp_loader
from official.nlp.tasks import finetuning_metrics
from official.nlp.tasks import masked_lm
from official.nlp.tasks import sentence_prediction as sp
from tests import testing
from tests.nlp.serving import tiny_run
from tests.paths import ROOT


ENCODER = encoders.EncoderConfig(bert=encoders.BertEncoderConfig(**testing.tiny_config(
    vocab_size=30, max_position_embeddings=16, dropout_rate=0.0, attention_dropout_rate=0.0)))


def _config(num_classes=3, **kwargs):
  label_type = 'float' if num_classes == 1 else 'int'
  data = sp_loader.SentencePredictionDataConfig(input_path='dummy', seq_length=8,
                                                global_batch_size=4, label_type=label_type)
  return sp.SentencePredictionConfig(
      model=sp.ModelConfig(num_classes=num_classes, encoder=ENCODER), train_data=data,
      validation_data=data.replace(is_training=False),
      metric_type='pearson_spearman_corr' if num_classes == 1 else 'accuracy', **kwargs)


def _optimizer():
  config = optimization.OptimizationConfig.from_dict({
      'optimizer': {'type': 'adamw'},
      'learning_rate': {'type': 'constant', 'constant': {'learning_rate': 0.01}}})
  return sp.SentencePredictionTask.create_optimizer(config)


def _batch(task):
  return next(iter(task.build_inputs(task.task_config.train_data)))


def test_classification_and_regression_losses_match_numpy():
  task = sp.SentencePredictionTask(_config(3))
  logits = np.array([[1.0, 2.0, 0.5], [0.0, -1.0, 3.0]], np.float32)
  labels = np.array([1, 0])
  log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
  expected = -np.mean(log_probs[np.arange(2), labels])
  loss = task.build_losses({'label_ids': tf.constant(labels)}, tf.constant(logits))
  assert float(loss) == pytest.approx(expected, rel=1e-5)
  assert float(task.build_losses(tf.constant(labels), tf.constant(logits))) == pytest.approx(
      expected, rel=1e-5)  # a bare label tensor works too
  task = sp.SentencePredictionTask(_config(1))
  loss = task.build_losses({'label_ids': tf.constant([0.5, 2.0])}, tf.constant([[1.0], [1.0]]),
                           aux_losses=[tf.constant(0.25)])
  assert float(loss) == pytest.approx((0.25 + 1.0) / 2 + 0.25)
  with pytest.raises(ValueError, match=r"the batch has no label 'label_ids' "
                     r"\(train_data.label_field\); found keys \['label'\]"):
    task.build_losses({'label': tf.constant([0.5])}, tf.constant([[1.0]]))


@pytest.mark.slow
def test_batches_are_dicts_and_label_field_is_followed():
  config = _config(3)
  config.train_data.label_field = 'label'
  task = sp.SentencePredictionTask(config)
  assert task.label_field == 'label'
  batch = _batch(task)
  assert sorted(batch) == ['input_mask', 'input_type_ids', 'input_word_ids', 'label']
  features, labels = task._split({**batch, 'example_id': tf.constant([0, 1, 2, 3])})
  assert sorted(features) == ['input_mask', 'input_type_ids', 'input_word_ids']
  assert labels['label'] is batch['label']
  model = task.build_model()
  # Dropout is off in ENCODER and the head: the step's loss is the loss before the update.
  expected = float(task.build_losses(batch['label'], model(features, training=False)))
  logs = task.train_step(batch, model, _optimizer(), metrics=task.build_metrics())
  assert float(logs['loss']) == pytest.approx(expected, rel=1e-5)
  # The old (features, labels) pair still works.
  logs = task.validation_step((features, batch['label']), model)
  np.testing.assert_array_equal(logs['labels'], batch['label'])


def _pretraining_checkpoint(tmp_path):
  """A MaskedLMTask model with a next-sentence head, saved the way the trainer saves it."""
  config = masked_lm.MaskedLMConfig(model=bert.PretrainerConfig(
      encoder=ENCODER, cls_heads=[bert.ClsHeadConfig(inner_dim=16, num_classes=2,
                                                     name='next_sentence')]))
  config.train_data.seq_length, config.train_data.max_predictions_per_seq = 8, 2
  pretrainer = masked_lm.MaskedLMTask(config).build_model()
  for variable in pretrainer.trainable_variables:  # distinct from any fresh initialization
    variable.assign(tf.random.stateless_normal(variable.shape, [1, 2]) * 0.1)
  checkpoint = tf.train.Checkpoint(model=pretrainer, global_step=tf.Variable(5, dtype=tf.int64),
                                   **pretrainer.checkpoint_items)
  checkpoint.save(str(tmp_path / 'pre' / 'ckpt'))
  return pretrainer


@pytest.mark.slow
def test_initialize_restores_encoder_and_optionally_the_pooler(tmp_path):
  pretrainer = _pretraining_checkpoint(tmp_path)
  task = sp.SentencePredictionTask(_config(2, init_checkpoint=str(tmp_path / 'pre')))
  model = task.build_model()
  head_before = [v.numpy() for v in model.classifier.weights]
  task.initialize(model)
  for got, want in zip(model.checkpoint_items['encoder'].weights,
                       pretrainer.encoder_network.weights):
    np.testing.assert_array_equal(got.numpy(), want.numpy())
  for got, want in zip(model.classifier.weights, head_before):
    np.testing.assert_array_equal(got.numpy(), want)  # head starts fresh

  task = sp.SentencePredictionTask(_config(2, init_checkpoint=str(tmp_path / 'pre'),
                                           init_cls_pooler=True))
  model = task.build_model()
  task.initialize(model)
  nsp_pooler = pretrainer.classification_heads[0].dense
  np.testing.assert_array_equal(model.classifier.pooler_dense.kernel.numpy(),
                                nsp_pooler.kernel.numpy())


def test_initialize_errors(tmp_path):
  task = sp.SentencePredictionTask(_config(2, init_checkpoint=str(tmp_path / 'none')))
  with pytest.raises(FileNotFoundError, match='task.init_checkpoint .*none.*: no checkpoint found'):
    task.initialize(task.build_model())
  tf.train.Checkpoint(other=tf.Variable(1.0)).save(str(tmp_path / 'x' / 'ckpt'))
  task = sp.SentencePredictionTask(_config(2, init_checkpoint=str(tmp_path / 'x')))
  with pytest.raises(ValueError, match=r"cannot restore \['encoder'\] into the model"):
    task.initialize(task.build_model())


@pytest.mark.slow
@pytest.mark.parametrize('freeze', [True, False])
def test_freeze_encoder_trains_only_the_head(freeze):
  task = sp.SentencePredictionTask(_config(3, freeze_encoder=freeze))
  model = task.build_model()
  optimizer = _optimizer()
  encoder = model.checkpoint_items['encoder']
  encoder_before = [v.numpy() for v in encoder.weights]
  head_before = [v.numpy() for v in model.classifier.weights]
  batch = _batch(task)
  for _ in range(3):
    task.train_step(batch, model, optimizer)
  encoder_changed = any(not np.array_equal(v.numpy(), b)
                        for v, b in zip(encoder.weights, encoder_before))
  assert encoder_changed != freeze
  assert all(not np.array_equal(v.numpy(), b) for v, b in zip(model.classifier.weights,
                                                              head_before))


@pytest.mark.slow
def test_whole_set_metrics_through_aggregate_logs():
  task = sp.SentencePredictionTask(_config(3))
  model = task.build_model()
  metrics = task.build_metrics(training=False)
  state, all_logits, all_labels = None, [], []
  for batch in task.build_inputs(task.task_config.validation_data).take(3):
    logs = task.validation_step(batch, model, metrics)
    all_logits.append(logs['sentence_prediction'].numpy())
    all_labels.append(logs['labels'].numpy())
    # As the trainer passes them: one numpy array per replica.
    step_logs = {k: [v.numpy()] for k, v in logs.items() if k != 'loss'}
    state = task.aggregate_logs(state, step_logs)
  result = task.reduce_aggregated_logs(state)
  expected = finetuning_metrics.classification_metrics(np.concatenate(all_labels),
                                                       np.concatenate(all_logits))
  assert result == pytest.approx(expected)
  assert metrics[0].name == 'cls_accuracy'
  assert float(metrics[0].result()) == pytest.approx(expected['accuracy'])
  assert task.reduce_aggregated_logs(None) == {}

  task = sp.SentencePredictionTask(_config(1))
  model = task.build_model()
  batch = _batch(task)
  logs = task.validation_step(batch, model, task.build_metrics())
  result = task.reduce_aggregated_logs(task.aggregate_logs(None, {k: [v.numpy()] for k, v in
                                                                  logs.items()}))
  expected = finetuning_metrics.regression_metrics(batch['label_ids'].numpy(),
                                                   logs['sentence_prediction'].numpy()[:, 0])
  assert result == pytest.approx(expected)


@pytest.mark.parametrize('override, message', [
    ({'model': {'num_classes': 0}}, r'model.num_classes: must be >= 1'),
    ({'metric_type': 'pearson_spearman_corr'},
     r"metric_type: 'pearson_spearman_corr' does not fit"),
    ({'train_data': {'label_type': 'float'}}, r"train_data.label_type: 'float' does not fit "
     r'model.num_classes=3'),
    ({'validation_data': {'seq_length': 32}}, r'validation_data.seq_length: 32 exceeds'),
])
def test_config_validation(override, message):
  config = _config(3)
  config.override(override)
  with pytest.raises(hyperparams.ConfigError, match=message):
    config.validate()


def test_records_metadata_must_match_the_model(tmp_path):
  path = tmp_path / 'a.tfrecord'
  with tf.io.TFRecordWriter(str(path)) as writer:
    feature = {k: tf.train.Feature(int64_list=tf.train.Int64List(value=[1] * 8))
               for k in ('input_ids', 'input_mask', 'segment_ids')}
    feature['label_ids'] = tf.train.Feature(int64_list=tf.train.Int64List(value=[0]))
    writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
  (tmp_path / 'a.metadata.json').write_text(json.dumps({
      'format': sp_loader.FINETUNING_FORMAT, 'task': 'sentence_prediction', 'max_seq_length': 8,
      'num_classes': 2, 'label_list': ['a', 'b'], 'vocab_size': 30}))
  task = sp.SentencePredictionTask(_config(3))
  params = task.task_config.train_data.replace(input_path=str(path))
  with pytest.raises(ValueError, match=r"task.model.num_classes is 3 but the records have "
                     r"num_classes=2 \(labels \['a', 'b'\]"):
    task.build_inputs(params)


def test_experiment_is_registered():
  params = exp_factory.get_exp_config('bert/sentence_prediction')
  assert isinstance(params.task, sp.SentencePredictionConfig)
  assert params.task.validation_data.drop_remainder is False
  assert params.trainer.optimizer_config.optimizer.type == 'adamw'
  params.task.model.num_classes = 2
  params.task.model.encoder = ENCODER
  assert isinstance(task_factory.get_task(params.task), sp.SentencePredictionTask)


def _write_records(path, num_examples, seq_length=8, num_classes=3):
  rng = np.random.default_rng(1)
  with tf.io.TFRecordWriter(str(path)) as writer:
    for i in range(num_examples):
      ids = rng.integers(1, 30, seq_length)
      label = (tf.train.Feature(float_list=tf.train.FloatList(value=[rng.random()]))
               if num_classes == 1 else
               tf.train.Feature(int64_list=tf.train.Int64List(value=[i % num_classes])))
      feature = {name: tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))
                 for name, values in (('input_ids', ids), ('input_mask', np.ones_like(ids)),
                                      ('segment_ids', np.zeros_like(ids)), ('example_id', [i]))}
      feature['label_ids'] = label
      writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())


@pytest.mark.slow
@pytest.mark.parametrize('num_classes', [3, 1])
def test_predict_returns_one_prediction_per_example_in_id_order(tmp_path, num_classes):
  task = sp.SentencePredictionTask(_config(num_classes))
  model = task.build_model()
  _write_records(tmp_path / 'test.tfrecord', 10, num_classes=num_classes)
  params = sp_loader.SentencePredictionDataConfig(
      input_path=str(tmp_path / 'test.tfrecord'), seq_length=8, is_training=False,
      global_batch_size=4, drop_remainder=False, include_example_id=True,
      label_type='float' if num_classes == 1 else 'int')
  predictions = sp.predict(task, params, model)
  assert len(predictions) == 10
  batch = next(iter(task.build_inputs(params.replace(global_batch_size=10))))
  np.testing.assert_array_equal(batch['example_id'], np.arange(10))
  features = {k: batch[k] for k in ('input_word_ids', 'input_mask', 'input_type_ids')}
  logits = model(features, training=False).numpy()
  expected = logits[:, 0] if num_classes == 1 else logits.argmax(-1)
  np.testing.assert_allclose([p.numpy() for p in predictions], expected, rtol=1e-5, atol=1e-7)
  assert predictions[0].dtype == (tf.float32 if num_classes == 1 else tf.int64)
  with pytest.raises(ValueError, match='include_example_id'):
    sp.predict(task, params.replace(include_example_id=False), model)


def test_matthews_metric_type_aggregates_class_ids():
  config = _config(3)
  config.metric_type = 'matthews_corrcoef'
  task = sp.SentencePredictionTask(config)
  model = task.build_model()
  batch = _batch(task)
  logs = task.validation_step(batch, model)
  assert logs['sentence_prediction'].shape == (4, 1)  # predicted ids, as in Model Garden
  logits = model(task._split(batch)[0], training=False).numpy()
  np.testing.assert_array_equal(logs['sentence_prediction'].numpy()[:, 0], logits.argmax(-1))
  state = task.aggregate_logs(step_outputs={k: (v,) for k, v in logs.items()})
  state = task.aggregate_logs(state, step_logs=logs)
  labels = np.concatenate([batch['label_ids'].numpy()] * 2)
  expected = finetuning_metrics.classification_metrics(labels, np.concatenate([logits] * 2))
  assert task.reduce_aggregated_logs(state) == pytest.approx(expected)


def test_dummy_inputs_have_label_zero():
  for num_classes in (3, 1):
    batch = _batch(sp.SentencePredictionTask(_config(num_classes)))
    assert batch['input_word_ids'].shape == (4, 8)
    assert batch['label_ids'].dtype == (tf.float32 if num_classes == 1 else tf.int32)
    np.testing.assert_array_equal(batch['label_ids'].numpy(), np.zeros(4))


@pytest.mark.slow
def test_failed_restore_is_one_error_without_tensorflow_warnings(tmp_path):
  """A pretrained encoder of another size: one ValueError naming both shapes, and none of
  TensorFlow's per-variable 'Value in checkpoint could not be found' warnings, which it prints
  when the half-read checkpoint is freed (at exit: hence a separate process)."""
  _pretraining_checkpoint(tmp_path)
  code = f"""
import logging, sys
logging.basicConfig(level=logging.WARNING)
sys.path.insert(0, {ROOT!r})
from tests.nlp.tasks import test_sentence_prediction as t
config = t._config(2, init_checkpoint={str(tmp_path / 'pre')!r})
config.model.encoder.bert.vocab_size = 40  # the checkpoint's table has 30 rows
task = t.sp.SentencePredictionTask(config)
try:
  task.initialize(task.build_model())
except ValueError as e:
  print('ERROR', e)
"""
  result = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, cwd=ROOT,
                          timeout=300, check=True)
  assert re.search(r"^ERROR task.init_checkpoint .*: cannot restore \['encoder'\].*\(30, 16\)",
                   result.stdout, re.M), result.stdout
  assert '(40, 16)' in result.stdout
  assert 'could not be found' not in result.stderr, result.stderr[-1000:]
  assert 'unrestored values' not in result.stderr


@pytest.mark.slow
def test_build_inputs_reads_raw_text_records_with_the_text_loader(tmp_path):
  pytest.importorskip('tensorflow_text')
  (tmp_path / 'vocab.txt').write_text('\n'.join(['[PAD]', '[UNK]', '[CLS]', '[SEP]', 'a', 'b']))
  with tf.io.TFRecordWriter(str(tmp_path / 'raw.tfrecord')) as writer:
    for text, label in ((b'a b', 1), (b'b', 0)):
      feature = {'sentence': tf.train.Feature(bytes_list=tf.train.BytesList(value=[text])),
                 'label': tf.train.Feature(int64_list=tf.train.Int64List(value=[label]))}
      example = tf.train.Example(features=tf.train.Features(feature=feature))
      writer.write(example.SerializeToString())
  config = _config(2)
  config.train_data.label_field = 'label'
  task = sp.SentencePredictionTask(config)
  params = sp_loader.SentencePredictionTextDataConfig(
      input_path=str(tmp_path / 'raw.tfrecord'), text_fields=['sentence'], seq_length=8,
      global_batch_size=2, is_training=False, vocab_file=str(tmp_path / 'vocab.txt'))
  batch = next(iter(task.build_inputs(params)))
  np.testing.assert_array_equal(batch['input_word_ids'], [[2, 4, 5, 3, 0, 0, 0, 0],
                                                          [2, 5, 3, 0, 0, 0, 0, 0]])
  model = task.build_model()
  logs = task.validation_step(batch, model, task.build_metrics())
  np.testing.assert_array_equal(logs['labels'], [1, 0])


# ---- A ModernBERT encoder, pretrained by `bert/pretraining` (tests/nlp/serving/tiny_run.py).

@pytest.fixture(name='pretrained')
def _pretrained(tiny_runs):
  """The session's tiny ModernBERT pretraining run and its encoder's weights (tiny_runs.py)."""
  return dict(tiny_runs.saved('modernbert'), weights=tiny_runs.weights('modernbert'))


def _modernbert_config(num_classes=2, **kwargs):
  data = sp_loader.SentencePredictionDataConfig(input_path='dummy', seq_length=tiny_run.SEQ_LENGTH,
                                                global_batch_size=4)
  encoder = encoders.EncoderConfig.from_dict(tiny_run.encoder_config('modernbert'))
  return sp.SentencePredictionConfig(
      model=sp.ModelConfig(num_classes=num_classes, encoder=encoder), train_data=data,
      validation_data=data.replace(is_training=False), **kwargs)


@pytest.mark.slow
@pytest.mark.parametrize('use_encoder_pooler', [False, True])
def test_modernbert_encoder_restores_from_its_pretraining_run_and_fine_tunes(pretrained,
                                                                            use_encoder_pooler):
  config = _modernbert_config(init_checkpoint=pretrained['model_dir'])
  config.model.use_encoder_pooler = use_encoder_pooler
  task = sp.SentencePredictionTask(config)
  model = task.build_model()
  encoder = model.checkpoint_items['encoder']
  assert type(encoder).__name__ == 'ModernBertEncoder'
  fresh = {v.name: v.numpy() for v in encoder.weights}
  task.initialize(model)
  tiny_run.assert_weights(encoder, pretrained['weights'])
  # The checkpoint's values were perturbed away from any initialization: all of them changed.
  assert all(not np.array_equal(fresh[v.name], v.numpy()) for v in encoder.weights)
  batch = _batch(task)
  optimizer = _optimizer()
  losses = [float(task.train_step(batch, model, optimizer)['loss']) for _ in range(3)]
  assert np.all(np.isfinite(losses)) and losses[-1] < losses[0]
  logits = model(batch, training=False)
  assert logits.shape == (4, 2)
  # ModernBERT has no segment embeddings: the type ids do not change the logits.
  other = dict(batch, input_type_ids=tf.ones_like(batch['input_type_ids']))
  np.testing.assert_allclose(model(other, training=False), logits, atol=1e-6)


@pytest.mark.slow
def test_modernbert_checkpoint_has_no_next_sentence_pooler(pretrained):
  task = sp.SentencePredictionTask(_modernbert_config(
      init_checkpoint=pretrained['model_dir'], init_cls_pooler=True))
  with pytest.raises(ValueError, match=r"task.init_cls_pooler: the checkpoint '.*ckpt-2' has no "
                     r"next-sentence pooler \(next_sentence.pooler_dense\); found the items "
                     r"\[.*'encoder'.*\].*expected init_cls_pooler: false"):
    task.initialize(task.build_model())


def test_modernbert_vocab_error_names_its_config_field(tmp_path):
  path = tmp_path / 'a.tfrecord'
  _write_records(path, 2, seq_length=tiny_run.SEQ_LENGTH, num_classes=2)
  (tmp_path / 'a.metadata.json').write_text(json.dumps({
      'format': sp_loader.FINETUNING_FORMAT, 'task': 'sentence_prediction',
      'max_seq_length': tiny_run.SEQ_LENGTH, 'num_classes': 2, 'vocab_size': 99}))
  task = sp.SentencePredictionTask(_modernbert_config())
  with pytest.raises(ValueError, match=r'^task.model.encoder.modernbert.vocab_size is 22 but the '
                     r'records were written with a vocabulary of 99 tokens'):
    task.build_inputs(task.task_config.train_data.replace(input_path=str(path)))
