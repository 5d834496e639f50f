"""Tests for official/nlp/tasks/question_answering.py and the `bert/squad` experiment."""

import os

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

import official.common.registry_imports  # pylint: disable=unused-import  # noqa: F401  (registers the experiments)
from official.core import task_factory
from official.core import train_lib
from official.core import train_utils
from official.nlp.data import create_finetuning_data
from official.nlp.tasks import question_answering
from official.nlp.tasks import squad_metrics
from tests import testing
from tests.nlp.serving import tiny_run
from tests.paths import ROOT

DATA = os.path.join(ROOT, 'tests', 'testdata', 'squad')
V1 = os.path.join(DATA, 'tiny_squad_v1.1.json')
V2 = os.path.join(DATA, 'tiny_squad_v2.0.json')
VOCAB = os.path.join(DATA, 'vocab.txt')
TINY_YAML = os.path.join(ROOT, 'configs', 'finetuning', 'squad_tiny.yaml')
MG_YAML = os.path.join(ROOT, 'tests', 'testdata', 'model_garden', 'squad_v1.yaml')
SEQ = 48
ENCODER = {'vocab_size': 96, 'hidden_size': 32, 'intermediate_size': 64, 'num_layers': 2,
           'num_attention_heads': 2, 'max_position_embeddings': SEQ, 'dropout_rate': 0.0,
           'attention_dropout_rate': 0.0}


def _params(train_path, validation_path, steps, learning_rate, version_2=False, **validation):
  params = train_utils.build_params('bert/squad', [TINY_YAML], None)
  params.override({
      'task': {'model': {'encoder': {'bert': ENCODER}},
               'train_data': {'input_path': train_path, 'seq_length': SEQ, 'global_batch_size': 8,
                              'version_2_with_negative': version_2},
               'validation_data': {'input_path': validation_path, 'seq_length': SEQ,
                                   'global_batch_size': 8, 'doc_stride': 16, 'query_length': 16,
                                   'version_2_with_negative': version_2, **validation}},
      'trainer': {'train_steps': steps, 'steps_per_loop': steps, 'summary_interval': steps,
                  'checkpoint_interval': steps, 'validation_interval': steps,
                  'best_checkpoint_export_subdir': '', 'best_checkpoint_eval_metric': '',
                  'optimizer_config': {
                      'learning_rate': {'polynomial': {'initial_learning_rate': learning_rate,
                                                       'decay_steps': steps}},
                      'warmup': {'polynomial': {'warmup_steps': max(1, steps // 10)}}}}})
  params.validate()
  return params


def _records(tmp_path, source, version_2=False):
  path = str(tmp_path / (os.path.basename(source) + '.tfrecord'))
  create_finetuning_data.create_finetuning_data(
      'squad', source, path, VOCAB, max_seq_length=SEQ, doc_stride=16, max_query_length=16,
      version_2_with_negative=version_2)
  return path


def _train(params, model_dir, return_model=False):
  tf_keras.utils.set_random_seed(0)
  task = task_factory.get_task(params.task, logging_dir=model_dir)
  model, logs = train_lib.run_experiment(tf.distribute.get_strategy(), task, 'train_and_eval',
                                         params, model_dir, save_summary=False,
                                         run_post_eval=True)
  return (task, logs, model) if return_model else (task, logs)


def test_model_garden_squad_v1_yaml_loads():
  params = train_utils.build_params('bert/squad', [MG_YAML], None)
  params.validate()
  task = params.task
  assert isinstance(task, question_answering.QuestionAnsweringConfig)
  assert (task.n_best_size, task.max_answer_length, task.null_score_diff_threshold) == (20, 30, 0.0)
  assert (task.validation_data.doc_stride, task.validation_data.query_length) == (128, 64)
  assert task.train_data.seq_length == 384 and task.validation_data.version_2_with_negative is False
  assert params.trainer.best_checkpoint_eval_metric == 'final_f1'
  assert params.trainer.optimizer_config.learning_rate.polynomial.initial_learning_rate == 8e-5


def test_loss_is_the_mean_of_start_and_end_cross_entropy():
  params = _params('dummy', 'dummy', 1, 1e-3)
  task = question_answering.QuestionAnsweringTask(params.task)
  rng = np.random.default_rng(0)
  start, end = rng.normal(size=(2, 3, 5)).astype(np.float32)
  labels = {'start_positions': np.array([0, 4, 2]), 'end_positions': np.array([1, 4, 3])}

  def cross_entropy(logits, positions):
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    return -np.mean(log_probs[np.arange(3), positions])

  expected = (cross_entropy(start, labels['start_positions']) +
              cross_entropy(end, labels['end_positions'])) / 2
  got = task.build_losses({k: tf.constant(v) for k, v in labels.items()},
                          (tf.constant(start), tf.constant(end)))
  assert float(got) == pytest.approx(expected, rel=1e-5)


@pytest.mark.slow
def test_initialize_restores_the_encoder_of_a_pretraining_checkpoint(tmp_path):
  params = _params('dummy', 'dummy', 1, 1e-3)
  source = question_answering.QuestionAnsweringTask(params.task).build_model()
  tf.train.Checkpoint(encoder=source.checkpoint_items['encoder']).save(str(tmp_path / 'ckpt'))
  params.task.init_checkpoint = str(tmp_path)
  task = question_answering.QuestionAnsweringTask(params.task)
  model = task.build_model()
  task.initialize(model)
  for got, want in zip(model.encoder.weights, source.encoder.weights):
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_json_validation_needs_a_vocab_file(tmp_path):
  params = _params('dummy', V1, 1, 1e-3)
  task = question_answering.QuestionAnsweringTask(params.task, logging_dir=str(tmp_path))
  with pytest.raises(ValueError, match='validation_data.input_path is SQuAD JSON: set '
                     'validation_data.vocab_file'):
    task.build_inputs(params.task.validation_data)


@pytest.mark.slow
def test_train_and_eval_reports_exact_match_and_f1(tmp_path):
  """A few dozen steps on records; evaluation from the raw JSON as in Model Garden."""
  params = _params(_records(tmp_path, V1), V1, 30, 1e-3, vocab_file=VOCAB)
  task, logs = _train(params, str(tmp_path / 'run'))
  assert 0.0 <= logs['exact_match'] <= 1.0 and 0.0 <= logs['final_f1'] <= 1.0
  assert logs['exact_match'] <= logs['final_f1']
  assert np.isfinite(logs['validation_loss'])
  assert {'start_position_accuracy', 'end_position_accuracy'} <= set(logs)
  assert os.path.isfile(tmp_path / 'run' / 'squad_eval.tfrecord')  # the converted JSON
  assert len(task.eval_data()[1]) == 8


@pytest.mark.slow
def test_overfitting_the_fixture_answers_its_questions(tmp_path):
  """400 steps at a high learning rate on the 11 SQuAD v2.0 questions (the same records for both
  splits, ~10 s): the decoded answers match the gold ones, impossible questions included."""
  records = _records(tmp_path, V2, version_2=True)
  params = _params(records, records, 400, 3e-3, version_2=True)
  task, logs, model = _train(params, str(tmp_path / 'run'), return_model=True)
  assert logs['exact_match'] > 0.9 and logs['final_f1'] > 0.9, logs
  assert logs['has_answer_f1'] > 0.9 and logs['no_answer_exact_match'] > 0.9, logs
  # Model Garden's predict(): the same answers as the evaluation, n-best lists and null margins.
  predictions, nbest, diffs = question_answering.predict(task, params.task.validation_data, model)
  gold = squad_metrics.gold_answers_of(task.eval_data()[1], True)
  assert set(predictions) == set(nbest) == set(diffs) == set(gold)
  assert squad_metrics.evaluate(gold, predictions, True)['exact_match'] == logs['exact_match']
  for qas_id, answers in nbest.items():
    probabilities = [a['probability'] for a in answers]
    assert probabilities == sorted(probabilities, reverse=True)
    assert abs(sum(probabilities) - 1.0) < 1e-6
    assert len({a['text'] for a in answers}) == len(answers) <= params.task.n_best_size
    if predictions[qas_id]:  # an answered question: its best n-best entry is the answer
      assert answers[0]['text'] == predictions[qas_id] and diffs[qas_id] <= 0.0


MODERNBERT_YAML = os.path.join(ROOT, 'configs', 'finetuning', 'squad_modernbert_tiny.yaml')


@pytest.mark.slow
def test_modernbert_encoder_restores_from_its_pretraining_run_and_trains(tiny_runs):
  run = tiny_runs.saved('modernbert')  # the session's (tests/nlp/tiny_runs.py)
  params = train_utils.build_params('bert/squad', [MODERNBERT_YAML], None)
  params.override({'task': {
      'init_checkpoint': run['model_dir'],
      'model': {'encoder': tiny_run.encoder_config('modernbert')},
      'train_data': {'input_path': 'dummy', 'seq_length': tiny_run.SEQ_LENGTH,
                     'global_batch_size': 4}}})
  task = question_answering.QuestionAnsweringTask(params.task)
  model = task.build_model()
  assert type(model.encoder).__name__ == 'ModernBertEncoder'
  task.initialize(model)
  tiny_run.assert_weights(model.encoder, tiny_runs.weights('modernbert'))
  batch = next(iter(task.build_inputs(params.task.train_data)))
  optimizer = tf_keras.optimizers.Adam(1e-2)
  losses = [float(task.train_step(batch, model, optimizer)['loss']) for _ in range(3)]
  assert np.all(np.isfinite(losses)) and losses[-1] < losses[0]
  start, end = model(batch[0], training=False)
  assert start.shape == end.shape == (4, tiny_run.SEQ_LENGTH)


@pytest.mark.slow
def test_modernbert_train_and_eval_on_squad_records(tmp_path):
  """Two steps on the fixture's records and an evaluation from the raw JSON: the span decoding and
  the SQuAD metrics run on a ModernBERT model."""
  params = _params(_records(tmp_path, V1), V1, 2, 1e-3, vocab_file=VOCAB)
  params.override({'task': {'model': {'encoder': {
      'type': 'modernbert', 'modernbert': testing.tiny_config(
          'modernbert', vocab_size=ENCODER['vocab_size'], local_attention=16,
          max_position_embeddings=SEQ)}}}})
  params.validate()
  task, logs = _train(params, str(tmp_path / 'run'))
  assert type(task.build_model().encoder).__name__ == 'ModernBertEncoder'
  assert 0.0 <= logs['exact_match'] <= logs['final_f1'] <= 1.0
  assert np.isfinite(logs['validation_loss'])
