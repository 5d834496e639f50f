"""tf.data options every input we build gets: autotuning off.

Applied where the inputs start, so every dataset built on them carries it (options propagate
downstream): `tfrecord_reader.record_stream` (every record loader),
`pretrain_dataloader.dummy_dataset`, and `trainer_inputs.build_inputs` (tasks with inputs of their
own).

TensorFlow 2.21's autotuner runs a model thread per iterator. Deleting the iterator (the end of a
training run, an evaluation pass, a fine-tuning run; or the garbage collector finding it later)
waits for that thread, and it often sleeps out its optimization period first, which doubles up to
a minute the longer the iterator lives. Measured on an AMD EPYC (2 cores): deleting 20 autotuned
iterators (a parallel map and a prefetch over `range`) took up to 13.6 s each (4 of 20 over a
second), none with autotuning off; `train.py` on the toy experiment (33 s of training) exited 1.0 s
and 13.0 s after its last line in two identical runs.

With autotuning off, `num_parallel_calls=tf.data.AUTOTUNE` runs one call per core and
`prefetch(tf.data.AUTOTUNE)` grows its buffer while the consumer waits, which is what the
autotuner settles on for input pipelines as light as ours beside a model step. Measured (same
EPYC, one core, batch 32 of 128 tokens, the two variants interleaved): bert_mini's pretraining
input alone gives 1,466 batches/s without the autotuner against 1,558 with it (modernbert_mini's:
1,242 against 1,309), several hundred times what a training step on that core consumes.

Example:
  >>> dataset = without_autotune(task.build_inputs(params.task.train_data))
  >>> dataset.options().autotune.enabled
  False
"""

import tensorflow as tf


def without_autotune(dataset: tf.data.Dataset) -> tf.data.Dataset:
  """`dataset` with tf.data's autotuner off (see the module docstring for why).

  Args:
    dataset: any `tf.data.Dataset`; options it already has are kept.

  Returns:
    The same elements, from a dataset whose iterators delete at once.
  """
  options = tf.data.Options()
  options.autotune.enabled = False
  return dataset.with_options(options)
