"""How-to, example 2: pretrain with the Task API and a custom training loop.

The how-to's code as printed (only the model size and the record paths are flags): a
`MaskedLMConfig` with the encoder in `bert.EncoderConfig(...)` keyword form (Hugging Face names)
and the data in `masked_lm.cfg.DataConfig(...)` with pretraining fields (a
`BertPretrainDataConfig`), the task from `task_factory`, a Keras Adam optimizer, and a
`tf.function` step around `task.train_step`; it prints the loss of every step.

Without `--train_path` the records are made first (`examples/howto_common.py`).

Usage:
  python examples/howto_custom_loop.py [--train_path=train.tfrecord] \
      [--validation_path=validation.tfrecord] [--vocab_size=1000] [--steps=40] \
      [--hidden_size=128] [--num_layers=2] [--num_heads=2] [--intermediate_size=512]
"""

import argparse
import os
import sys
from typing import Optional, Sequence

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from official.common import quiet  # pylint: disable=g-import-not-at-top,wrong-import-position
quiet.quiet_cli(__name__)  # hides TensorFlow's start-up lines (--verbose keeps them)

import tensorflow as tf  # pylint: disable=g-import-not-at-top,wrong-import-position
import tf_keras  # pylint: disable=g-import-not-at-top,wrong-import-position

from examples import howto_common  # pylint: disable=wrong-import-position
from official.core import task_factory  # pylint: disable=wrong-import-position
from official.nlp.configs import bert  # pylint: disable=wrong-import-position
from official.nlp.tasks import masked_lm  # pylint: disable=wrong-import-position


def build_config(args: argparse.Namespace) -> masked_lm.MaskedLMConfig:
  """The how-to's task config (sizes and paths from the flags); example 3 uses it too."""
  # The how-to's config, as printed:
  return masked_lm.MaskedLMConfig(
      model=bert.PretrainerConfig(
          encoder=bert.EncoderConfig(
              vocab_size=args.vocab_size,
              hidden_size=args.hidden_size,
              num_hidden_layers=args.num_layers,
              num_attention_heads=args.num_heads,
              intermediate_size=args.intermediate_size),
          mlm_activation='gelu',
          mlm_initializer_range=0.02),
      train_data=masked_lm.cfg.DataConfig(
          input_path=args.train_path,
          global_batch_size=args.global_batch_size,
          seq_length=args.seq_length,
          max_predictions_per_seq=args.max_predictions_per_seq),
      validation_data=masked_lm.cfg.DataConfig(
          input_path=args.validation_path,
          global_batch_size=args.global_batch_size,
          seq_length=args.seq_length,
          max_predictions_per_seq=args.max_predictions_per_seq))


def main(argv: Optional[Sequence[str]] = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  howto_common.add_size_flags(parser)
  howto_common.add_data_flags(parser)
  parser.add_argument('--steps', type=int, default=40, help='training steps')
  parser.add_argument('--learning_rate', type=float, default=1e-3)
  args = parser.parse_args(argv)
  howto_common.resolve_records(args)

  # --- the how-to's code (sizes and paths from the flags) ---
  config = build_config(args)

  task = task_factory.get_task(masked_lm.MaskedLMTask, config)
  model = task.build_model()
  optimizer = tf_keras.optimizers.Adam(learning_rate=args.learning_rate)

  @tf.function
  def train_step(batch):
    metrics = task.build_metrics(training=True)
    return task.train_step(batch, model, optimizer, metrics)

  train_ds = task.build_inputs(config.train_data)
  for step, batch in enumerate(train_ds.take(args.steps)):
    logs = train_step(batch)
    print(f"step {step + 1}: loss {logs['loss'].numpy():.4f}")
  # --- end of the how-to's code ---
  return 0


if __name__ == '__main__':
  sys.exit(main())
