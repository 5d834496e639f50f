"""A tiny pretraining model_dir laid out by the real trainer: `params.yaml`, `ckpt-N`, `vocab.txt`.

The trainer's own objects (`trainer_lib.Trainer`: model, optimizer with its slots, checkpoint manager)
save a checkpoint of randomly perturbed weights: the layout of a training run without the cost of
tracing a train step (tests/nlp/tasks/test_pretraining_end_to_end.py covers real training).

`encoder='bert'` (the default): a 2-layer BERT with a next-sentence head; `encoder='modernbert'`: a
3-layer ModernBERT (layer 0 global, layers 1-2 in an 8-token window), masked LM only, as
configs/pretraining/modernbert_*.yaml.
"""

import os
from typing import Any, Dict, List

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
# The tiny encoders' sizes (`task.model.encoder.<type>` fields besides vocab_size).
ENCODER_SIZES = {
    'bert': dict(hidden_size=16, intermediate_size=32, num_layers=2, num_attention_heads=2,
                 max_position_embeddings=32),
    'modernbert': dict(hidden_size=32, intermediate_size=48, num_layers=3, num_attention_heads=2,
                       local_attention=8, max_position_embeddings=32),
}
ENCODERS = tuple(ENCODER_SIZES)


def encoder_config(encoder: str = 'bert', vocab_size: int = len(VOCAB)) -> Dict[str, Any]:
  """The tiny run's `task.model.encoder` block, for a fine-tuning task that loads its checkpoint.

  Example:
    >>> params.override({'task': {'model': {'encoder': encoder_config('modernbert')}}})
  """
  if encoder not in ENCODER_SIZES:
    raise ValueError(f'tiny_run encoder must be one of {ENCODERS}, found {encoder!r}')
  return {'type': encoder, encoder: dict(ENCODER_SIZES[encoder], vocab_size=vocab_size)}


def _encoder_overrides(encoder: str, vocab_size: int) -> List[str]:
  fields = encoder_config(encoder, vocab_size)[encoder]
  lines = [f'task.model.encoder.type={encoder}']
  lines += [f'task.model.encoder.{encoder}.{name}={value}' for name, value in fields.items()]
  if encoder == 'bert':
    return lines + ['task.model.cls_heads=[{name: next_sentence, num_classes: 2, inner_dim: 16}]']
  # ModernBERT's recipe: masked LM only.
  return lines + ['task.model.cls_heads=[]', 'task.train_data.use_next_sentence_label=false',
                  'task.validation_data.use_next_sentence_label=false']


def overrides(vocab_size: int = len(VOCAB), train_steps: int = 2, encoder: str = 'bert') -> str:
  """`--params_override` text of the tiny run (`encoder`: 'bert' or 'modernbert')."""
  return ','.join(_encoder_overrides(encoder, vocab_size) + [
      'task.train_data.input_path=dummy', f'task.train_data.seq_length={SEQ_LENGTH}',
      'task.train_data.max_predictions_per_seq=3', 'task.train_data.global_batch_size=4',
      f'task.validation_data.seq_length={SEQ_LENGTH}',
      'task.validation_data.max_predictions_per_seq=3',
      f'trainer.train_steps={train_steps}', f'trainer.steps_per_loop={train_steps}',
      f'trainer.checkpoint_interval={train_steps}', f'trainer.summary_interval={train_steps}',
      'runtime.distribution_strategy=off', 'runtime.enable_xla=false',
  ])


def make_tiny_run(model_dir: str, step: int = 2, encoder: str = 'bert') -> Dict[str, str]:
  """Writes a tiny pretraining model_dir whose latest checkpoint is `ckpt-<step>`.

  Args:
    model_dir: created.
    step: the global step (and checkpoint number) saved.
    encoder: 'bert' or 'modernbert'.

  Returns:
    `{'model_dir', 'checkpoint', 'vocab_file'}`: the vocabulary is written next to `model_dir`
    and copied into it as `vocab.txt`.
  """
  params = train_utils.build_params('bert/pretraining', (),
                                   overrides(train_steps=step, encoder=encoder))
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


def shared_run(tmp_path_factory, encoder: str = 'bert') -> Dict[str, str]:
  """One tiny run (and its SavedModel export, `paths['export_dir']`) per encoder and session.

  Tests must not change these directories: copy them first (`shutil.copytree`).
  """
  if encoder not in _SHARED:
    # pylint: disable=g-import-not-at-top
    from official.nlp.serving import export_savedmodel
    base = tmp_path_factory.mktemp(f'tiny_run_{encoder}')
    paths = make_tiny_run(str(base / 'model'), encoder=encoder)
    paths['export_dir'] = export_savedmodel.export_from_model_dir(paths['model_dir'],
                                                                  str(base / 'export'))
    _SHARED[encoder] = paths
  return dict(_SHARED[encoder])


def encoder_weights(model_dir: str) -> Dict[str, np.ndarray]:
  """The pretrained encoder's variables of a tiny run's latest checkpoint, by variable name."""
  # pylint: disable=g-import-not-at-top
  from official.nlp.serving import inference
  _, model, _ = inference.restore_model(model_dir)
  return {v.name: v.numpy() for v in model.encoder_network.weights}


def assert_weights(encoder, weights: Dict[str, np.ndarray]) -> None:
  """Asserts that every variable of `encoder` holds `weights[its name]` (and no name is missing).

  Example:
    >>> assert_weights(classifier.checkpoint_items['encoder'], encoder_weights(run['model_dir']))
  """
  found = {v.name: v.numpy() for v in encoder.weights}
  assert len(found) == len(encoder.weights), 'variable names repeat'
  assert sorted(found) == sorted(weights)
  for name, value in weights.items():
    np.testing.assert_array_equal(found[name], value, err_msg=name)
