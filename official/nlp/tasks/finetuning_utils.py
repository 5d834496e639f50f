"""Helpers the fine-tuning tasks share: the encoder restore, the records' vocabulary check, the
synthetic batches of `input_path: dummy` and the eval steps (`FinetuningEvalMixin`).

Example:
  >>> restore_encoder('runs/tiny', classifier)        # the pretraining run's encoder
  >>> check_vocab_size(loader.metadata, vocab_size=30522)
  >>> dataset = dummy_batches(params, 30522, 11, lambda f, seed, i, b: tf.zeros([b], tf.int32))
"""

import logging
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

import numpy as np
import tensorflow as tf
import tf_keras

from official.core import checkpointing
from official.nlp.tasks import finetuning_metrics


def check_vocab_size(metadata: Optional[Dict[str, Any]], vocab_size: int,
                     encoder_type: str = 'bert') -> None:
  """Raises when the records' vocabulary has more tokens than the model's word embeddings.

  Ids past the table cannot be looked up; a smaller vocabulary is only logged (a table padded past
  the vocabulary is common; a different vocabulary is caught by the model_dir's vocab check,
  `vocab_assets`).

  Args:
    metadata: the records' metadata (`vocab_size`, `metadata_path`), or None when there is none.
    vocab_size: rows of the model's word-embedding table.
    encoder_type: the `task.model.encoder.type` whose `vocab_size` the error names.

  Raises:
    ValueError: the records were written with more than `vocab_size` tokens.

  Example:
    >>> check_vocab_size({'vocab_size': 30, 'metadata_path': 'train.metadata.json'}, 48)  # fine
    >>> check_vocab_size(metadata, config.encoder.get().vocab_size, config.encoder.type)
  """
  found = (metadata or {}).get('vocab_size')
  if found is None or found == vocab_size:
    return
  if found > vocab_size:
    raise ValueError(f'task.model.encoder.{encoder_type}.vocab_size is {vocab_size} but the '
                     f'records were written with a vocabulary of {found} tokens '
                     f'({metadata["metadata_path"]}); expected at most as many tokens as word '
                     'embeddings')
  logging.info('The records (%s) use %d of the %d word embeddings', metadata['metadata_path'],
               found, vocab_size)


def restore_encoder(init_checkpoint: str, model: tf_keras.Model,
                    extra: Optional[Mapping[str, Any]] = None) -> str:
  """Restores the `encoder` of `model.checkpoint_items` (and `extra` objects) from a checkpoint.

  Args:
    init_checkpoint: a checkpoint directory or prefix (e.g. a pretraining model_dir).
    model: a model with `checkpoint_items['encoder']`.
    extra: more `{checkpoint key: object}` pairs to restore.

  Returns:
    The checkpoint prefix that was read.

  Raises:
    FileNotFoundError: no checkpoint at `init_checkpoint`.
    ValueError: the checkpoint has no `encoder` or its variables do not fit the model's encoder.

  Example:
    >>> restore_encoder('runs/tiny', classifier)
    'runs/tiny/ckpt-1000'
  """
  ckpt_path = checkpointing.resolve_checkpoint(init_checkpoint)
  items = {'encoder': model.checkpoint_items['encoder'], **(extra or {})}
  checkpointing.read_items(ckpt_path, items, hint=' (is it a checkpoint of an encoder of the '
                           'same size, saved with checkpoint_items?)')
  return ckpt_path


def dummy_batches(params: Any, vocab_size: int, salt: int,
                  make_labels: Callable[[Dict[str, tf.Tensor], tf.Tensor, tf.Tensor, int], Any],
                  input_context: Optional[tf.distribute.InputContext] = None,
                  label_key: Optional[str] = None) -> tf.data.Dataset:
  """Synthetic batches for `input_path: dummy` (smoke tests, benchmarks) of the fine-tuning tasks.

  Batch `index` has random token ids (stateless, seed `(index, salt)`), a full `input_mask` and
  `input_type_ids` 0, each int32 [batch, seq_length]; endless for training, 8 batches otherwise.

  Args:
    params: the data config (`global_batch_size`, `seq_length`, `is_training`).
    vocab_size: token ids are drawn from [0, vocab_size).
    salt: the second seed component, one per task.
    make_labels: `(features, seed, index, batch) -> labels`; may add features.
    input_context: per-replica batch size under a distribution strategy.
    label_key: None: the batches are `(features, labels)`; a key: one dict per batch, the labels
      under this key (the layout of the sentence-prediction loader).

  Example:
    >>> dataset = dummy_batches(params, 30, 11, lambda f, seed, i, b: tf.zeros([b], tf.int32))
    >>> dataset = dummy_batches(params, 30, 11, lambda f, seed, i, b: tf.zeros([b], tf.int32),
    ...                         label_key='label_ids')  # {'input_word_ids': ..., 'label_ids': ...}
  """
  batch = params.global_batch_size
  if input_context:
    batch = input_context.get_per_replica_batch_size(params.global_batch_size)
  seq = params.seq_length

  def make(index):
    seed = tf.stack([index, tf.constant(salt, tf.int64)])
    ids = tf.random.stateless_uniform([batch, seq], seed, 0, vocab_size, dtype=tf.int32)
    features = {'input_word_ids': ids, 'input_mask': tf.ones_like(ids),
                'input_type_ids': tf.zeros_like(ids)}
    labels = make_labels(features, seed, index, batch)
    if label_key is not None:
      return {**features, label_key: labels}
    return features, labels

  dataset = tf.data.Dataset.range(1_000_000_000 if params.is_training else 8)
  return dataset.map(make).prefetch(tf.data.AUTOTUNE)


class FinetuningEvalMixin:
  """The eval logs of the fine-tuning tasks: `aggregate_logs` collects the arrays
  `validation_step` returns under `EVAL_LOG_KEYS` for `reduce_aggregated_logs` (the forward pass is
  `Task.eval_forward`).

  Example:
    >>> class MyTask(FinetuningEvalMixin, base_task.Task):
    ...   EVAL_LOG_KEYS = ('predict_ids', 'label_ids')
  """
  EVAL_LOG_KEYS: Tuple[str, ...] = ()

  def aggregate_logs(self, state: Any = None, step_outputs: Optional[Mapping[str, Any]] = None,
                     step_logs: Optional[Mapping[str, Any]] = None) -> Dict[str, List[np.ndarray]]:
    """Collects every replica's `EVAL_LOG_KEYS` arrays of an eval step.

    Args:
      state: the previous return value (None at the start of an evaluation).
      step_outputs: the step's logs, one array or a list/tuple of per-replica arrays per key
        (Model Garden's name); `step_logs` is the same under the base class's name.

    Returns:
      `{key: [array per replica and step, ...]}` for every key of `EVAL_LOG_KEYS`.
    """
    return finetuning_metrics.collect_step_logs(state, step_outputs or step_logs,
                                                self.EVAL_LOG_KEYS)
