"""A tiny pretraining model_dir laid out by the real trainer: `params.yaml`, `ckpt-N`, `vocab.txt`.

The trainer's own objects (`trainer_lib.Trainer`: model, optimizer with its slots, checkpoint manager)
save a checkpoint of randomly perturbed weights: the layout of a training run without the cost of
tracing a train step (tests/nlp/tasks/test_pretraining_end_to_end.py covers real training).
"""

import os
from typing import Dict

import numpy as np
import tensorflow as tf

from official.common import registry_imports  # pylint: disable=unused-import
from official.core import task_factory
from official.core import train_utils
from official.core import trainer as trainer_lib

WORDS = ['paris', 'is', 'the', 'capital', 'of', 'france', 'a', 'city', '.', 'return', 'copy',
         'list', 'new', 'object', 'file', 'default', 'none']
VOCAB = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'] + WORDS
SEQ_LENGTH = 16


def overrides(vocab_size: int = len(VOCAB), train_steps: int = 2) -> str:
  return ','.join([
      f'task.model.encoder.bert.vocab_size={vocab_size}', 'task.model.encoder.bert.hidden_size=16',
      'task.model.encoder.bert.intermediate_size=32', 'task.model.encoder.bert.num_layers=2',
      'task.model.encoder.bert.num_attention_heads=2',
      'task.model.encoder.bert.max_position_embeddings=32',
      'task.model.cls_heads=[{name: next_sentence, num_classes: 2, inner_dim: 16}]',
      'task.train_data.input_path=dummy', f'task.train_data.seq_length={SEQ_LENGTH}',
      'task.train_data.max_predictions_per_seq=3', 'task.train_data.global_batch_size=4',
      f'task.validation_data.seq_length={SEQ_LENGTH}',
      'task.validation_data.max_predictions_per_seq=3',
      f'trainer.train_steps={train_steps}', f'trainer.steps_per_loop={train_steps}',
      f'trainer.checkpoint_interval={train_steps}', f'trainer.summary_interval={train_steps}',
      'runtime.distribution_strategy=off', 'runtime.enable_xla=false',
  ])


def make_tiny_run(model_dir: str, step: int = 2) -> Dict[str, str]:
  """Writes a tiny pretraining model_dir whose latest checkpoint is `ckpt-<step>`.

  Args:
    model_dir: created.
    step: the global step (and checkpoint number) saved.

  Returns:
    `{'model_dir', 'checkpoint', 'vocab_file'}`: the vocabulary is written next to `model_dir`
    and copied into it as `vocab.txt`.
  """
  params = train_utils.build_params('bert/pretraining', (), overrides(train_steps=step))
  task = task_factory.get_task(params.task, logging_dir=model_dir)
  train_utils.write_params(params, model_dir)
  trainer = trainer_lib.Trainer(tf.distribute.get_strategy(), task, params, model_dir, train=False)
  rng = np.random.default_rng(0)
  for variable in trainer.model.variables:  # away from the initializers (zero biases, unit norms)
    variable.assign(variable.numpy() + rng.normal(0, 0.05, variable.shape).astype(np.float32))
  trainer.global_step.assign(step)
  trainer.manager.save(checkpoint_number=step)
  vocab_file = os.path.join(os.path.dirname(model_dir.rstrip('/')), 'tiny_vocab.txt')
  with open(vocab_file, 'w', encoding='utf-8') as f:
    f.write('\n'.join(VOCAB) + '\n')
  tf.io.gfile.copy(vocab_file, os.path.join(model_dir, 'vocab.txt'), overwrite=True)
  return {'model_dir': model_dir, 'checkpoint': tf.train.latest_checkpoint(model_dir),
          'vocab_file': vocab_file}


_SHARED: Dict[str, Dict[str, str]] = {}


def shared_run(tmp_path_factory) -> Dict[str, str]:
  """One tiny run (and its SavedModel export, `paths['export_dir']`) per pytest session.

  Tests must not change these directories: copy them first (`shutil.copytree`).
  """
  if 'run' not in _SHARED:
    # pylint: disable=g-import-not-at-top
    from official.nlp.serving import export_savedmodel
    base = tmp_path_factory.mktemp('tiny_run')
    paths = make_tiny_run(str(base / 'model'))
    paths['export_dir'] = export_savedmodel.export_from_model_dir(paths['model_dir'],
                                                                  str(base / 'export'))
    _SHARED['run'] = paths
  return dict(_SHARED['run'])
