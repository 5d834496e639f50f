"""The masked-LM pretraining task: model, inputs, loss and metrics of `bert/pretraining`.

Loss: the masked-LM cross-entropy summed over positions weighted by `masked_lm_weights` and divided
by the sum of weights, plus the mean next-sentence cross-entropy when a `next_sentence` head exists.

`cfg` is `official.nlp.data.pretrain_config_definitions`: Model Garden's `config_definitions`
whose `cfg.DataConfig(...)` given pretraining fields (`seq_length`, `max_predictions_per_seq`, ...)
is a `BertPretrainDataConfig` (the generic `DataConfig` stays strict everywhere else).

Example:
  >>> config = MaskedLMConfig(model=bert.PretrainerConfig(...), train_data=cfg.DataConfig(
  ...     input_path='train.tfrecord', global_batch_size=32, seq_length=128,
  ...     max_predictions_per_seq=20))
  >>> task = MaskedLMTask(config)
  >>> model = task.build_model()
  >>> dataset = task.build_inputs(config.train_data)
"""

import dataclasses
import logging
from typing import Dict, List, Mapping, Optional, Tuple

import tensorflow as tf
import tf_keras

from official.core import base_task
from official.core import checkpointing
from official.core import task_factory
from official.modeling import checkpoint_compat
from official.modeling import fused_ops
from official.modeling import hyperparams
from official.modeling import tf_utils
from official.nlp.configs import bert
from official.nlp.configs import encoders
from official.nlp.data import pretrain_config_definitions as cfg
from official.nlp.data import pretrain_dataloader
from official.nlp.data import pretrain_dynamic_dataloader
from official.nlp.data import vocab_assets
from official.nlp.modeling import layers
from official.nlp.modeling import models

NEXT_SENTENCE = 'next_sentence'


def _default_pretrainer() -> bert.PretrainerConfig:
  return bert.PretrainerConfig(cls_heads=[
      bert.ClsHeadConfig(inner_dim=768, num_classes=2, dropout_rate=0.1, name=NEXT_SENTENCE)])


@dataclasses.dataclass
class MaskedLMConfig(cfg.TaskConfig):
  """The masked-LM task config.

  Attributes:
    model: the pretrainer (default: BERT-base with a `next_sentence` head).
    scale_loss: divide the loss by the number of replicas so gradients are averaged across replicas.
      False (Model Garden's default) sums the replicas' gradients: with N replicas the effective
      learning rate is N times larger than with one device.
    train_data: training records.
    validation_data: evaluation records.
  """
  model: bert.PretrainerConfig = dataclasses.field(default_factory=_default_pretrainer)
  scale_loss: bool = False
  train_data: pretrain_dataloader.BertPretrainDataConfig = dataclasses.field(
      default_factory=pretrain_dataloader.BertPretrainDataConfig)
  validation_data: pretrain_dataloader.BertPretrainDataConfig = dataclasses.field(
      default_factory=lambda: pretrain_dataloader.BertPretrainDataConfig(is_training=False))

  def validate(self) -> None:
    super().validate()
    encoder = self.model.encoder.get()
    for split in ('train_data', 'validation_data'):
      data = getattr(self, split)
      encoder.check_seq_length(f'{split}.seq_length', data.seq_length)
      if data.max_predictions_per_seq > data.seq_length:
        raise hyperparams.ConfigError(
            f'{split}.max_predictions_per_seq', f'{data.max_predictions_per_seq} exceeds '
            f'seq_length={data.seq_length}')


class MaskedLMPerplexity(tf_keras.metrics.Metric):
  """exp(weighted mean masked-LM cross-entropy) over everything seen since the last reset."""

  def __init__(self, name: str = 'masked_lm_perplexity', **kwargs):
    super().__init__(name=name, **kwargs)
    self.loss_sum = self.add_weight('loss_sum', initializer='zeros', dtype=tf.float32)
    self.weight_sum = self.add_weight('weight_sum', initializer='zeros', dtype=tf.float32)

  def update_state(self, losses: tf.Tensor, weights: tf.Tensor) -> None:
    """Adds per-position losses [batch, predictions] with their weights."""
    weights = tf.cast(weights, tf.float32)
    self.loss_sum.assign_add(tf.reduce_sum(tf.cast(losses, tf.float32) * weights))
    self.weight_sum.assign_add(tf.reduce_sum(weights))

  def result(self) -> tf.Tensor:
    return tf.exp(tf.math.divide_no_nan(self.loss_sum, self.weight_sum))


def masked_lm_loss(labels: tf.Tensor, logits: tf.Tensor, weights: tf.Tensor) -> tf.Tensor:
  """Per-position cross-entropy [batch, predictions]; `weights` only mask it later.

  Args:
    labels: int [batch, predictions] true token ids.
    logits: [batch, predictions, vocab].
    weights: [batch, predictions]; unused here, kept for symmetry with the mean.
  """
  del weights
  # The same values as `sparse_categorical_crossentropy(from_logits=True)`, about 2.5x faster on CPU
  # for a 30k vocabulary (one softmax serves the loss and its gradient).
  return tf_utils.sparse_softmax_cross_entropy(labels, logits)


def cross_entropy_with_argmax(labels: tf.Tensor,
                              logits: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
  """Per-position masked-LM cross-entropy and argmax ids, as the task's train and eval steps use.

  `tf_utils.sparse_softmax_cross_entropy_with_argmax(labels, logits)`, except when `logits` is the
  unchanged `mlm_logits` output of a `layers.MaskedLM` under bfloat16: then the loss reads the
  head's bfloat16 rows and float32 bias (`fused_ops.biased_cross_entropy_with_argmax`) instead of
  the float32 logits, and the gradient goes to those (so a tape sees no gradient of the loss with
  respect to `logits` itself). Same values up to float rounding. (float16 keeps the float32 logits:
  its narrow range would be the bias gradient's, summed in float16, under loss scaling.)

  Args:
    labels: int [batch, predictions] true ids.
    logits: float [batch, predictions, vocab].

  Returns:
    (float32 [batch, predictions] losses, int32 [batch, predictions] predicted ids).
  """
  source = fused_ops.biased_rows(logits)
  if source is None or source[0].dtype != tf.bfloat16:
    return tf_utils.sparse_softmax_cross_entropy_with_argmax(labels, logits)
  flat_labels, leading = tf_utils.flatten_class_labels(labels, logits, 'cross_entropy_with_argmax')
  loss, top = fused_ops.biased_cross_entropy_with_argmax(flat_labels, *source)
  return tf.reshape(loss, leading), tf.reshape(top, leading)


def update_accuracy(metric: tf_keras.metrics.Metric, labels: tf.Tensor, predictions: tf.Tensor,
                    weights: tf.Tensor) -> None:
  """Updates a `SparseCategoricalAccuracy` from predicted ids instead of logits.

  Its own `update_state` takes the argmax of [batch, predictions, vocab] logits: a pass over the
  vocabulary that the loss (`cross_entropy_with_argmax`) has already made.

  Args:
    metric: a `tf_keras.metrics.SparseCategoricalAccuracy`.
    labels: int [batch, predictions] true ids.
    predictions: int [batch, predictions] predicted ids.
    weights: [batch, predictions] weights of the positions.

  Example:
    >>> accuracy = tf_keras.metrics.SparseCategoricalAccuracy()
    >>> update_accuracy(accuracy, tf.constant([[1, 2]]), tf.constant([[1, 0]]), tf.ones([1, 2]))
    >>> float(accuracy.result())
    0.5
  """
  matches = tf.cast(tf.equal(tf.cast(labels, tf.int32), tf.cast(predictions, tf.int32)),
                    metric.dtype)
  # `Mean.update_state`: the mean of `matches`, as the wrapper computes after its own argmax.
  tf_keras.metrics.Mean.update_state(metric, matches, sample_weight=weights)


def _forward(model: tf_keras.Model, inputs: Mapping[str, tf.Tensor], training: bool):
  """`model(inputs)`; a `BertPretrainerV2` computes its last layer at [CLS] and the masked
  positions only (`masked_positions_only`: the loss and metrics read nothing else)."""
  if isinstance(model, models.BertPretrainerV2):
    return model(inputs, training=training, masked_positions_only=True)
  return model(inputs, training=training)


class _MetricsInFunctions:
  """The metrics `build_metrics` returns inside `tf.function`s, by `training` (a plain object:
  `tf.Module` does not collect its variables)."""

  def __init__(self):
    self.metrics: Dict[bool, List[tf_keras.metrics.Metric]] = {}


@task_factory.register_task_cls(MaskedLMConfig)
class MaskedLMTask(vocab_assets.ModelDirVocabMixin, base_task.Task):
  """Masked-LM (+ optional next-sentence) pretraining of a `BertPretrainerV2`."""

  def build_model(self, params: Optional[bert.PretrainerConfig] = None) -> tf_keras.Model:
    """Builds the `BertPretrainerV2` of `params` (default: the task's model config).

    The masked-LM head follows the encoder (`bert_pretrainer.masked_lm_options`): BERT's for
    BERT encoders, Hugging Face's bias-free head for `modernbert`.
    """
    config = params or self.task_config.model
    encoder = encoders.build_encoder(config.encoder)
    initializer_range = config.encoder.get().initializer_range
    heads = [layers.ClassificationHead(
        inner_dim=head.inner_dim, num_classes=head.num_classes, cls_token_idx=head.cls_token_idx,
        activation=head.activation, dropout_rate=head.dropout_rate,
        initializer=tf_keras.initializers.TruncatedNormal(stddev=initializer_range),
        name=head.name) for head in config.cls_heads]
    model = models.BertPretrainerV2(
        encoder_network=encoder,
        mlm_activation=tf_utils.get_activation(config.mlm_activation),
        mlm_initializer=tf_keras.initializers.TruncatedNormal(stddev=config.mlm_initializer_range),
        classification_heads=heads)
    # Create the variables now (the trainer checkpoints and builds optimizer slots before step 0).
    # Any length builds the same variables; without a task config (`MaskedLMTask(None)`), a short
    # one.
    data = self.task_config.train_data if self.task_config is not None else None
    seq_length = min(data.seq_length if data else 8,
                     getattr(config.encoder.get(), 'max_position_embeddings', None) or 8)
    predictions = min(data.max_predictions_per_seq if data else 2, seq_length)
    ids = tf.zeros([1, seq_length], tf.int32)
    model({'input_word_ids': ids, 'input_mask': ids, 'input_type_ids': ids,
           'masked_lm_positions': tf.zeros([1, predictions], tf.int32)})
    return model.use_task_steps(self)  # compile() without a loss: fit() trains this task

  def build_inputs(self, params: pretrain_dataloader.BertPretrainDataConfig,
                   input_context: Optional[tf.distribute.InputContext] = None) -> tf.data.Dataset:
    """The input dataset; `input_path: dummy` gives synthetic batches.

    A `BertPretrainDynamicDataConfig` reads unmasked records and masks them on the fly; a
    `pretrain_dynamic_dataloader.BertPretrainBucketedDataConfig` batches static masks by length.
    """
    if not isinstance(params, pretrain_dataloader.BertPretrainDataConfig):
      raise TypeError(
          'MaskedLMTask.build_inputs needs a BertPretrainDataConfig, found '
          f'{type(params).__name__}: give masked_lm.cfg.DataConfig its pretraining fields '
          '(seq_length, max_predictions_per_seq, ...), or use '
          'pretrain_dataloader.BertPretrainDataConfig')
    vocab_size = self.task_config.model.encoder.get().vocab_size
    if params.input_path == 'dummy':
      return pretrain_dataloader.dummy_dataset(params, vocab_size, input_context)
    if isinstance(params, pretrain_dynamic_dataloader.BertPretrainBucketedDataConfig):
      return pretrain_dynamic_dataloader.PretrainingDynamicDataLoader(params).load(input_context)
    if isinstance(params, pretrain_dynamic_dataloader.BertPretrainDynamicDataConfig):
      loader = pretrain_dynamic_dataloader.BertPretrainDynamicDataLoader(params, vocab_size)
    else:
      loader = pretrain_dataloader.BertPretrainDataLoader(params, vocab_size)
    return loader.load(input_context)

  def build_metrics(self, training: Optional[bool] = None) -> List[tf_keras.metrics.Metric]:
    """`masked_lm_accuracy`, `lm_example_loss`, `masked_lm_perplexity` (+ next-sentence metrics).

    Called eagerly it returns new metrics each time (Model Garden). Called inside a `tf.function`
    (a step function that builds its own metrics, as a how-to does) it returns the same metrics
    on every call and trace, created once outside the function: Keras metrics own variables, and
    a `tf.function` may create variables on its first trace only. They accumulate until reset.

    Example:
      >>> @tf.function
      ... def train_step(batch):
      ...   return task.train_step(batch, model, optimizer, task.build_metrics(training=True))
    """
    if not tf.inside_function():
      return self._new_metrics()
    cache = self.__dict__.get('_function_metrics')
    if cache is None:
      cache = _MetricsInFunctions()
      object.__setattr__(self, '_function_metrics', cache)  # untracked: not the task's variables
    key = bool(training)
    if key not in cache.metrics:
      with tf.init_scope():
        cache.metrics[key] = self._new_metrics()
    return cache.metrics[key]

  def _new_metrics(self) -> List[tf_keras.metrics.Metric]:
    metrics = [tf_keras.metrics.SparseCategoricalAccuracy(name='masked_lm_accuracy'),
               tf_keras.metrics.Mean(name='lm_example_loss'),
               MaskedLMPerplexity()]
    if self._has_next_sentence_head():
      metrics += [tf_keras.metrics.SparseCategoricalAccuracy(name='next_sentence_accuracy'),
                  tf_keras.metrics.Mean(name='next_sentence_loss')]
    return metrics

  def _has_next_sentence_head(self) -> bool:
    return any(head.name == NEXT_SENTENCE for head in self.task_config.model.cls_heads)

  def build_losses(self, labels: Mapping[str, tf.Tensor], model_outputs: Mapping[str, tf.Tensor],
                   metrics: Optional[List[tf_keras.metrics.Metric]] = None,
                   aux_losses: Optional[List[tf.Tensor]] = None) -> tf.Tensor:
    """The total loss; updates the loss metrics when `metrics` is given.

    Args:
      labels: the input dict with `masked_lm_ids`, `masked_lm_weights` [batch, predictions] and
        `next_sentence_labels` [batch, 1] (when there is a next-sentence head).
      model_outputs: the model's dict with `mlm_logits` [batch, predictions, vocab] and
        `next_sentence` [batch, 2].
      metrics: the task's metrics, to update `lm_example_loss`, perplexity and `next_sentence_loss`.
      aux_losses: regularization losses added to the total.

    Returns:
      A float32 scalar.
    """
    return self._losses_and_predictions(labels, model_outputs, metrics, aux_losses)[0]

  def _losses_and_predictions(self, labels, model_outputs, metrics, aux_losses):
    """(`build_losses`'s total, int32 [batch, predictions] masked-LM argmax ids)."""
    metrics = {metric.name: metric for metric in metrics or []}
    weights = tf.cast(labels['masked_lm_weights'], tf.float32)
    per_position, predictions = cross_entropy_with_argmax(labels['masked_lm_ids'],
                                                          model_outputs['mlm_logits'])
    mlm_loss = tf.math.divide_no_nan(tf.reduce_sum(per_position * weights), tf.reduce_sum(weights))
    if 'lm_example_loss' in metrics:
      metrics['lm_example_loss'].update_state(mlm_loss)
      metrics['masked_lm_perplexity'].update_state(per_position, weights)
    total = mlm_loss
    if NEXT_SENTENCE in model_outputs and 'next_sentence_labels' in labels:
      nsp_loss = tf.reduce_mean(tf_keras.losses.sparse_categorical_crossentropy(
          tf.reshape(labels['next_sentence_labels'], [-1]),
          tf.cast(model_outputs[NEXT_SENTENCE], tf.float32), from_logits=True))
      if 'next_sentence_loss' in metrics:
        metrics['next_sentence_loss'].update_state(nsp_loss)
      total += nsp_loss
    if aux_losses:
      total += tf.add_n([tf.cast(loss, tf.float32) for loss in aux_losses])
    return total, predictions

  def _step_losses(self, inputs, outputs, metrics, aux_losses):
    """The step's loss and masked-LM predictions (None when a subclass defines `build_losses`)."""
    if type(self).build_losses is not MaskedLMTask.build_losses:
      return self.build_losses(labels=inputs, model_outputs=outputs, metrics=metrics,
                               aux_losses=aux_losses), None
    return self._losses_and_predictions(inputs, outputs, metrics, aux_losses)

  def _step_metrics(self, metrics, inputs, outputs, predictions) -> None:
    """`process_metrics`, given the loss's predictions unless a subclass redefines it."""
    if predictions is None or type(self).process_metrics is not MaskedLMTask.process_metrics:
      self.process_metrics(metrics, inputs, outputs)
    else:
      self.process_metrics(metrics, inputs, outputs, mlm_predictions=predictions)

  def process_metrics(self, metrics: List[tf_keras.metrics.Metric], labels: Mapping[str, tf.Tensor],
                      model_outputs: Mapping[str, tf.Tensor], **kwargs) -> None:
    """Updates the accuracy metrics (the loss metrics are updated in `build_losses`).

    `mlm_predictions` (int [batch, predictions], optional keyword): the masked-LM argmax ids, when
    the caller has them (the train and eval steps take them from the loss); otherwise the
    accuracy takes the argmax of `mlm_logits`.
    """
    predictions = kwargs.pop('mlm_predictions', None)
    metrics = {metric.name: metric for metric in metrics}
    accuracy = metrics.get('masked_lm_accuracy')
    if accuracy is not None:
      if (predictions is not None
          and isinstance(accuracy, tf_keras.metrics.SparseCategoricalAccuracy)):
        update_accuracy(accuracy, labels['masked_lm_ids'], predictions,
                        labels['masked_lm_weights'])
      else:
        accuracy.update_state(labels['masked_lm_ids'], model_outputs['mlm_logits'],
                              labels['masked_lm_weights'])
    if ('next_sentence_accuracy' in metrics and NEXT_SENTENCE in model_outputs
        and 'next_sentence_labels' in labels):  # records without pairs: the MLM metrics only
      metrics['next_sentence_accuracy'].update_state(
          tf.reshape(labels['next_sentence_labels'], [-1]), model_outputs[NEXT_SENTENCE])

  def train_step(self, inputs: Mapping[str, tf.Tensor], model: tf_keras.Model,
                 optimizer: tf_keras.optimizers.Optimizer,
                 metrics: Optional[List[tf_keras.metrics.Metric]] = None) -> Dict[str, tf.Tensor]:
    """One optimizer step on a per-replica batch; returns `{'loss': loss}`.

    With `scale_loss` the loss is divided by the replicas in sync before the gradient, so the summed
    gradients are the global-batch mean; without it (Model Garden's default) they are summed.
    """
    with tf.GradientTape() as tape:
      outputs = _forward(model, inputs, training=True)
      loss, predictions = self._step_losses(inputs, outputs, metrics, model.losses)
      scaled_loss = loss
      if self.task_config.scale_loss:
        scaled_loss = loss / tf.distribute.get_strategy().num_replicas_in_sync
      scaled_loss = base_task.scale_loss(scaled_loss, optimizer)
    # The encoder's pooler gets no gradient in pretraining (heads read token 0 themselves).
    base_task.apply_gradients(tape, scaled_loss, model, optimizer)
    if metrics:
      self._step_metrics(metrics, inputs, outputs, predictions)
    return {self.loss: loss}

  def validation_step(self, inputs: Mapping[str, tf.Tensor], model: tf_keras.Model,
                      metrics: Optional[List[tf_keras.metrics.Metric]] = None
                      ) -> Dict[str, tf.Tensor]:
    """Forward pass and metric updates on one eval batch; returns `{'loss': loss}`."""
    outputs = _forward(model, inputs, training=False)
    loss, predictions = self._step_losses(inputs, outputs, metrics, model.losses)
    if metrics:
      self._step_metrics(metrics, inputs, outputs, predictions)
    return {self.loss: loss}

  def initialize(self, model: tf_keras.Model) -> None:
    """Restores `init_checkpoint`: the encoder always, the heads when the checkpoint has them.

    A head whose variables are missing from the checkpoint or have other shapes (e.g. a different
    number of classes) is left freshly initialized, with a log line naming it.
    """
    if not self.task_config.init_checkpoint:
      return
    ckpt_path = checkpointing.resolve_checkpoint(self.task_config.init_checkpoint)
    if ckpt_path is None:
      return
    items = dict(model.checkpoint_items)
    saved_items = checkpoint_compat.root_names(ckpt_path)
    if 'encoder' not in saved_items:
      raise ValueError(f'task.init_checkpoint {ckpt_path!r} has no `encoder` (it has '
                       f'{sorted(saved_items)}); save pretrainers with their checkpoint_items')
    status = tf.train.Checkpoint(encoder=items.pop('encoder')).read(ckpt_path)
    status.expect_partial().assert_existing_objects_matched()
    restored = ['encoder']
    for name, item in items.items():
      if name in saved_items and checkpointing.read_items_if_compatible(ckpt_path, name, item):
        restored.append(name)
      else:
        logging.info('init_checkpoint: %s is not in %s or differs in shape; it starts fresh.',
                     name, ckpt_path)
    # The heads' logits layers are not checkpoint items (Model Garden's keys): read by key.
    restored += [f'{name} (head)'
                 for name in checkpoint_compat.restore_head_weights(ckpt_path, model)]
    logging.info('Restored %s from %s', restored, ckpt_path)
