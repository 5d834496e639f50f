"""The sentence-prediction fine-tuning task (`bert/sentence_prediction`): classify or regress a
sentence or a sentence pair from a pretrained encoder.

`num_classes > 1`: softmax cross-entropy, eval metrics `cls_accuracy` (Keras) and, over the whole
eval set, `accuracy`, `f1` (binary: class 1; multiclass: macro), `matthews_corrcoef`.
`num_classes == 1` (with `label_type: float` data): mean squared error, eval metrics
`mean_squared_error` and, over the whole eval set, `pearson`, `spearman`, `pearson_spearman_corr`.
The whole-set metrics are gathered with `aggregate_logs` / `reduce_aggregated_logs`.

Batches are dicts, as the loader yields them (Model Garden's layout): the model inputs and the
label under `train_data.label_field` (`label_ids`); `build_losses` and `process_metrics` take that
dict as `labels`. A `(features, labels)` pair is accepted too.

Example:
  >>> config = SentencePredictionConfig(
  ...     init_checkpoint='runs/tiny', model=ModelConfig(num_classes=2, encoder=...),
  ...     train_data=SentencePredictionDataConfig(input_path='train.tfrecord', seq_length=128))
  >>> task = SentencePredictionTask(config)
  >>> model = task.build_model()
  >>> task.initialize(model)  # restores the encoder of the pretraining checkpoint
"""

import dataclasses
from typing import Any, Dict, List, Mapping, Optional, Tuple

import numpy as np
import tensorflow as tf
import tf_keras

from official.core import base_task
from official.core import checkpointing
from official.core import config_definitions as cfg
from official.core import task_factory
from official.modeling import checkpoint_compat
from official.modeling import hyperparams
from official.nlp.configs import encoders
from official.nlp.data import data_loader_factory
from official.nlp.data import sentence_prediction_dataloader as sp_loader
from official.nlp.data import vocab_assets
from official.nlp.modeling import models
from official.nlp.tasks import finetuning_metrics
from official.nlp.tasks import finetuning_utils

METRIC_TYPES = ('accuracy', 'f1', 'matthews_corrcoef', 'pearson_spearman_corr')
_HEAD_NAME = 'sentence_prediction'


@dataclasses.dataclass
class ModelConfig(hyperparams.Config):
  """The classifier: an encoder and a head.

  Attributes:
    num_classes: output classes; 1 means regression.
    use_encoder_pooler: classify the encoder's pooled output (else a new pooler on token 0).
    encoder: the encoder one-of.
  """
  num_classes: int = hyperparams.field(0, ge=0)
  use_encoder_pooler: bool = False
  encoder: encoders.EncoderConfig = dataclasses.field(default_factory=encoders.EncoderConfig)


@dataclasses.dataclass
class SentencePredictionConfig(cfg.TaskConfig):
  """The sentence-prediction task config (Model Garden field names).

  Attributes:
    init_checkpoint: a pretraining checkpoint (directory or prefix); its `encoder` is restored.
    init_cls_pooler: also restore the head's pooler from the checkpoint's `next_sentence` pooler
      (only without `use_encoder_pooler`).
    metric_type: the main eval metric, also logged under this name: 'accuracy', 'f1',
      'matthews_corrcoef' or 'pearson_spearman_corr' (regression).
    model: the classifier.
    train_data: training records.
    validation_data: evaluation records.
    freeze_encoder: train only the head; the encoder's weights stay as initialized (mlm-garden
      addition). The frozen encoder still applies its dropout while training (Keras'
      `trainable=False` does not change the call mode): set its dropout rates to 0 for pure
      feature extraction.
  """
  init_cls_pooler: bool = False
  hub_module_url: str = hyperparams.unsupported('', 'TF Hub encoders are not supported by '
                                                'mlm-garden (use init_checkpoint)')
  metric_type: str = hyperparams.field('accuracy', choices=METRIC_TYPES)
  model: ModelConfig = dataclasses.field(default_factory=ModelConfig)
  train_data: sp_loader.SentencePredictionDataConfig = dataclasses.field(
      default_factory=sp_loader.SentencePredictionDataConfig)
  validation_data: sp_loader.SentencePredictionDataConfig = dataclasses.field(
      default_factory=lambda: sp_loader.SentencePredictionDataConfig(
          is_training=False, drop_remainder=False))
  freeze_encoder: bool = False

  def validate(self) -> None:
    super().validate()
    num_classes = self.model.num_classes
    if num_classes < 1:
      raise hyperparams.ConfigError('model.num_classes', f'must be >= 1 (1: regression), found '
                                    f'{num_classes}')
    regression = num_classes == 1
    if (self.metric_type == 'pearson_spearman_corr') != regression:
      raise hyperparams.ConfigError(
          'metric_type', f'{self.metric_type!r} does not fit model.num_classes={num_classes} '
          "(regression uses 'pearson_spearman_corr', classification the others)")
    encoder = self.model.encoder.get()
    for split in ('train_data', 'validation_data'):
      data = getattr(self, split)
      label_type = getattr(data, 'label_type', None)
      if label_type is not None and (label_type == 'float') != regression:
        raise hyperparams.ConfigError(
            f'{split}.label_type', f"{label_type!r} does not fit model.num_classes={num_classes} "
            "('float' for regression with num_classes 1, 'int' for classification)")
      encoder.check_seq_length(f'{split}.seq_length', getattr(data, 'seq_length', 0))


@task_factory.register_task_cls(SentencePredictionConfig)
class SentencePredictionTask(finetuning_utils.FinetuningEvalMixin, vocab_assets.ModelDirVocabMixin,
                             base_task.Task):
  """Fine-tunes a `BertClassifier` on sentence(-pair) classification or regression."""
  EVAL_LOG_KEYS = (_HEAD_NAME, 'labels')

  def __init__(self, params: SentencePredictionConfig, logging_dir: Optional[str] = None,
               name: Optional[str] = None):
    super().__init__(params, logging_dir, name=name)
    # The batch key of the label (Model Garden's attribute name).
    self.label_field: str = (getattr(getattr(params, 'train_data', None), 'label_field', None)
                             or 'label_ids')
    self.metric_type: str = getattr(params, 'metric_type', 'accuracy')

  def _split(self, inputs: Any) -> Tuple[Any, Mapping[str, tf.Tensor]]:
    """`(model inputs, labels dict)` of a batch dict (or of a `(features, labels)` pair)."""
    if isinstance(inputs, (tuple, list)) and len(inputs) == 2:
      features, labels = inputs
      if not isinstance(labels, Mapping):
        labels = {self.label_field: labels}
      return features, labels
    if not isinstance(inputs, Mapping):
      raise ValueError(f'{type(self).__name__}: expected a batch dict with {self.label_field!r} '
                       f'(or a (features, labels) pair), found {type(inputs).__name__}')
    not_inputs = {self.label_field, 'example_id'}
    for data in (self.task_config.train_data, self.task_config.validation_data):
      label_name = getattr(data, 'label_name', None)
      if label_name:
        not_inputs.add(label_name[1])
    features = {key: value for key, value in inputs.items() if key not in not_inputs}
    return features, inputs

  def _label_ids(self, labels: Any) -> tf.Tensor:
    """The label tensor [batch] of a labels dict (a bare tensor passes through)."""
    if not isinstance(labels, Mapping):
      return labels
    if self.label_field not in labels:
      raise ValueError(f'the batch has no label {self.label_field!r} (train_data.label_field); '
                       f'found keys {sorted(labels)}')
    return labels[self.label_field]

  @property
  def _regression(self) -> bool:
    return self.task_config.model.num_classes == 1

  def build_model(self) -> tf_keras.Model:
    """The `BertClassifier` (built; with `freeze_encoder` its encoder is not trainable)."""
    config = self.task_config.model
    encoder_config = config.encoder.get()
    encoder = encoders.build_encoder(config.encoder)
    model = models.BertClassifier(
        network=encoder, num_classes=config.num_classes,
        initializer=tf_keras.initializers.TruncatedNormal(stddev=encoder_config.initializer_range),
        dropout_rate=encoder_config.dropout_rate, use_encoder_pooler=config.use_encoder_pooler,
        head_name=_HEAD_NAME)
    ids = tf.zeros([1, self.task_config.train_data.seq_length], tf.int32)
    model({'input_word_ids': ids, 'input_mask': ids, 'input_type_ids': ids})
    if self.task_config.freeze_encoder:
      encoder.trainable = False
    return model.use_task_steps(self)  # compile() without a loss: fit() trains this task

  def initialize(self, model: tf_keras.Model) -> None:
    """Restores the encoder (and with `init_cls_pooler` the head's pooler) from `init_checkpoint`.

    The pooler is read from the pretrainer's `next_sentence.pooler_dense` checkpoint item (Model
    Garden's key; checkpoints written before it was ours have it as `next_sentence/dense`).

    Raises:
      ValueError: `init_cls_pooler` with `use_encoder_pooler`, or with a checkpoint of a
        pretrainer without a next-sentence head (e.g. ModernBERT's, `cls_heads: []`); the
        encoder's variables do not fit the checkpoint's.
    """
    if not self.task_config.init_checkpoint:
      return
    extra = {}
    if self.task_config.init_cls_pooler:
      pooler = model.checkpoint_items.get(f'{_HEAD_NAME}.pooler_dense')
      if pooler is None:
        raise ValueError('task.init_cls_pooler needs a head with its own pooler '
                         '(task.model.use_encoder_pooler: false)')
      ckpt_path = checkpointing.resolve_checkpoint(self.task_config.init_checkpoint)
      roots = checkpoint_compat.root_names(ckpt_path) if ckpt_path else []
      if 'next_sentence' in roots:
        extra['next_sentence'] = tf.train.Checkpoint(dense=pooler)
      elif ckpt_path and 'next_sentence.pooler_dense' not in roots:
        raise ValueError(f'task.init_cls_pooler: the checkpoint {ckpt_path!r} has no '
                         f'next-sentence pooler (next_sentence.pooler_dense); found the items '
                         f'{sorted(roots)} (a pretraining run without a next_sentence head, e.g. '
                         'cls_heads: []); expected init_cls_pooler: false')
      else:
        extra['next_sentence.pooler_dense'] = pooler
    finetuning_utils.restore_encoder(self.task_config.init_checkpoint, model, extra)

  def build_inputs(self, params: sp_loader.SentencePredictionDataConfig,
                   input_context: Optional[tf.distribute.InputContext] = None) -> tf.data.Dataset:
    """Batch dicts of the records (`input_path: dummy`: synthetic), see the loader.

    Raises:
      ValueError: the records' metadata disagrees with `model.num_classes`.
    """
    model = self.task_config.model
    if params.input_path == 'dummy':
      # Every label is 0 (class 0, or 0.0 for regression), as in Model Garden: a step can fit it.
      dtype = tf.float32 if params.label_type == 'float' or model.num_classes == 1 else tf.int32
      return finetuning_utils.dummy_batches(
          params, model.encoder.get().vocab_size, 11,
          lambda features, seed, index, batch: tf.zeros([batch], dtype), input_context,
          label_key=getattr(params, 'label_field', None) or self.label_field)
    # The loader registered for the config: records of ids, or raw text tokenized while reading.
    loader = data_loader_factory.get_data_loader(params)
    dataset = loader.load(input_context)
    metadata = getattr(loader, 'metadata', None)
    finetuning_utils.check_vocab_size(metadata, model.encoder.get().vocab_size, model.encoder.type)
    if metadata and metadata.get('num_classes') not in (None, model.num_classes):
      raise ValueError(f'task.model.num_classes is {model.num_classes} but the records have '
                       f'num_classes={metadata["num_classes"]} '
                       f'(labels {metadata.get("label_list")}, {metadata["metadata_path"]})')
    return dataset

  def build_losses(self, labels: Mapping[str, tf.Tensor], model_outputs: tf.Tensor,
                   aux_losses: Optional[List[tf.Tensor]] = None) -> tf.Tensor:
    """Mean cross-entropy of logits [batch, classes] (regression: mean squared error).

    Args:
      labels: the batch dict; its `label_field` entry [batch] is read (a bare tensor works too).
      model_outputs: logits [batch, num_classes].
      aux_losses: added to the loss (e.g. `model.losses`).

    Example:
      >>> task.build_losses({'label_ids': tf.constant([1, 0])}, logits)
    """
    labels = tf.reshape(self._label_ids(labels), [-1])
    logits = tf.cast(model_outputs, tf.float32)
    if self._regression:
      loss = tf.reduce_mean(tf.square(logits[:, 0] - tf.cast(labels, tf.float32)))
    else:
      loss = tf.reduce_mean(tf_keras.losses.sparse_categorical_crossentropy(
          labels, logits, from_logits=True))
    if aux_losses:
      loss += tf.add_n([tf.cast(aux, tf.float32) for aux in aux_losses])
    return loss

  def build_metrics(self, training: Optional[bool] = None) -> List[tf_keras.metrics.Metric]:
    """`cls_accuracy` (classification) or `mean_squared_error` (regression)."""
    del training
    if self._regression:
      return [tf_keras.metrics.MeanSquaredError(name='mean_squared_error')]
    return [tf_keras.metrics.SparseCategoricalAccuracy(name='cls_accuracy')]

  def process_metrics(self, metrics: List[tf_keras.metrics.Metric],
                      labels: Mapping[str, tf.Tensor], model_outputs: tf.Tensor,
                      **kwargs) -> None:
    """Updates `metrics` with the batch's labels (its `label_field`) and the logits."""
    del kwargs
    labels = tf.reshape(self._label_ids(labels), [-1])
    for metric in metrics:
      if self._regression:
        metric.update_state(tf.cast(labels, tf.float32), model_outputs[:, 0])
      else:
        metric.update_state(labels, model_outputs)

  def validation_step(self, inputs: Any, model: tf_keras.Model,
                      metrics: Optional[List[tf_keras.metrics.Metric]] = None
                      ) -> Dict[str, tf.Tensor]:
    """Loss and metrics of one batch; also returns the predictions and labels for `aggregate_logs`.

    `sentence_prediction` is the logits [batch, classes], or with `metric_type: matthews_corrcoef`
    the predicted class ids [batch, 1] (as in Model Garden).
    """
    labels, outputs, loss = self.eval_forward(inputs, model, metrics)
    predictions = outputs
    if self.task_config.metric_type == 'matthews_corrcoef':
      predictions = tf.expand_dims(tf.argmax(outputs, axis=1), axis=1)
    return {self.loss: loss, _HEAD_NAME: predictions,
            'labels': tf.reshape(self._label_ids(labels), [-1])}

  def reduce_aggregated_logs(self, aggregated_logs: Any,
                             global_step: Optional[tf.Tensor] = None) -> Dict[str, float]:
    """Metrics over the whole eval set (see the module docstring), keyed also by `metric_type`."""
    del global_step
    if not aggregated_logs or not aggregated_logs['labels']:
      return {}
    predictions = np.concatenate(aggregated_logs[_HEAD_NAME], axis=0)
    labels = np.concatenate(aggregated_logs['labels'], axis=0)
    if self._regression:
      return finetuning_metrics.regression_metrics(labels, predictions[:, 0])
    if np.issubdtype(predictions.dtype, np.integer):  # class ids [n, 1] (matthews_corrcoef)
      predictions = np.eye(self.task_config.model.num_classes)[predictions[:, 0]]
    return finetuning_metrics.classification_metrics(labels, predictions)


def predict(task: SentencePredictionTask, params: sp_loader.SentencePredictionDataConfig,
            model: tf_keras.Model) -> List[tf.Tensor]:
  """Predictions of `model` for every example of `params`' records, in `example_id` order.

  Args:
    task: the task (its `build_inputs` and `inference_step` are used).
    params: the data config; it needs `include_example_id: true` and, to predict every example once,
      `is_training: false` and `drop_remainder: false`.
    model: the classifier.

  Returns:
    One scalar tensor per example: the class id (int64) or, for regression, the score (float32).

  Example:
    >>> predict(task, dataclasses.replace(config.validation_data, include_example_id=True), model)
  """
  if not params.include_example_id:
    raise ValueError('predict needs example ids: set include_example_id: true in the data config')
  regression = task.task_config.model.num_classes == 1

  @tf.function
  def step(inputs):
    features, labels = task._split(inputs)  # pylint: disable=protected-access
    example_ids = labels['example_id'] if 'example_id' in labels else features['example_id']
    features = {key: value for key, value in features.items() if key != 'example_id'}
    outputs = tf.cast(task.inference_step(features, model), tf.float32)
    predictions = outputs[:, 0] if regression else tf.argmax(outputs, axis=-1)
    return example_ids, predictions

  pairs = []
  for inputs in task.build_inputs(params):
    example_ids, predictions = step(inputs)
    pairs.extend(zip(example_ids.numpy().tolist(), tf.unstack(predictions)))
  pairs.sort(key=lambda pair: pair[0])
  return [prediction for _, prediction in pairs]
