"""End to end: text -> our TFRecords -> `train.py` (bert/pretraining) -> checkpoint -> eval.

`train.py` runs in this process (tests/cli.py: its flags parsed as `app.run` does, its exit code
and stderr captured), as `python -m official.nlp.train` would run it.
"""

import numpy as np
import pytest

from official.nlp import train as train_py
from official.nlp.data import create_pretraining_data
from official.nlp.tools import training_curves
from tests import testing
from tests.cli import run_app
from tests.paths import ROOT

TINY_YAML = f'{ROOT}/configs/pretraining/bert_tiny.yaml'

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
  # Wider than TINY_BERT (hidden 32): 300 steps must learn the corpus's order.
  overrides = ','.join(testing.tiny_overrides(
      vocab_size=vocab_size, hidden_size=32, intermediate_size=64, max_position_embeddings=16) + [
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
  result = run_app(train_py.main, [
      'train', '--experiment=bert/pretraining', f'--config_file={TINY_YAML}',
      '--mode=train_and_eval', f'--model_dir={model_dir}', f'--params_override={overrides}'])
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
  bad = run_app(train_py.main, [
      'train', '--experiment=bert/pretraining', f'--config_file={TINY_YAML}', '--mode=train',
      f'--model_dir={tmp_path / "bad"}',
      f'--params_override={overrides},task.train_data.seq_length=32,'
      'task.model.encoder.bert.max_position_embeddings=32'])
  assert bad.returncode != 0
  assert ('task.train_data.seq_length is 32 in params_override but the records were written with '
          'max_seq_length=16') in bad.stderr
  assert not (tmp_path / 'bad').exists()  # refused before the model_dir was made
  assert 'Traceback' not in bad.stderr
  too_long = run_app(train_py.main, [
      'train', '--experiment=bert/pretraining', f'--config_file={TINY_YAML}', '--mode=train',
      f'--model_dir={tmp_path / "bad"}',
      f'--params_override={overrides},task.model.encoder.bert.max_position_embeddings=8'])
  assert too_long.returncode == 1
  # The records' sequence length (16, from their metadata) against the model's positions.
  assert ('task.train_data.seq_length: 16 exceeds model.encoder.bert.max_position_embeddings=8'
          in too_long.stderr)
