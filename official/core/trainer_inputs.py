"""The inputs of a `Trainer`: the task's training and validation datasets, per replica.

Every input goes through `build_inputs` (the task's `build_inputs`, tf.data's autotuner off). With
one replica the training input is a plain tf.data iterator, which the trainer saves in its
checkpoint: a resumed run neither repeats nor skips a batch. tf.distribute iterators cannot be
saved, so with several replicas the input is built after the restore and each pipeline skips the
batches the restored steps consumed (`train_iterator(skip_steps=...)`).

Example:
  >>> iterator = train_iterator(strategy, task, params.task.train_data)
  >>> batch = next(iterator)                 # one (per-replica) batch
  >>> for batch in validation_dataset(strategy, task, params.task.validation_data): ...
"""

import inspect
import logging
from typing import Iterator, Optional

import tensorflow as tf

from official.core import base_task
from official.core import config_definitions as cfg
from official.core import dataset_options


def build_inputs(task: base_task.Task, data: cfg.DataConfig,
                 input_context: Optional[tf.distribute.InputContext]) -> tf.data.Dataset:
  """`task.build_inputs(data, input_context)`, with tf.data's autotuner off.

  Tasks whose `build_inputs` takes no input context (allowed by Model Garden) get `data` only.
  The autotuner is off (`dataset_options.without_autotune`) so that the iterators delete at once.

  Args:
    task: the task.
    data: its data config (`params.task.train_data` or `validation_data`).
    input_context: the pipeline's `tf.distribute.InputContext`, or None (one replica).

  Returns:
    The task's dataset.

  Example:
    >>> dataset = build_inputs(task, params.task.train_data, None)
  """
  try:
    takes_context = len(inspect.signature(task.build_inputs).parameters) > 1
  except (TypeError, ValueError):
    takes_context = True
  dataset = task.build_inputs(data, input_context) if takes_context else task.build_inputs(data)
  return dataset_options.without_autotune(dataset)


def train_iterator(strategy: tf.distribute.Strategy, task: base_task.Task, data: cfg.DataConfig,
                   accumulation_steps: int = 1, skip_steps: int = 0) -> Iterator:
  """An iterator of the training input's per-replica batches.

  Args:
    strategy: the distribution strategy.
    task: the task.
    data: the training data config.
    accumulation_steps: batches a train step reads (`trainer.gradient_accumulation_steps`).
    skip_steps: train steps already done (several replicas only): each input pipeline drops the
      batches those steps consumed, so a resumed run continues where the checkpoint left off,
      provided the input is deterministic (`runtime.deterministic`, or no shuffling).

  Returns:
    With one replica a plain tf.data iterator (checkpointable), else a distributed iterator.

  Example:
    >>> iterator = train_iterator(strategy, task, params.task.train_data, skip_steps=200)
  """
  if strategy.num_replicas_in_sync == 1:
    # A plain iterator is checkpointable (tf.distribute iterators are not): a resumed run neither
    # repeats nor skips a batch. Its state, e.g. the shuffle buffer, is saved too; stateful ops
    # such as py_function only warn and restart.
    options = tf.data.Options()
    options.experimental_external_state_policy = tf.data.experimental.ExternalStatePolicy.WARN
    return iter(build_inputs(task, data, None).with_options(options))

  def dataset_fn(ctx: tf.distribute.InputContext) -> tf.data.Dataset:
    dataset = build_inputs(task, data, ctx)
    if skip_steps:
      # Each step takes one batch per replica of this pipeline per accumulated micro-batch.
      per_pipeline = strategy.num_replicas_in_sync // ctx.num_input_pipelines
      dataset = dataset.skip(skip_steps * per_pipeline * accumulation_steps)
    return dataset

  if skip_steps:
    logging.info('Several replicas: skipping the first %d steps\' batches of the training input '
                 'to resume where the checkpoint left off.', skip_steps)
  return iter(strategy.distribute_datasets_from_function(dataset_fn))


def validation_dataset(strategy: tf.distribute.Strategy, task: base_task.Task,
                       data: cfg.DataConfig) -> tf.distribute.DistributedDataset:
  """The validation input, distributed over the replicas (one pass per evaluation).

  Example:
    >>> for batch in validation_dataset(strategy, task, params.task.validation_data): ...
  """
  return strategy.distribute_datasets_from_function(lambda ctx: build_inputs(task, data, ctx))
