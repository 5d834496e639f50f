"""Two local worker processes (MultiWorkerMirroredStrategy on 127.0.0.1) started by
scripts/launch_local_multiworker.py: equivalence with one process, chief-only files, preemption."""

import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import tensorflow as tf

from official.common import distribute_utils
from official.core import exp_factory
from official.core import task_factory
from official.core import train_lib
from tests.core import toy_task  # pylint: disable=unused-import

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LAUNCHER = os.path.join(ROOT, 'scripts', 'launch_local_multiworker.py')
ENV = dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL='2')


def _launch_command(model_dir, *overrides, mode='train_and_eval'):
  override = ','.join(overrides)
  return [sys.executable, LAUNCHER, '--num_workers', '2', '--timeout', '150', '--',
          sys.executable, '-m', 'official.nlp.train', '--experiment_module=tests.core.toy_task',
          '--experiment=test/toy_regression', f'--model_dir={model_dir}', f'--mode={mode}'] + (
              [f'--params_override={override}'] if override else [])


def _kernel(model_dir):
  reader = tf.train.load_checkpoint(str(model_dir))
  name = [n for n in reader.get_variable_to_shape_map()
          if n.startswith('model/') and 'kernel' in n and 'OPTIMIZER' not in n][0]
  return reader.get_tensor(name)


def test_two_workers_match_one_process_and_only_the_chief_writes(tmp_path):
  result = subprocess.run(_launch_command(tmp_path / 'two'), cwd=ROOT, env=ENV,
                          capture_output=True, text=True, timeout=180, check=False)
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
  params = exp_factory.get_exp_config('test/toy_regression')
  strategy = distribute_utils.get_distribution_strategy('one_device')
  with strategy.scope():
    task = task_factory.get_task(params.task)
  model, logs = train_lib.run_experiment(strategy, task, 'train_and_eval', params,
                                         str(tmp_path / 'one'), run_post_eval=True)
  np.testing.assert_allclose(_kernel(tmp_path / 'two'), model.get_weights()[0].reshape(-1, 1),
                             rtol=1e-5)
  for _, loss, mae in evals:
    np.testing.assert_allclose([float(loss), float(mae)],
                               [logs['validation_loss'], logs['mean_absolute_error']], rtol=1e-3)


def test_sigterm_to_one_worker_saves_on_all_and_exits_0(tmp_path):
  process = subprocess.Popen(
      _launch_command(tmp_path, 'trainer.train_steps=10000000', 'trainer.steps_per_loop=200',
                      'trainer.checkpoint_interval=10000000', mode='train'),
      cwd=ROOT, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
  lines = []
  try:
    deadline = time.time() + 120
    for line in process.stdout:
      lines.append(line)
      if re.match(r'\[worker 1\] .*\] step \d+/', line):
        break
      assert time.time() < deadline, ''.join(lines)
    pids = re.search(r'pids (\d+), (\d+)', ''.join(lines)).groups()
    os.kill(int(pids[1]), signal.SIGTERM)  # the non-chief worker is preempted
    sent = time.time()
    rest, _ = process.communicate(timeout=90)
    waited = time.time() - sent
  finally:
    if process.poll() is None:
      process.kill()
  output = ''.join(lines) + rest
  assert process.returncode == 0, output[-3000:]
  assert waited < 60
  saved = re.findall(r'^\[worker (\d)\] .*\] SIGTERM \(preemption\) on a worker: all workers '
                     r'saved a checkpoint at step (\d+)', output, re.M)
  assert sorted(w for w, _ in saved) == ['0', '1'] and saved[0][1] == saved[1][1]
  step = int(saved[0][1])
  assert os.path.basename(tf.train.latest_checkpoint(str(tmp_path))) == f'ckpt-{step}'
  reader = tf.train.load_checkpoint(str(tmp_path))
  assert reader.get_tensor('global_step/.ATTRIBUTES/VARIABLE_VALUE') == step
