"""SIGKILL a deterministic BERT pretraining run at 2 random steps, resume each time, and compare its
final checkpoint with an uninterrupted run's (scripts/chaos_train.py): every entry must be equal."""

import importlib.util
import os
import random
import sys

import pytest

from tests import cli
from tests.nlp.tasks.test_pretraining_end_to_end import _write_corpus_and_records
from tests.paths import ROOT
from tests.processes import subprocess_env

_spec = importlib.util.spec_from_file_location('chaos_train_under_test',
                                               os.path.join(ROOT, 'scripts', 'chaos_train.py'))
chaos_train = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(chaos_train)


@pytest.mark.slow
def test_killed_and_resumed_run_ends_with_the_uninterrupted_weights(tmp_path, monkeypatch):
  paths, vocab_size = _write_corpus_and_records(tmp_path)
  overrides = ','.join([
      f'task.model.encoder.bert.vocab_size={vocab_size}', 'task.model.encoder.bert.hidden_size=16',
      'task.model.encoder.bert.intermediate_size=32', 'task.model.encoder.bert.num_layers=2',
      'task.model.encoder.bert.num_attention_heads=2',
      'task.model.encoder.bert.max_position_embeddings=16',
      'task.model.cls_heads=[{name: next_sentence, num_classes: 2, inner_dim: 16}]',
      f'task.train_data.input_path={paths["train"]}', 'task.train_data.seq_length=16',
      'task.train_data.max_predictions_per_seq=3', 'task.train_data.global_batch_size=8',
      f'task.validation_data.input_path={paths["eval"]}', 'task.validation_data.seq_length=16',
      'task.validation_data.max_predictions_per_seq=3',
      'trainer.train_steps=36', 'trainer.steps_per_loop=1', 'trainer.summary_interval=10',
      'trainer.checkpoint_interval=3', 'runtime.distribution_strategy=one_device',
      'runtime.enable_xla=false', 'runtime.deterministic=true'])
  seed = random.randrange(1 << 30)
  # The supervisor runs in this process; the runs it kills and resumes are real child processes.
  for name, value in subprocess_env().items():
    monkeypatch.setenv(name, value)
  result = cli.call_main(chaos_train.main, [
      '--kills', '2', '--seed', str(seed), '--work_dir', str(tmp_path / 'chaos'), '--',
      sys.executable, '-m', 'official.nlp.train', '--experiment=bert/pretraining',
      f'--config_file={ROOT}/configs/pretraining/bert_tiny.yaml', '--mode=train',
      f'--params_override={overrides}'])
  print(result.stdout)
  assert result.returncode == 0, f'seed {seed}: {result.stdout[-3000:]}'
  assert result.stdout.count('SIGKILL after step') == 2
  assert 'OK' in result.stdout and 'equals the uninterrupted run' in result.stdout
