"""The tagging fine-tuning task (`bert/tagging`): word-level BIO tags from a pretrained encoder.

Each word's tag is predicted at its first sub-word; the records carry -1 on every other position
(later sub-words, special tokens, padding) and the loss is the mean cross-entropy over the labelled
positions only. Eval metrics: `accuracy` (Keras, labelled positions) and, over the whole eval set,
span-level `precision`, `recall` and `f1` of the predicted vs gold BIO spans per word
(conlleval-style, see `finetuning_metrics.bio_spans`). Each example counts as one sentence: a
sentence the data tool split into several examples (`sub_sentence_id` > 0) is scored per piece.

Example:
  >>> config = TaggingConfig(class_names=['O', 'B-PER', 'I-PER'], init_checkpoint='runs/tiny',
  ...                        model=ModelConfig(encoder=...), train_data=TaggingDataConfig(...))
  >>> task = TaggingTask(config)
"""

import dataclasses
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf
import tf_keras

from official.core import base_task
from official.core import config_definitions as cfg
from official.core import task_factory
from official.modeling import hyperparams
from official.nlp.configs import encoders
from official.nlp.data import tagging_dataloader
from official.nlp.data import vocab_assets
from official.nlp.modeling import models
from official.nlp.tasks import finetuning_metrics
from official.nlp.tasks import finetuning_utils

IGNORE_LABEL_ID = tagging_dataloader.IGNORE_LABEL_ID


@dataclasses.dataclass
class ModelConfig(hyperparams.Config):
  """The token classifier: an encoder and a dense head.

  Attributes:
    encoder: the encoder one-of.
    head_dropout: dropout before the head.
    head_initializer_range: stddev of the head's truncated-normal initializer.
  """
  encoder: encoders.EncoderConfig = dataclasses.field(default_factory=encoders.EncoderConfig)
  head_dropout: float = hyperparams.field(0.1, ge=0.0, lt=1.0)
  head_initializer_range: float = hyperparams.field(0.02, gt=0.0)


@dataclasses.dataclass
class TaggingConfig(cfg.TaskConfig):
  """The tagging task config (Model Garden field names).

  Attributes:
    init_checkpoint: a pretraining checkpoint (directory or prefix); its `encoder` is restored.
    model: the token classifier.
    class_names: the tags, index = label id (e.g. ['O', 'B-PER', 'I-PER']); required.
    train_data: training records.
    validation_data: evaluation records.
    freeze_encoder: train only the head; the encoder's weights stay as initialized (mlm-garden
      addition). The frozen encoder still applies its dropout while training (Keras'
      `trainable=False` does not change the call mode): set its dropout rates to 0 for pure
      feature extraction.
  """
  hub_module_url: str = hyperparams.unsupported('', 'TF Hub encoders are not supported by '
                                                'mlm-garden (use init_checkpoint)')
  model: ModelConfig = dataclasses.field(default_factory=ModelConfig)
  class_names: Optional[List[str]] = None
  train_data: tagging_dataloader.TaggingDataConfig = dataclasses.field(
      default_factory=tagging_dataloader.TaggingDataConfig)
  validation_data: tagging_dataloader.TaggingDataConfig = dataclasses.field(
      default_factory=lambda: tagging_dataloader.TaggingDataConfig(
          is_training=False, drop_remainder=False))
  freeze_encoder: bool = False

  def validate(self) -> None:
    super().validate()
    if not self.class_names:
      raise hyperparams.ConfigError('class_names', 'is required: the tag names, index = label id '
                                    "(e.g. ['O', 'B-PER', 'I-PER']; see the records' metadata)")
    duplicates = sorted({n for n in self.class_names if self.class_names.count(n) > 1})
    if duplicates:
      raise hyperparams.ConfigError('class_names', f'duplicate tags {duplicates}')
    encoder = self.model.encoder.get()
    for split in ('train_data', 'validation_data'):
      data = getattr(self, split)
      encoder.check_seq_length(f'{split}.seq_length', getattr(data, 'seq_length', 0))


def subword_to_word_labels(subword_labels: Sequence[int], word_ids: Sequence[int]) -> List[int]:
  """Per-word labels from per-sub-word labels: each word takes its first sub-word's label.

  Args:
    subword_labels: a label per sub-word position [seq].
    word_ids: the word index of each position [seq], -1 (or any negative) for positions of no
      word ([CLS], [SEP], padding); a word's positions are contiguous.

  Returns:
    One label per word, in word order (words `0..max(word_ids)`).

  Example:
    >>> subword_to_word_labels([9, 1, 2, 2, 3, 9], [-1, 0, 1, 1, 2, -1])
    [1, 2, 3]
  """
  words: Dict[int, int] = {}
  for label, word in zip(subword_labels, word_ids):
    if word >= 0 and word not in words:
      words[int(word)] = int(label)
  return [words[w] for w in sorted(words)]


def word_level_tags(predict_ids: np.ndarray, label_ids: np.ndarray, class_names: Sequence[str]
                    ) -> Tuple[List[List[str]], List[List[str]]]:
  """Word-level predicted and gold tags from sub-word predictions and the records' labels.

  The words of an example are its labelled positions (`label_ids >= 0`: first sub-words), in order.

  Args:
    predict_ids: predicted tag ids [examples, seq].
    label_ids: gold tag ids [examples, seq] with -1 where no word starts.
    class_names: tag names, index = id.

  Returns:
    `(predicted, gold)`: per example, the list of tag names of its words.
  """
  predicted, gold = [], []
  for preds, labels in zip(np.asarray(predict_ids), np.asarray(label_ids)):
    starts = labels >= 0
    predicted.append([class_names[i] for i in preds[starts]])
    gold.append([class_names[i] for i in labels[starts]])
  return predicted, gold


def _logits(model_outputs: Any) -> tf.Tensor:
  """The tag logits of a tagger's outputs: `BertTokenClassifier`'s dict (`logits`, or
  `predictions`, log-probabilities with the same argmax), or a plain tensor."""
  if isinstance(model_outputs, dict):
    return model_outputs['logits'] if 'logits' in model_outputs else model_outputs['predictions']
  return model_outputs


class _MaskedAccuracy(tf_keras.metrics.Mean):
  """Accuracy over the labelled positions (label >= 0)."""

  def update_state(self, labels, logits, sample_weight=None):
    del sample_weight
    weights = tf.cast(labels >= 0, tf.float32)
    correct = tf.cast(tf.equal(tf.argmax(_logits(logits), axis=-1, output_type=tf.int32),
                               tf.cast(labels, tf.int32)), tf.float32)
    return super().update_state(correct, sample_weight=weights)


@task_factory.register_task_cls(TaggingConfig)
class TaggingTask(finetuning_utils.FinetuningEvalMixin, vocab_assets.ModelDirVocabMixin,
                  base_task.Task):
  """Fine-tunes a `BertTokenClassifier` on word-level tags."""
  EVAL_LOG_KEYS = ('predict_ids', 'label_ids')

  def build_model(self) -> tf_keras.Model:
    """The `BertTokenClassifier` (built; with `freeze_encoder` its encoder is not trainable)."""
    config = self.task_config.model
    encoder = encoders.build_encoder(config.encoder)
    model = models.BertTokenClassifier(
        network=encoder, num_classes=len(self.task_config.class_names),
        initializer=tf_keras.initializers.TruncatedNormal(stddev=config.head_initializer_range),
        dropout_rate=config.head_dropout, output='logits')
    ids = tf.zeros([1, self.task_config.train_data.seq_length], tf.int32)
    model({'input_word_ids': ids, 'input_mask': ids, 'input_type_ids': ids})
    if self.task_config.freeze_encoder:
      encoder.trainable = False
    return model.use_task_steps(self)  # compile() without a loss: fit() trains this task

  def initialize(self, model: tf_keras.Model) -> None:
    """Restores the encoder from `init_checkpoint` (the head starts fresh)."""
    if self.task_config.init_checkpoint:
      finetuning_utils.restore_encoder(self.task_config.init_checkpoint, model)

  def build_inputs(self, params: tagging_dataloader.TaggingDataConfig,
                   input_context: Optional[tf.distribute.InputContext] = None) -> tf.data.Dataset:
    """`(features, labels)` batches of the records (`input_path: dummy`: synthetic).

    Raises:
      ValueError: the records' metadata lists other tags than `class_names`.
    """
    if params.input_path == 'dummy':
      return _dummy_tags(params, len(self.task_config.class_names),
                         self.task_config.model.encoder.get().vocab_size, input_context)
    loader = tagging_dataloader.TaggingDataLoader(params)
    dataset = loader.load(input_context)
    metadata = loader.metadata
    encoder = self.task_config.model.encoder
    finetuning_utils.check_vocab_size(metadata, encoder.get().vocab_size, encoder.type)
    class_names = list(self.task_config.class_names)
    if metadata and metadata.get('label_list') not in (None, class_names):
      raise ValueError(f'task.class_names is {class_names} but the records were written with '
                       f'labels {metadata["label_list"]} ({metadata["metadata_path"]}); copy them '
                       'in this order')
    return dataset

  def build_losses(self, labels: tf.Tensor, model_outputs: Any,
                   aux_losses: Optional[List[tf.Tensor]] = None) -> tf.Tensor:
    """Mean cross-entropy over the labelled positions (label >= 0) of the logits [batch, seq, tags]
    (the model's `logits` output, or the outputs themselves when they are a tensor)."""
    weights = tf.cast(labels >= 0, tf.float32)
    per_position = tf_keras.losses.sparse_categorical_crossentropy(
        tf.maximum(labels, 0), tf.cast(_logits(model_outputs), tf.float32), from_logits=True)
    loss = tf.math.divide_no_nan(tf.reduce_sum(per_position * weights), tf.reduce_sum(weights))
    if aux_losses:
      loss += tf.add_n([tf.cast(aux, tf.float32) for aux in aux_losses])
    return loss

  def build_metrics(self, training: Optional[bool] = None) -> List[tf_keras.metrics.Metric]:
    """`accuracy` over the labelled positions."""
    del training
    return [_MaskedAccuracy(name='accuracy')]

  def validation_step(self, inputs: Any, model: tf_keras.Model,
                      metrics: Optional[List[tf_keras.metrics.Metric]] = None
                      ) -> Dict[str, tf.Tensor]:
    """Loss and metrics of one batch; returns `predict_ids` and `label_ids` for `aggregate_logs`."""
    labels, outputs, loss = self.eval_forward(inputs, model, metrics)
    return {self.loss: loss,
            'predict_ids': tf.argmax(_logits(outputs), axis=-1, output_type=tf.int32),
            'label_ids': labels}

  def reduce_aggregated_logs(self, aggregated_logs: Any,
                             global_step: Optional[tf.Tensor] = None) -> Dict[str, float]:
    """Span `precision`, `recall`, `f1` and word `accuracy` over the whole eval set."""
    del global_step
    if not aggregated_logs or not aggregated_logs['label_ids']:
      return {}
    predicted, gold = [], []
    for preds, labels in zip(aggregated_logs['predict_ids'], aggregated_logs['label_ids']):
      p, g = word_level_tags(preds, labels, self.task_config.class_names)
      predicted += p
      gold += g
    metrics = finetuning_metrics.span_metrics(gold, predicted)
    words = sum(len(tags) for tags in gold)
    correct = sum(g == p for gold_tags, pred_tags in zip(gold, predicted)
                  for g, p in zip(gold_tags, pred_tags))
    metrics['accuracy'] = correct / words if words else 0.0
    return metrics


def _dummy_tags(params: tagging_dataloader.TaggingDataConfig, num_classes: int, vocab_size: int,
                input_context: Optional[tf.distribute.InputContext] = None) -> tf.data.Dataset:
  """Synthetic `(features, labels)` batches for `input_path: dummy`: random token ids, random tags
  in [-1, num_classes) (-1: no word starts there)."""
  def tags(features, seed, index, batch):
    del index
    return tf.random.stateless_uniform([batch, params.seq_length], seed + 1, -1, num_classes,
                                       dtype=tf.int32)

  return finetuning_utils.dummy_batches(params, vocab_size, 13, tags, input_context)


def predict(task: TaggingTask, params: tagging_dataloader.TaggingDataConfig,
            model: tf_keras.Model) -> List[Tuple[int, int, List[int]]]:
  """Predicted tag ids of every example of `params`' records, at its labelled positions.

  Args:
    task: the task (its `build_inputs` and `inference_step` are used).
    params: the data config; it needs `include_sentence_id: true` and, to predict every example
      once, `is_training: false` and `drop_remainder: false`.
    model: the token classifier.

  Returns:
    `(sentence_id, sub_sentence_id, predicted tag ids of the positions whose label is >= 0)` per
    example, sorted by the ids.

  Example:
    >>> predict(task, dataclasses.replace(config.validation_data, include_sentence_id=True), model)
  """
  if not params.include_sentence_id:
    raise ValueError('predict needs sentence ids: set include_sentence_id: true in the data config')

  @tf.function
  def step(features):
    features = dict(features)
    ids = (features.pop('sentence_id'), features.pop('sub_sentence_id'))
    logits = _logits(task.inference_step(features, model))
    return ids, tf.argmax(logits, axis=-1, output_type=tf.int32)

  results = []
  for features, labels in task.build_inputs(params):
    (sentence_ids, sub_sentence_ids), predict_ids = step(features)
    for sentence, sub_sentence, preds, gold in zip(sentence_ids.numpy().tolist(),
                                                   sub_sentence_ids.numpy().tolist(),
                                                   predict_ids.numpy(), labels.numpy()):
      results.append((sentence, sub_sentence, preds[gold >= 0].tolist()))
  return sorted(results, key=lambda result: result[:2])
