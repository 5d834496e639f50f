"""End to end: text -> our TFRecords -> `train.py --experiment=bert/pretraining` -> checkpoint -> eval."""

import subprocess
import sys

import numpy as np
import pytest

from official.nlp.data import create_pretraining_data
from official.nlp.tools import training_curves
from tests.paths import ROOT
from tests.processes import subprocess_env

WORDS = [f'w{i}' for i in range(24)]


def _write_corpus_and_records(tmp_path):
  """A corpus whose sentences walk the word list in order, so masked words are predictable."""
  vocab = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'] + WORDS
  vocab_file = tmp_path / 'vocab.txt'
  vocab_file.write_text('\n'.join(vocab) + '\n')
  rng = np.random.default_rng(0)
  documents = []
  for _ in range(60):
    sentences = []
    for _ in range(4):
      start = int(rng.integers(0, len(WORDS)))
      sentences.append(' '.join(WORDS[(start + k) % len(WORDS)] for k in range(6)))
    documents.append('\n'.join(sentences))
  paths = {}
  for split, docs in (('train', documents[:50]), ('eval', documents[50:])):
    text = tmp_path / f'{split}.txt'
    text.write_text('\n\n'.join(docs) + '\n')
    output = tmp_path / f'{split}.tfrecord'
    create_pretraining_data.create_pretraining_data(
        str(text), str(output), str(vocab_file), max_seq_length=16, max_predictions_per_seq=3,
        dupe_factor=4, num_workers=1)
    paths[split] = str(output)
  return paths, len(vocab)


@pytest.mark.slow
def test_train_and_eval_from_our_records(tmp_path):
  paths, vocab_size = _write_corpus_and_records(tmp_path)
  model_dir = tmp_path / 'model'
  overrides = ','.join([
      f'task.model.encoder.bert.vocab_size={vocab_size}', 'task.model.encoder.bert.hidden_size=32',
      'task.model.encoder.bert.intermediate_size=64', 'task.model.encoder.bert.num_layers=2',
      'task.model.encoder.bert.num_attention_heads=2',
      'task.model.encoder.bert.max_position_embeddings=16',
      'task.model.cls_heads=[{name: next_sentence, num_classes: 2, inner_dim: 32}]',
      f'task.train_data.input_path={paths["train"]}', 'task.train_data.seq_length=16',
      'task.train_data.max_predictions_per_seq=3', 'task.train_data.global_batch_size=16',
      f'task.validation_data.input_path={paths["eval"]}', 'task.validation_data.seq_length=16',
      'task.validation_data.max_predictions_per_seq=3',
      'task.validation_data.global_batch_size=16',
      'trainer.train_steps=300', 'trainer.steps_per_loop=100', 'trainer.summary_interval=100',
      'trainer.checkpoint_interval=100', 'trainer.validation_interval=300',
      'trainer.validation_steps=4',
      'trainer.optimizer_config.learning_rate.polynomial.initial_learning_rate=3e-3',
      'trainer.optimizer_config.learning_rate.polynomial.decay_steps=300',
      'trainer.optimizer_config.warmup.polynomial.warmup_steps=10',
      'runtime.distribution_strategy=one_device', 'runtime.enable_xla=false',
  ])
  env = subprocess_env()
  result = subprocess.run(
      [sys.executable, '-m', 'official.nlp.train', '--experiment=bert/pretraining',
       f'--config_file={ROOT}/configs/pretraining/bert_tiny.yaml', '--mode=train_and_eval',
       f'--model_dir={model_dir}', f'--params_override={overrides}'],
      cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
  assert result.returncode == 0, result.stderr[-3000:]
  assert (model_dir / 'params.yaml').exists()
  assert (model_dir / 'ckpt-300.index').exists()
  train = training_curves.read_scalars(str(model_dir / 'train'))
  losses = [value for _, value in train['training_loss']]
  assert len(losses) == 3 and losses[-1] < losses[0] - 0.5, losses
  validation = training_curves.read_scalars(str(model_dir / 'validation'))
  for tag in ('masked_lm_accuracy', 'lm_example_loss', 'next_sentence_accuracy',
              'next_sentence_loss', 'masked_lm_perplexity'):
    assert validation[tag], tag
  step, accuracy = validation['masked_lm_accuracy'][-1]
  assert step == 300
  assert accuracy > 0.1  # chance is 1/29
  # Mismatched data config: refused before step 0 with both values named.
  bad = subprocess.run(
      [sys.executable, '-m', 'official.nlp.train', '--experiment=bert/pretraining',
       f'--config_file={ROOT}/configs/pretraining/bert_tiny.yaml', '--mode=train',
       f'--model_dir={tmp_path / "bad"}',
       f'--params_override={overrides},task.train_data.seq_length=32,'
       'task.model.encoder.bert.max_position_embeddings=32'],
      cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
  assert bad.returncode != 0
  assert 'seq_length is 32 in the config but the records were written with max_seq_length=16' in (
      bad.stderr)
  assert 'Traceback' not in bad.stderr
  too_long = subprocess.run(
      [sys.executable, '-m', 'official.nlp.train', '--experiment=bert/pretraining',
       f'--config_file={ROOT}/configs/pretraining/bert_tiny.yaml', '--mode=train',
       f'--model_dir={tmp_path / "bad"}', f'--params_override={overrides},'
       'task.train_data.seq_length=32'],
      cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
  assert too_long.returncode == 1
  assert ('task.train_data.seq_length: 32 exceeds model.encoder.bert.max_position_embeddings=16'
          in too_long.stderr)
