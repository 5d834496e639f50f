"""How-to, example 3: pretrain with Keras `compile`/`fit`, the task supplying loss and metrics.

The how-to's code as printed (only the model size and the record paths are flags): the config and
model of example 2, then `model.compile(optimizer=...)` without a loss, so that `fit` trains the
task's masked-LM loss and reports its metrics (`masked_lm_accuracy`, `lm_example_loss`, ...) for
training and validation. The last lines print the per-epoch history.

Without `--train_path` the records are made first (`examples/howto_common.py`).

Usage:
  python examples/howto_keras_fit.py [--train_path=train.tfrecord] \
      [--validation_path=validation.tfrecord] [--vocab_size=1000] [--epochs=5] \
      [--steps_per_epoch=8] [--validation_steps=2] [--hidden_size=128] [--num_layers=2] \
      [--num_heads=2] [--intermediate_size=512]
"""

import argparse
import os
import sys
from typing import Optional, Sequence

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from official.common import quiet  # pylint: disable=g-import-not-at-top,wrong-import-position
quiet.quiet_cli(__name__)  # hides TensorFlow's start-up lines (--verbose keeps them)

import tf_keras  # pylint: disable=g-import-not-at-top,wrong-import-position

from examples import howto_common  # pylint: disable=wrong-import-position
from examples import howto_custom_loop  # pylint: disable=wrong-import-position
from official.core import task_factory  # pylint: disable=wrong-import-position
from official.nlp.tasks import masked_lm  # pylint: disable=wrong-import-position


def main(argv: Optional[Sequence[str]] = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  howto_common.add_size_flags(parser)
  howto_common.add_data_flags(parser)
  parser.add_argument('--epochs', type=int, default=5)
  parser.add_argument('--steps_per_epoch', type=int, default=8)
  parser.add_argument('--validation_steps', type=int, default=2)
  parser.add_argument('--learning_rate', type=float, default=1e-3)
  args = parser.parse_args(argv)
  howto_common.resolve_records(args)

  # --- the how-to's code (sizes and paths from the flags) ---
  config = howto_custom_loop.build_config(args)  # the same config as example 2

  task = task_factory.get_task(masked_lm.MaskedLMTask, config)
  model = task.build_model()
  optimizer = tf_keras.optimizers.Adam(learning_rate=args.learning_rate)

  train_ds = task.build_inputs(config.train_data)
  val_ds = task.build_inputs(config.validation_data)
  model.compile(optimizer=optimizer)
  history = model.fit(
      train_ds,
      validation_data=val_ds,
      epochs=args.epochs,
      steps_per_epoch=args.steps_per_epoch,
      validation_steps=args.validation_steps)
  # --- end of the how-to's code ---

  for epoch in range(len(history.history['loss'])):
    print(f'epoch {epoch + 1}: ' + ', '.join(
        f'{name} {values[epoch]:.4f}' for name, values in history.history.items()))
  return 0


if __name__ == '__main__':
  sys.exit(main())
