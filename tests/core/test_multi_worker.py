"""Two local worker processes (MultiWorkerMirroredStrategy on 127.0.0.1) started by
scripts/launch_local_multiworker.py: equivalence with one process, chief-only files, preemption."""

import os
import re
import signal
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from tests.core import toy_task
from tests.paths import ROOT
from tests.processes import HANG_SECONDS
from tests.processes import LineReader
from tests.processes import subprocess_env

LAUNCHER = os.path.join(ROOT, 'scripts', 'launch_local_multiworker.py')


def launch_command(model_dir, *overrides, mode='train_and_eval', timeout=HANG_SECONDS):
  """The launcher's command for two workers of the toy experiment; the launcher kills them after
  `timeout` seconds (a hang guard: a worker waiting for a dead peer never ends)."""
  override = ','.join(overrides)
  return [sys.executable, LAUNCHER, '--num_workers', '2', '--timeout', str(timeout), '--',
          sys.executable, '-m', 'official.nlp.train', *toy_task.TOY, f'--model_dir={model_dir}',
          f'--mode={mode}'] + ([f'--params_override={override}'] if override else [])


def _kernel(model_dir):
  reader = tf.train.load_checkpoint(str(model_dir))
  name = [n for n in reader.get_variable_to_shape_map()
          if n.startswith('model/') and 'kernel' in n and 'OPTIMIZER' not in n][0]
  return reader.get_tensor(name)


@pytest.mark.slow
def test_two_workers_match_one_process_and_only_the_chief_writes(tmp_path, toy_reference_run):
  result = subprocess.run(launch_command(tmp_path / 'two'), cwd=ROOT, env=subprocess_env(),
                          capture_output=True, text=True, timeout=HANG_SECONDS + 60, check=False)
  assert result.returncode == 0, result.stdout[-3000:]
  evals = re.findall(r'^\[worker (\d)\] eval at step 20: validation_loss ([\d.]+), '
                     r'mean_absolute_error ([\d.]+)', result.stdout, re.M)
  assert sorted(w for w, *_ in evals) == ['0', '1']
  # Only the chief (worker 0) keeps files: one event file per summary dir, checkpoints in model_dir.
  assert len(os.listdir(tmp_path / 'two' / 'train')) == 1
  assert len(os.listdir(tmp_path / 'two' / 'validation')) == 1
  state = tf.train.get_checkpoint_state(str(tmp_path / 'two'))
  assert [os.path.basename(p) for p in state.all_model_checkpoint_paths] == [
      'ckpt-5', 'ckpt-10', 'ckpt-15', 'ckpt-20']
  # One process with the same global batch (8): the same weights and evaluation.
  logs = toy_reference_run['logs']
  np.testing.assert_allclose(_kernel(tmp_path / 'two'), toy_reference_run['kernel'].reshape(-1, 1),
                             rtol=1e-5)
  for _, loss, mae in evals:
    np.testing.assert_allclose([float(loss), float(mae)],
                               [logs['validation_loss'], logs['mean_absolute_error']], rtol=1e-3)


@pytest.mark.slow
def test_sigterm_to_one_worker_saves_on_all_and_exits_0(tmp_path):
  # The test waits for events (a step line, the exit), not for a time; the launcher's timeout
  # (two hang guards: one to start, one to stop) only ends a hang.
  process = subprocess.Popen(
      launch_command(tmp_path, 'trainer.train_steps=10000000', 'trainer.steps_per_loop=200',
                      'trainer.checkpoint_interval=10000000', mode='train',
                      timeout=2 * HANG_SECONDS),
      cwd=ROOT, env=subprocess_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
  lines = LineReader(process.stdout)
  try:
    pids = lines.wait_for(r'pids (\d+), (\d+)').groups()
    lines.wait_for(r'\[worker 1\] .*\] step \d+/')  # both workers are training
    os.kill(int(pids[1]), signal.SIGTERM)  # the non-chief worker is preempted
    process.wait(timeout=HANG_SECONDS)  # the launcher exits on its own once both workers did
  finally:
    if process.poll() is None:
      # SIGTERM is passed on to the workers (a killed launcher would leave them running); a
      # launcher still waiting for them kills them at its own timeout.
      process.terminate()
      try:
        process.wait(timeout=60)
      except subprocess.TimeoutExpired:
        pass
  output = lines.text()
  assert process.returncode == 0, output[-3000:]
  saved = re.findall(r'^\[worker (\d)\] .*\] SIGTERM \(preemption\) on a worker: all workers '
                     r'saved a checkpoint at step (\d+)', output, re.M)
  assert sorted(w for w, _ in saved) == ['0', '1'] and saved[0][1] == saved[1][1]
  step = int(saved[0][1])
  assert step < 10000000  # the signal ended the run
  assert os.path.basename(tf.train.latest_checkpoint(str(tmp_path))) == f'ckpt-{step}'
  reader = tf.train.load_checkpoint(str(tmp_path))
  assert reader.get_tensor('global_step/.ATTRIBUTES/VARIABLE_VALUE') == step
