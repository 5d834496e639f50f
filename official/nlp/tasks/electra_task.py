"""The ELECTRA pretraining task: masked LM (generator) + replaced-token detection (discriminator).

Loss: the generator's masked-LM cross-entropy (weighted by `masked_lm_weights`, divided by their
sum), plus the mean next-sentence cross-entropy when the batch has `next_sentence_labels`, plus
`discriminator_loss_weight` x the discriminator's sigmoid cross-entropy averaged over the real
tokens (`input_mask`). The loss is divided by the replicas in sync before the gradient (gradients
are averaged across replicas), as Model Garden's ELECTRA task does.

Differences from Model Garden, on purpose: the next-sentence loss is averaged over the batch
(Model Garden adds the per-example vector, making the loss a vector); `input_path: dummy` gives
the masked-LM task's synthetic batches (random tokens) rather than zeros.

Example:
  >>> config = ElectraPretrainConfig(model=electra.ElectraPretrainerConfig(...),
  ...     train_data=pretrain_dataloader.BertPretrainDataConfig(input_path='train.tfrecord',
  ...         seq_length=128, max_predictions_per_seq=20, global_batch_size=32))
  >>> task = ElectraPretrainTask(config)
  >>> model = task.build_model()
"""

import dataclasses
from typing import Dict, List, Mapping, Optional

import tensorflow as tf
import tf_keras

from official.core import base_task
from official.core import config_definitions as cfg
from official.core import task_factory
from official.modeling import hyperparams
from official.nlp.configs import bert
from official.nlp.configs import electra
from official.nlp.configs import encoders
from official.nlp.data import pretrain_dataloader
from official.nlp.data import pretrain_dynamic_dataloader
from official.nlp.data import vocab_assets
from official.nlp.modeling import models
from official.nlp.tasks import masked_lm


def _default_pretrainer() -> electra.ElectraPretrainerConfig:
  return electra.ElectraPretrainerConfig(cls_heads=[bert.ClsHeadConfig(
      inner_dim=768, num_classes=2, dropout_rate=0.1, name=masked_lm.NEXT_SENTENCE)])


@dataclasses.dataclass
class ElectraPretrainConfig(cfg.TaskConfig):
  """The ELECTRA pretraining task config (Model Garden's fields).

  Attributes:
    model: the generator and discriminator (default: two BERT-base encoders, tied embeddings).
    train_data: training records (the masked-LM records of `create_pretraining_data`).
    validation_data: evaluation records.
  """
  model: electra.ElectraPretrainerConfig = dataclasses.field(default_factory=_default_pretrainer)
  train_data: pretrain_dataloader.BertPretrainDataConfig = dataclasses.field(
      default_factory=pretrain_dataloader.BertPretrainDataConfig)
  validation_data: pretrain_dataloader.BertPretrainDataConfig = dataclasses.field(
      default_factory=lambda: pretrain_dataloader.BertPretrainDataConfig(is_training=False))

  def validate(self) -> None:
    super().validate()
    for split in ('train_data', 'validation_data'):
      data = getattr(self, split)
      for encoder in ('generator_encoder', 'discriminator_encoder'):
        limit = getattr(getattr(self.model, encoder).get(), 'max_position_embeddings', None)
        if limit is not None and data.seq_length > limit:
          raise hyperparams.ConfigError(f'{split}.seq_length', f'{data.seq_length} exceeds '
                                        f'model.{encoder}.max_position_embeddings={limit}')
      if data.max_predictions_per_seq > data.seq_length:
        raise hyperparams.ConfigError(
            f'{split}.max_predictions_per_seq', f'{data.max_predictions_per_seq} exceeds '
            f'seq_length={data.seq_length}')


@task_factory.register_task_cls(ElectraPretrainConfig)
class ElectraPretrainTask(vocab_assets.ModelDirVocabMixin, base_task.Task):
  """ELECTRA pretraining of an `ElectraPretrainer`; `initialize` restores the discriminator."""

  def build_model(self, params: Optional[electra.ElectraPretrainerConfig] = None
                  ) -> tf_keras.Model:
    """Builds the `ElectraPretrainer` of `params` (default: the task's model config)."""
    config = params or self.task_config.model
    discriminator = encoders.build_encoder(config.discriminator_encoder)
    embedding_layer = discriminator.get_embedding_layer() if config.tie_embeddings else None
    generator = encoders.build_encoder(config.generator_encoder, embedding_layer=embedding_layer)
    generator_config = config.generator_encoder.get()
    model = models.ElectraPretrainer(
        generator_network=generator, discriminator_network=discriminator,
        vocab_size=generator_config.vocab_size, num_classes=config.num_classes,
        num_token_predictions=config.num_masked_tokens, sequence_length=config.sequence_length,
        mlm_activation=generator_config.hidden_activation,
        mlm_initializer=tf_keras.initializers.TruncatedNormal(
            stddev=generator_config.initializer_range),
        disallow_correct=config.disallow_correct)
    # Create the variables now (the trainer checkpoints and builds optimizer slots before step
    # 0). Position 0 is never replaced, so this call samples nothing.
    ids = tf.zeros([1, 2], tf.int32)
    model({'input_word_ids': ids, 'input_mask': ids + 1, 'input_type_ids': ids,
           'masked_lm_positions': ids[:, :1], 'masked_lm_ids': ids[:, :1]})
    return model.use_task_steps(self)  # compile() without a loss: fit() trains this task

  def build_inputs(self, params: pretrain_dataloader.BertPretrainDataConfig,
                   input_context: Optional[tf.distribute.InputContext] = None) -> tf.data.Dataset:
    """The masked-LM records of `params` (static or dynamic masks); `input_path: dummy` gives
    synthetic batches."""
    if not isinstance(params, pretrain_dataloader.BertPretrainDataConfig):
      raise TypeError('ElectraPretrainTask.build_inputs needs a BertPretrainDataConfig, found '
                      f'{type(params).__name__}')
    vocab_size = self.task_config.model.generator_encoder.get().vocab_size
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
    """`masked_lm_accuracy`, `lm_example_loss`, `discriminator_accuracy`, (with next-sentence
    labels) `next_sentence_accuracy`, `next_sentence_loss`, then `discriminator_loss`,
    `total_loss` (Model Garden's names and order)."""
    del training
    metrics = [tf_keras.metrics.SparseCategoricalAccuracy(name='masked_lm_accuracy'),
               tf_keras.metrics.Mean(name='lm_example_loss'),
               tf_keras.metrics.SparseCategoricalAccuracy(name='discriminator_accuracy')]
    if self.task_config.train_data.use_next_sentence_label:
      metrics += [tf_keras.metrics.SparseCategoricalAccuracy(name='next_sentence_accuracy'),
                  tf_keras.metrics.Mean(name='next_sentence_loss')]
    return metrics + [tf_keras.metrics.Mean(name='discriminator_loss'),
                      tf_keras.metrics.Mean(name='total_loss')]

  def build_losses(self, labels: Mapping[str, tf.Tensor], model_outputs: Mapping[str, tf.Tensor],
                   metrics: Optional[List[tf_keras.metrics.Metric]] = None,
                   aux_losses: Optional[List[tf.Tensor]] = None) -> tf.Tensor:
    """The total loss (float32 scalar); updates the loss metrics when `metrics` is given.

    Args:
      labels: the input dict: `masked_lm_ids`, `masked_lm_weights` [batch, predictions],
        `input_mask` [batch, seq], and optionally `next_sentence_labels` [batch, 1].
      model_outputs: the model's dict (`lm_outputs`, `sentence_outputs`, `disc_logits`,
        `disc_label`).
      metrics: the task's metrics.
      aux_losses: regularization losses added to the total.
    """
    metrics = {metric.name: metric for metric in metrics or []}

    def update(name, value):
      if name in metrics:
        metrics[name].update_state(value)

    weights = tf.cast(labels['masked_lm_weights'], tf.float32)
    per_position = masked_lm.masked_lm_loss(labels['masked_lm_ids'], model_outputs['lm_outputs'],
                                            weights)
    mlm_loss = tf.math.divide_no_nan(tf.reduce_sum(per_position * weights), tf.reduce_sum(weights))
    update('lm_example_loss', mlm_loss)
    total = mlm_loss
    if 'next_sentence_labels' in labels:
      sentence_loss = tf.reduce_mean(tf_keras.losses.sparse_categorical_crossentropy(
          tf.reshape(labels['next_sentence_labels'], [-1]),
          tf.cast(model_outputs['sentence_outputs'], tf.float32), from_logits=True))
      update('next_sentence_loss', sentence_loss)
      total += sentence_loss

    input_mask = tf.cast(labels['input_mask'], tf.float32)
    per_token = tf.nn.sigmoid_cross_entropy_with_logits(
        labels=tf.cast(model_outputs['disc_label'], tf.float32),
        logits=tf.cast(model_outputs['disc_logits'], tf.float32))
    rtd_loss = tf.math.divide_no_nan(tf.reduce_sum(per_token * input_mask),
                                     tf.reduce_sum(input_mask))
    update('discriminator_loss', rtd_loss)
    total += self.task_config.model.discriminator_loss_weight * rtd_loss
    if aux_losses:
      total += tf.add_n([tf.cast(loss, tf.float32) for loss in aux_losses])
    update('total_loss', total)
    return total

  def process_metrics(self, metrics: List[tf_keras.metrics.Metric], labels: Mapping[str, tf.Tensor],
                      model_outputs: Mapping[str, tf.Tensor], **kwargs) -> None:
    """Updates the accuracy metrics (the loss metrics are updated in `build_losses`)."""
    del kwargs
    metrics = {metric.name: metric for metric in metrics}
    if 'masked_lm_accuracy' in metrics:
      metrics['masked_lm_accuracy'].update_state(
          labels['masked_lm_ids'], model_outputs['lm_outputs'], labels['masked_lm_weights'])
    if 'next_sentence_accuracy' in metrics and 'next_sentence_labels' in labels:
      metrics['next_sentence_accuracy'].update_state(
          tf.reshape(labels['next_sentence_labels'], [-1]), model_outputs['sentence_outputs'])
    if 'discriminator_accuracy' in metrics:
      # Two-class scores [-logit, logit]: class 1 (replaced) wins exactly when the logit is > 0.
      logits = model_outputs['disc_logits'][..., None]
      metrics['discriminator_accuracy'].update_state(
          model_outputs['disc_label'], tf.concat([-logits, logits], axis=-1),
          labels['input_mask'])

  def train_step(self, inputs: Mapping[str, tf.Tensor], model: tf_keras.Model,
                 optimizer: tf_keras.optimizers.Optimizer,
                 metrics: Optional[List[tf_keras.metrics.Metric]] = None) -> Dict[str, tf.Tensor]:
    """One optimizer step on a per-replica batch; returns `{'loss': loss}` (unscaled)."""
    with tf.GradientTape() as tape:
      outputs = model(inputs, training=True)
      loss = self.build_losses(labels=inputs, model_outputs=outputs, metrics=metrics,
                               aux_losses=model.losses)
      scaled_loss = base_task.scale_loss(
          loss / tf.distribute.get_strategy().num_replicas_in_sync, optimizer)
    # The encoders' poolers get no gradient (the heads read the sequence outputs).
    base_task.apply_gradients(tape, scaled_loss, model, optimizer)
    if metrics:
      self.process_metrics(metrics, inputs, outputs)
    return {self.loss: loss}

  def validation_step(self, inputs: Mapping[str, tf.Tensor], model: tf_keras.Model,
                      metrics: Optional[List[tf_keras.metrics.Metric]] = None
                      ) -> Dict[str, tf.Tensor]:
    """Forward pass and metric updates on one eval batch; returns `{'loss': loss}`."""
    outputs = model(inputs, training=False)
    loss = self.build_losses(labels=inputs, model_outputs=outputs, metrics=metrics,
                             aux_losses=model.losses)
    if metrics:
      self.process_metrics(metrics, inputs, outputs)
    return {self.loss: loss}
