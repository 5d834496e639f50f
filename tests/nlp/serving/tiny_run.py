"""Tiny runs for tests: a pretraining model_dir laid out by the real trainer (`params.yaml`,
`ckpt-N`, `vocab.txt`), the tiny corpus's records, and a run trained on them by `api.train`.

`make_tiny_run`: the trainer's own objects (`trainer_lib.Trainer`: model, optimizer with its
slots, checkpoint manager) save a checkpoint of randomly perturbed weights: the layout of a
training run without the cost of tracing a train step. `make_trained_run`: 4 real steps and an
evaluation (tests/nlp/tasks/test_pretraining_end_to_end.py covers longer training).

`encoder='bert'` (the default): a 2-layer BERT with a next-sentence head; `encoder='modernbert'`: a
3-layer ModernBERT (layer 0 global, layers 1-2 in an 8-token window), masked LM only, as
configs/pretraining/modernbert_*.yaml. Their sizes are tests/testing.py's `TINY_ENCODERS`.

Tests take these runs from the session's fixtures (tests/conftest.py: `bert_run`,
`modernbert_run`, `trained_bert_run`, ...; tests/nlp/tiny_runs.py builds them once), not from
these builders.
"""

import os
from typing import Any, Dict, List, Sequence, Tuple

import numpy as np
import tensorflow as tf

from official.common import registry_imports  # pylint: disable=unused-import  # noqa: F401  (registers the experiments)
from official.core import task_factory
from official.core import train_utils
from official.core import trainer as trainer_lib
from official.nlp.data import create_pretraining_data
from tests import testing
from tests.paths import ROOT

WORDS = ['paris', 'is', 'the', 'capital', 'of', 'france', 'a', 'city', '.', 'return', 'copy',
         'list', 'new', 'object', 'file', 'default', 'none']
VOCAB = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'] + WORDS
SEQ_LENGTH = 16
# The tiny encoders' sizes (`task.model.encoder.<type>` fields besides vocab_size).
ENCODER_SIZES = testing.TINY_ENCODERS
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


def shared_run(tmp_path_factory, encoder: str = 'bert') -> Dict[str, str]:
  """The session's tiny run of `encoder` and its SavedModel export (`paths['export_dir']`): the
  `bert_run`/`modernbert_run` fixtures' dict, for code that has `tmp_path_factory` at hand.

  Tests must not change these directories: copy them first (the `copy_run` fixture).
  """
  # Function-level: tiny_runs builds its runs with this module's functions.
  from tests.nlp import tiny_runs  # pylint: disable=g-import-not-at-top
  return dict(tiny_runs.TinyRuns.of_session(tmp_path_factory).exported(encoder))


# ---- The tiny corpus, its records, and runs trained on them.

SENTENCES = ['Paris is the capital of France.', 'A city is a new object.',
             'Return a copy of the list.', 'The default file is None.']
# round(0.3 x SEQ_LENGTH): the most the modern recipe's 30% budget masks in a row.
PACKED_PREDICTIONS = round(0.3 * SEQ_LENGTH)
BERT_YAML = os.path.join(ROOT, 'configs', 'pretraining', 'bert_tiny.yaml')
MODERNBERT_YAML = os.path.join(ROOT, 'configs', 'pretraining', 'modernbert_tiny.yaml')


def _write_corpus(directory, name: str) -> str:
  corpus = os.path.join(str(directory), f'{name}.txt')
  with open(corpus, 'w', encoding='utf-8') as f:
    f.write('\n\n'.join(' '.join(SENTENCES[i:] + SENTENCES[:i]) for i in range(4)) + '\n')
  return corpus


def _write_vocab(directory, vocab: Sequence[str], name: str) -> str:
  vocab_file = os.path.join(str(directory), f'{name}_vocab.txt')
  with open(vocab_file, 'w', encoding='utf-8') as f:
    f.write('\n'.join(vocab) + '\n')
  return vocab_file


def write_records(directory, vocab: Sequence[str] = tuple(VOCAB), do_lower_case: bool = True,
                  name: str = 'train') -> Tuple[str, str]:
  """Pretraining records (and metadata) of the tiny corpus, each document the four `SENTENCES`
  rotated; returns `(record path, vocab file)`: `<directory>/data/<name>.tfrecord` and
  `<directory>/<name>_vocab.txt`.

  Example:
    >>> records, vocab_file = write_records(tmp_path, do_lower_case=False)
  """
  os.makedirs(str(directory), exist_ok=True)
  vocab_file = _write_vocab(directory, list(vocab), name)
  path = os.path.join(str(directory), 'data', f'{name}.tfrecord')
  create_pretraining_data.create_pretraining_data(
      _write_corpus(directory, name), path, vocab_file=vocab_file, do_lower_case=do_lower_case,
      max_seq_length=SEQ_LENGTH, max_predictions_per_seq=3, dupe_factor=2)
  return path, vocab_file


def write_packed_records(directory) -> Tuple[str, str]:
  """Records of the modern recipe (`--pack --masked_lm_prob=0.3`) of the same corpus; returns
  `(record path, vocab file)`: `<directory>/data/packed.tfrecord` and `<directory>/vocab.txt`."""
  os.makedirs(str(directory), exist_ok=True)
  vocab_file = os.path.join(str(directory), 'vocab.txt')
  with open(vocab_file, 'w', encoding='utf-8') as f:
    f.write('\n'.join(VOCAB) + '\n')
  path = os.path.join(str(directory), 'data', 'packed.tfrecord')
  create_pretraining_data.create_pretraining_data(
      _write_corpus(directory, 'corpus'), path, vocab_file=vocab_file,
      max_seq_length=SEQ_LENGTH, max_predictions_per_seq=PACKED_PREDICTIONS,
      masked_lm_prob=0.3, dupe_factor=2, pack=True)
  return path, vocab_file


def trained_run_overrides(records: str, encoder: str = 'bert') -> Dict[str, Any]:
  """`api.load_config` overrides of the tiny trained run of `encoder` on `records` (on top of
  `BERT_YAML` or `MODERNBERT_YAML`): the tiny sizes, 2 steps a loop, no distribution."""
  predictions = 3 if encoder == 'bert' else PACKED_PREDICTIONS
  return {f'task.model.encoder.{encoder}': encoder_config(encoder)[encoder],
          'task.train_data.input_path': records, 'task.validation_data.input_path': records,
          'task.train_data.seq_length': SEQ_LENGTH, 'task.validation_data.seq_length': SEQ_LENGTH,
          'task.train_data.max_predictions_per_seq': predictions,
          'task.validation_data.max_predictions_per_seq': predictions,
          'task.train_data.global_batch_size': 4, 'task.validation_data.global_batch_size': 4,
          'trainer.steps_per_loop': 2, 'trainer.summary_interval': 2,
          'trainer.checkpoint_interval': 2, 'trainer.validation_steps': 2,
          'runtime.distribution_strategy': 'off'}


def trained_run_params(records: str, encoder: str = 'bert'):
  """The experiment config of the tiny trained run of `encoder` on `records`."""
  # Function-level: the API module is only needed by the trained runs.
  from official.nlp import api  # pylint: disable=g-import-not-at-top
  yaml = BERT_YAML if encoder == 'bert' else MODERNBERT_YAML
  return api.load_config(yaml, overrides=trained_run_overrides(records, encoder))


def make_trained_run(model_dir: str, records: str, encoder: str = 'bert', steps: int = 4):
  """Trains the tiny `encoder` `steps` steps on `records` with `api.train`, then evaluates.

  Returns:
    `(params, api.TrainResult)`.
  """
  # Function-level: the API module is only needed by the trained runs.
  from official.nlp import api  # pylint: disable=g-import-not-at-top
  params = trained_run_params(records, encoder)
  return params, api.train(params, model_dir, steps=steps)


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
