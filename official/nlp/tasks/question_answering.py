"""The extractive question answering task (`bert/squad`): answer spans from a pretrained encoder.

The model (`BertSpanLabeler`) scores every position as the start and the end of the answer; the
loss is the mean of the start and the end cross-entropies (position 0, `[CLS]`, when the window
holds no answer). Evaluation gathers the logits of every window (`aggregate_logs`), turns them
into answer text per question (`squad_lib.postprocess_predictions`: best span over the windows,
`n_best_size`, `max_answer_length`; SQuAD v2.0: '' when the null score beats the best span by
more than `null_score_diff_threshold`), and scores the text (`reduce_aggregated_logs`):
`exact_match` and `final_f1` in [0, 1] (v2.0: also `has_answer_exact_match`, `has_answer_f1`,
`no_answer_exact_match`), see `squad_metrics`.

The evaluation input is either records from `create_finetuning_data --task=squad` (with their
eval sidecar) or, as in Model Garden, the SQuAD JSON itself, converted when first read into
`validation_data.input_preprocessed_data_path` (default: the model_dir) with
`validation_data.vocab_file`.

Example:
  >>> config = QuestionAnsweringConfig(init_checkpoint='runs/tiny', model=ModelConfig(encoder=...),
  ...                                  train_data=QADataConfig(input_path='squad/train.tfrecord'))
  >>> task = QuestionAnsweringTask(config, logging_dir='runs/squad')
"""

import dataclasses
import logging
import os
from typing import Any, Dict, List, Mapping, Optional, Tuple

import numpy as np
import tensorflow as tf
import tf_keras

from official.core import base_task
from official.core import config_definitions as cfg
from official.core import task_factory
from official.modeling import hyperparams
from official.nlp.configs import encoders
from official.nlp.data import pretrain_dataloader
from official.nlp.data import question_answering_dataloader as qa_loader
from official.nlp.data import sentence_prediction_dataloader as sp_loader
from official.nlp.data import squad_lib
from official.nlp.data import vocab_assets
from official.nlp.modeling import models
from official.nlp.tasks import finetuning_utils
from official.nlp.tasks import squad_metrics

_EVAL_KEYS = ('unique_ids', 'start_logits', 'end_logits')
_CONVERTED_EVAL_RECORDS = 'squad_eval.tfrecord'


@dataclasses.dataclass
class ModelConfig(hyperparams.Config):
  """The span labeler: an encoder (its `initializer_range` initializes the head)."""
  encoder: encoders.EncoderConfig = dataclasses.field(default_factory=encoders.EncoderConfig)


@dataclasses.dataclass
class QuestionAnsweringConfig(cfg.TaskConfig):
  """The question answering task config (Model Garden field names).

  Attributes:
    init_checkpoint: a pretraining checkpoint (directory or prefix); its `encoder` is restored.
    n_best_size: start and end candidates per window when decoding answers.
    max_answer_length: longest answer, in tokens.
    null_score_diff_threshold: SQuAD v2.0: predict no answer when the null score exceeds the
      best span's score by more than this.
    model: the span labeler.
    train_data: training records.
    validation_data: evaluation records or SQuAD JSON.
  """
  hub_module_url: str = hyperparams.unsupported('', 'TF Hub encoders are not supported by '
                                                'mlm-garden (use init_checkpoint)')
  n_best_size: int = hyperparams.field(20, ge=1)
  max_answer_length: int = hyperparams.field(30, ge=1)
  null_score_diff_threshold: float = 0.0
  model: ModelConfig = dataclasses.field(default_factory=ModelConfig)
  train_data: qa_loader.QADataConfig = dataclasses.field(default_factory=qa_loader.QADataConfig)
  validation_data: qa_loader.QADataConfig = dataclasses.field(
      default_factory=lambda: qa_loader.QADataConfig(is_training=False, drop_remainder=False))

  def validate(self) -> None:
    super().validate()
    encoder = self.model.encoder.get()
    for split in ('train_data', 'validation_data'):
      encoder.check_seq_length(f'{split}.seq_length', getattr(self, split).seq_length)


@task_factory.register_task_cls(QuestionAnsweringConfig)
class QuestionAnsweringTask(finetuning_utils.FinetuningEvalMixin, vocab_assets.ModelDirVocabMixin,
                            base_task.Task):
  """Fine-tunes a `BertSpanLabeler` on SQuAD-style questions (see the module docstring)."""
  EVAL_LOG_KEYS = _EVAL_KEYS

  def __init__(self, params: QuestionAnsweringConfig, logging_dir: Optional[str] = None,
               name: Optional[str] = None):
    super().__init__(params, logging_dir, name=name)
    self._eval_data: Optional[Tuple[str, List[squad_lib.SquadExample],
                                    List[squad_lib.SquadFeature]]] = None

  def build_model(self) -> tf_keras.Model:
    """The `BertSpanLabeler` (built)."""
    encoder_config = self.task_config.model.encoder.get()
    model = models.BertSpanLabeler(
        network=encoders.build_encoder(self.task_config.model.encoder),
        initializer=tf_keras.initializers.TruncatedNormal(stddev=encoder_config.initializer_range))
    ids = tf.zeros([1, self.task_config.train_data.seq_length], tf.int32)
    model({'input_word_ids': ids, 'input_mask': ids, 'input_type_ids': ids})
    return model.use_task_steps(self)  # compile() without a loss: fit() trains this task

  def initialize(self, model: tf_keras.Model) -> None:
    """Restores the encoder from `init_checkpoint` (the span head starts fresh)."""
    if self.task_config.init_checkpoint:
      finetuning_utils.restore_encoder(self.task_config.init_checkpoint, model)

  # ---- inputs ----------------------------------------------------------------------------------
  def _converted_eval_data(self, params: qa_loader.QADataConfig) -> str:
    """Converts the SQuAD JSON of `params.input_path` into records + sidecar; returns the path."""
    out_dir = params.input_preprocessed_data_path or self.logging_dir
    if not out_dir:
      raise ValueError('validation_data.input_path is SQuAD JSON: set validation_data.'
                       'input_preprocessed_data_path (or give the task a model_dir) for the '
                       'converted records')
    if not params.vocab_file:
      raise ValueError('validation_data.input_path is SQuAD JSON: set validation_data.vocab_file '
                       '(vocab.txt, or a model_dir holding one) to tokenize it')
    tokenizer = vocab_assets.load_tokenizer_from_flags(params.vocab_file,
                                                       do_lower_case=params.do_lower_case)
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, _CONVERTED_EVAL_RECORDS)
    squad_lib.write_squad_data(
        params.input_path, path, tokenizer, params.seq_length, params.doc_stride,
        params.query_length, params.version_2_with_negative,
        metadata={'format': sp_loader.FINETUNING_FORMAT, 'format_version': 1,
                  'tool': 'question_answering'})
    logging.info('Converted %s into %s', params.input_path, path)
    return path

  def eval_data(self) -> Tuple[str, List[squad_lib.SquadExample], List[squad_lib.SquadFeature]]:
    """`(record path, examples, features)` of `validation_data` (converted and read once)."""
    if self._eval_data is None:
      params = self.task_config.validation_data
      if isinstance(params.input_path, str) and params.input_path.endswith('.json'):
        path = self._converted_eval_data(params)
      else:
        path = params.input_path
      first = pretrain_dataloader.list_input_files(path)[0]
      examples, features, version_2 = squad_lib.read_eval_sidecar(
          squad_lib.eval_sidecar_path(first))
      if version_2 != params.version_2_with_negative:
        raise ValueError(f'validation_data.version_2_with_negative is '
                         f'{params.version_2_with_negative} but {first} was written with '
                         f'version_2_with_negative={version_2}; make them match')
      self._eval_data = (path, examples, features)
    return self._eval_data

  def build_inputs(self, params: qa_loader.QADataConfig,
                   input_context: Optional[tf.distribute.InputContext] = None) -> tf.data.Dataset:
    """`(features, labels)` batches (`input_path: dummy`: synthetic training batches)."""
    if params.input_path == 'dummy':
      return _dummy_batches(params, self.task_config.model.encoder.get().vocab_size,
                            input_context)
    if not params.is_training:
      params = dataclasses.replace(params, input_path=self.eval_data()[0])
    loader = qa_loader.QuestionAnsweringDataLoader(params)
    dataset = loader.load(input_context)
    encoder = self.task_config.model.encoder
    finetuning_utils.check_vocab_size(loader.metadata, encoder.get().vocab_size, encoder.type)
    return dataset

  # ---- loss and metrics ------------------------------------------------------------------------
  def build_losses(self, labels: Mapping[str, tf.Tensor], model_outputs: Any,
                   aux_losses: Optional[List[tf.Tensor]] = None) -> tf.Tensor:
    """(mean start cross-entropy + mean end cross-entropy) / 2 over the batch."""
    start_logits, end_logits = model_outputs
    start_loss = tf_keras.losses.sparse_categorical_crossentropy(
        labels['start_positions'], tf.cast(start_logits, tf.float32), from_logits=True)
    end_loss = tf_keras.losses.sparse_categorical_crossentropy(
        labels['end_positions'], tf.cast(end_logits, tf.float32), from_logits=True)
    loss = (tf.reduce_mean(start_loss) + tf.reduce_mean(end_loss)) / 2
    if aux_losses:
      loss += tf.add_n([tf.cast(aux, tf.float32) for aux in aux_losses])
    return loss

  def build_metrics(self, training: Optional[bool] = None) -> List[tf_keras.metrics.Metric]:
    """`start_position_accuracy` and `end_position_accuracy` (Model Garden's names)."""
    del training
    return [tf_keras.metrics.SparseCategoricalAccuracy(name='start_position_accuracy'),
            tf_keras.metrics.SparseCategoricalAccuracy(name='end_position_accuracy')]

  def process_metrics(self, metrics: List[tf_keras.metrics.Metric], labels: Mapping[str, Any],
                      model_outputs: Any, **kwargs) -> None:
    del kwargs
    start_logits, end_logits = model_outputs
    by_name = {m.name: m for m in metrics}
    by_name['start_position_accuracy'].update_state(labels['start_positions'], start_logits)
    by_name['end_position_accuracy'].update_state(labels['end_positions'], end_logits)

  def validation_step(self, inputs: Any, model: tf_keras.Model,
                      metrics: Optional[List[tf_keras.metrics.Metric]] = None
                      ) -> Dict[str, tf.Tensor]:
    """Loss and metrics of one batch; returns `unique_ids`, `start_logits`, `end_logits` for
    `aggregate_logs`."""
    features, labels = self._split(inputs)
    features = dict(features)
    unique_ids = features.pop('unique_ids')
    start_logits, end_logits = self.inference_step(features, model)
    loss = self.build_losses(labels, (start_logits, end_logits), aux_losses=model.losses)
    if metrics:
      self.process_metrics(metrics, labels, (start_logits, end_logits))
    return {self.loss: loss, 'unique_ids': unique_ids, 'start_logits': start_logits,
            'end_logits': end_logits}

  def predictions(self, aggregated_logs: Mapping[str, List[np.ndarray]],
                  nbest: Optional[Dict[str, List[Dict[str, Any]]]] = None
                  ) -> Tuple[Dict[str, str], Dict[str, float]]:
    """`(qas_id -> answer text, qas_id -> null score diff)` from `aggregate_logs`' state
    (`nbest`, when given, is filled with each question's n-best answers)."""
    _, examples, features = self.eval_data()
    logits = {}
    for ids, starts, ends in zip(*(aggregated_logs[key] for key in _EVAL_KEYS)):
      for unique_id, start, end in zip(np.asarray(ids).tolist(), starts, ends):
        logits[int(unique_id)] = (start, end)
    config = self.task_config
    return squad_lib.postprocess_predictions(
        examples, features, logits, n_best_size=config.n_best_size,
        max_answer_length=config.max_answer_length,
        version_2_with_negative=config.validation_data.version_2_with_negative,
        null_score_diff_threshold=config.null_score_diff_threshold, nbest=nbest)

  def reduce_aggregated_logs(self, aggregated_logs: Any,
                             global_step: Optional[tf.Tensor] = None) -> Dict[str, float]:
    """`exact_match` and `final_f1` (v2.0: and the has/no-answer parts) of the decoded answers."""
    del global_step
    if (not aggregated_logs or not aggregated_logs['unique_ids'] or
        self.task_config.validation_data.input_path == 'dummy'):
      return {}
    predictions, _ = self.predictions(aggregated_logs)
    version_2 = self.task_config.validation_data.version_2_with_negative
    gold = squad_metrics.gold_answers_of(self.eval_data()[1], version_2)
    return squad_metrics.evaluate(gold, predictions, version_2)


def predict(task: QuestionAnsweringTask, params: qa_loader.QADataConfig, model: tf_keras.Model
            ) -> Tuple[Dict[str, str], Dict[str, List[Dict[str, Any]]], Dict[str, float]]:
  """Answers for every question of `params` (Model Garden's `question_answering.predict`).

  Args:
    task: the task (its `n_best_size`, `max_answer_length`, `null_score_diff_threshold`).
    params: the evaluation data (records with their eval sidecar, or SQuAD JSON plus
      `vocab_file`); it replaces `task.task_config.validation_data`.
    model: the span labeler (e.g. restored from a fine-tuning checkpoint).

  Returns:
    `(all_predictions, all_nbest, scores_diff)`: qas_id -> answer text; qas_id -> the n-best
    answers `[{'text', 'score', 'probability'}, ...]`; qas_id -> null score minus best span score
    (SQuAD v2.0; empty for v1.1).

  Example:
    >>> predictions, nbest, _ = predict(task, task.task_config.validation_data, model)
    >>> predictions['q1'], nbest['q1'][0]['probability']
    ('Denver Broncos', 0.93...)
  """
  task.task_config.validation_data = params
  task._eval_data = None  # pylint: disable=protected-access
  predict_step = tf.function(lambda features: task.inference_step(features, model))
  state = None
  for features, _ in task.build_inputs(dataclasses.replace(params, is_training=False)):
    features = dict(features)
    unique_ids = features.pop('unique_ids')
    start_logits, end_logits = predict_step(features)
    state = task.aggregate_logs(state, {'unique_ids': unique_ids.numpy(),
                                        'start_logits': start_logits.numpy(),
                                        'end_logits': end_logits.numpy()})
  nbest: Dict[str, List[Dict[str, Any]]] = {}
  if not state or not state['unique_ids']:
    return {}, nbest, {}
  predictions, score_diffs = task.predictions(state, nbest=nbest)
  return predictions, nbest, score_diffs


def _dummy_batches(params: qa_loader.QADataConfig, vocab_size: int,
                   input_context: Optional[tf.distribute.InputContext] = None) -> tf.data.Dataset:
  """Synthetic `(features, labels)` batches for `input_path: dummy` (random ids and positions)."""
  seq = params.seq_length

  def positions(features, seed, index, batch):
    start = tf.random.stateless_uniform([batch], seed + 1, 0, seq, dtype=tf.int32)
    if not params.is_training:
      features['unique_ids'] = tf.range(batch, dtype=tf.int64) + index * batch
    return {'start_positions': start, 'end_positions': tf.minimum(start + 1, seq - 1)}

  return finetuning_utils.dummy_batches(params, vocab_size, 17, positions, input_context)
