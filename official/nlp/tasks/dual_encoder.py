"""The dual encoder (retrieval) fine-tuning task: a pretrained encoder learns to rank text pairs.

Each batch holds pairs (left text i, right text i); the model scores every left text against every
right text of the (per-replica) batch, and the loss is the cross-entropy of picking the true
partner among them (in-batch negatives), left-to-right and, with `bidirectional`, right-to-left as
well. Metrics: `left_recall_at_k` (and `right_recall_at_k`) for each k of `eval_top_k`: how often
the true partner is among the k best-scored texts of the batch, and `batch_size_per_core`.

Example:
  >>> config = DualEncoderConfig(init_checkpoint='runs/tiny', model=ModelConfig(encoder=...),
  ...     train_data=DualEncoderDataConfig(input_path='pairs.tfrecord', vocab_file='vocab.txt'))
  >>> task = DualEncoderTask(config)
  >>> model = task.build_model()
"""

import dataclasses
from typing import Any, Dict, List, Optional, Tuple

import tensorflow as tf
import tf_keras

from official.core import base_task
from official.core import checkpointing
from official.core import config_definitions as cfg
from official.core import task_factory
from official.modeling import hyperparams
from official.nlp.configs import encoders
from official.nlp.data import data_loader_factory
from official.nlp.data import dual_encoder_dataloader
from official.nlp.modeling import models
from official.nlp.tasks import finetuning_utils

_INPUT_SIDES = ('left', 'right')


@dataclasses.dataclass
class ModelConfig(hyperparams.Config):
  """The dual encoder (Model Garden's fields and defaults).

  Attributes:
    normalize: L2-normalize the pooled encodings (the logits are then cosine similarities).
    max_sequence_length: the model's sequence length (`DualEncoder.max_seq_length`).
    logit_scale: multiplies the similarities (a softmax temperature of 1 / scale).
    logit_margin: subtracted from the true pair's similarity (additive margin, Yang et al. 2019).
    bidirectional: also rank the left texts for each right text.
    eval_top_k: the k of the `recall_at_k` metrics.
    encoder: the encoder one-of.
  """
  normalize: bool = True
  max_sequence_length: int = hyperparams.field(64, ge=1)
  logit_scale: float = 1.0
  logit_margin: float = 0.0
  bidirectional: bool = False
  eval_top_k: Tuple[int, ...] = (1, 3, 10)
  encoder: encoders.EncoderConfig = dataclasses.field(default_factory=encoders.EncoderConfig)


@dataclasses.dataclass
class DualEncoderConfig(cfg.TaskConfig):
  """The dual encoder task config (Model Garden's field names).

  Attributes:
    init_checkpoint: a pretraining checkpoint (directory or prefix); its `encoder` is restored.
    model: the dual encoder.
    train_data: training text pairs (`input_path: dummy`: synthetic ids).
    validation_data: evaluation text pairs.
  """
  hub_module_url: str = hyperparams.unsupported('', 'TF Hub encoders are not supported by '
                                                'mlm-garden (use init_checkpoint)')
  model: ModelConfig = dataclasses.field(default_factory=ModelConfig)
  train_data: dual_encoder_dataloader.DualEncoderDataConfig = dataclasses.field(
      default_factory=dual_encoder_dataloader.DualEncoderDataConfig)
  validation_data: dual_encoder_dataloader.DualEncoderDataConfig = dataclasses.field(
      default_factory=lambda: dual_encoder_dataloader.DualEncoderDataConfig(is_training=False))

  def validate(self) -> None:
    super().validate()
    if any(k < 1 for k in self.model.eval_top_k):
      raise hyperparams.ConfigError('model.eval_top_k', f'expected values >= 1, found '
                                    f'{list(self.model.eval_top_k)}')
    encoder = self.model.encoder.get()
    encoder.check_seq_length('model.max_sequence_length', self.model.max_sequence_length)
    for split in ('train_data', 'validation_data'):
      encoder.check_seq_length(f'{split}.seq_length', getattr(getattr(self, split), 'seq_length',
                                                               0))


def _ranking_labels(logits: tf.Tensor) -> tf.Tensor:
  """Row i's true partner is column i."""
  return tf.range(tf.shape(logits)[0])


@task_factory.register_task_cls(DualEncoderConfig)
class DualEncoderTask(base_task.Task):
  """Fine-tunes a `DualEncoder` on text pairs with in-batch negatives.

  The batches are dicts of the `DualEncoder` inputs and carry no labels: `build_losses` and
  `process_metrics` take the labels from the logits' shape (pair i matches pair i).
  """

  def build_model(self) -> tf_keras.Model:
    """The `DualEncoder` (`output='logits'`), built."""
    config = self.task_config.model
    encoder = encoders.build_encoder(config.encoder)
    model = models.DualEncoder(
        network=encoder, max_seq_length=config.max_sequence_length, normalize=config.normalize,
        logit_scale=config.logit_scale, logit_margin=config.logit_margin, output='logits')
    ids = tf.zeros([1, config.max_sequence_length], tf.int32)
    model({f'{side}_{field}': ids for side in _INPUT_SIDES
           for field in ('word_ids', 'mask', 'type_ids')})
    return model.use_task_steps(self)  # compile() without a loss: fit() trains this task

  def initialize(self, model: tf_keras.Model) -> None:
    """Restores the encoder from `init_checkpoint` (a directory without checkpoints: nothing)."""
    init_checkpoint = self.task_config.init_checkpoint
    if init_checkpoint and checkpointing.resolve_checkpoint(init_checkpoint) is not None:
      finetuning_utils.restore_encoder(init_checkpoint, model)

  def build_inputs(self, params: dual_encoder_dataloader.DualEncoderDataConfig,
                   input_context: Optional[tf.distribute.InputContext] = None) -> tf.data.Dataset:
    """Batches of `{left,right}_{word_ids,mask,type_ids}` (`input_path: dummy`: synthetic)."""
    if params.input_path == 'dummy':
      return _dummy_pairs(params, self.task_config.model.encoder.get().vocab_size, input_context)
    return data_loader_factory.get_data_loader(params).load(input_context)

  def build_losses(self, labels: Any, model_outputs: Dict[str, tf.Tensor],
                   aux_losses: Optional[List[tf.Tensor]] = None) -> tf.Tensor:
    """Mean cross-entropy of ranking each left text's partner first (plus the right texts' with
    `bidirectional`), plus `aux_losses`."""
    del labels
    sides = ['left_logits'] + (['right_logits'] if self.task_config.model.bidirectional else [])
    loss = tf.constant(0.0)
    for key in sides:
      logits = tf.cast(model_outputs[key], tf.float32)
      loss += tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
          labels=_ranking_labels(logits), logits=logits))
    if aux_losses:
      loss += tf.add_n([tf.cast(aux, tf.float32) for aux in aux_losses])
    return loss

  def build_metrics(self, training: Optional[bool] = None) -> List[tf_keras.metrics.Metric]:
    """`batch_size_per_core`, `left_recall_at_k` (and `right_recall_at_k`) per `eval_top_k`."""
    del training
    metrics = [tf_keras.metrics.Mean(name='batch_size_per_core')]
    sides = ('left', 'right') if self.task_config.model.bidirectional else ('left',)
    for k in self.task_config.model.eval_top_k:
      metrics += [tf_keras.metrics.SparseTopKCategoricalAccuracy(k=k, name=f'{side}_recall_at_{k}')
                  for side in sides]
    return metrics

  def process_metrics(self, metrics: List[tf_keras.metrics.Metric], labels: Any,
                      model_outputs: Dict[str, tf.Tensor], **kwargs) -> None:
    """Updates the recall metrics with the in-batch ranking labels (`labels` are not used)."""
    del labels, kwargs
    left_logits = model_outputs['left_logits']
    ranking = _ranking_labels(left_logits)
    for metric in metrics:
      if metric.name == 'batch_size_per_core':
        metric.update_state(tf.cast(tf.shape(left_logits)[0], tf.float32))
      elif metric.name.startswith('left_recall_at_'):
        metric.update_state(ranking, left_logits)
      elif metric.name.startswith('right_recall_at_'):
        metric.update_state(ranking, model_outputs['right_logits'])


def _dummy_pairs(params: dual_encoder_dataloader.DualEncoderDataConfig, vocab_size: int,
                 input_context: Optional[tf.distribute.InputContext] = None) -> tf.data.Dataset:
  """Synthetic batches for `input_path: dummy`: random left and right token ids, full masks."""
  def right_side(features, seed, index, batch):
    del features, index
    ids = tf.random.stateless_uniform([batch, params.seq_length], seed + 1, 0, vocab_size,
                                      dtype=tf.int32)
    return {'input_word_ids': ids, 'input_mask': tf.ones_like(ids),
            'input_type_ids': tf.zeros_like(ids)}

  def as_pairs(left, right):
    return {f'{side}_{key[len("input_"):]}': value
            for side, inputs in (('left', left), ('right', right))
            for key, value in inputs.items()}

  return finetuning_utils.dummy_batches(params, vocab_size, 17, right_side,
                                        input_context).map(as_pairs)
