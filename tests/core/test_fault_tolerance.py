"""Preemption, corrupt checkpoints, config changes and resuming with several replicas."""

import json
import os
import re
import resource
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

from official.common import distribute_utils
from official.core import checkpointing
from official.core import exp_factory
from official.core import task_factory
from official.core import train_lib
from official.core import train_utils
from tests.core import toy_task
from tests.paths import ROOT
from tests.processes import HANG_SECONDS
from tests.processes import LineReader
from tests.processes import run_on_two_cpus
from tests.processes import subprocess_env


def _global_step(model_dir):
  reader = tf.train.load_checkpoint(str(model_dir))
  return int(reader.get_tensor('global_step/.ATTRIBUTES/VARIABLE_VALUE'))


@pytest.mark.slow
@pytest.mark.parametrize('signum', [signal.SIGTERM, signal.SIGINT])
def test_signal_during_a_long_loop_saves_at_the_current_step_and_exits_0(tmp_path, signum):
  # One loop of a million steps (minutes): only the signal can end it early. The test waits for
  # events (a progress line, the exit), not for a time; HANG_SECONDS only guards against a hang.
  process = subprocess.Popen(
      [*toy_task.TRAIN_PY, f'--model_dir={tmp_path}', '--mode=train',
       '--params_override=trainer.train_steps=10000000,trainer.steps_per_loop=1000000,'
       'trainer.checkpoint_interval=1000000'],
      cwd=ROOT, env=subprocess_env(MLM_PROGRESS_SECONDS='1'),  # a line after 1 s of work, not 10
      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
  stdout, stderr = LineReader(process.stdout), LineReader(process.stderr)
  name = signal.Signals(signum).name
  try:
    # A progress line inside the first loop: steps are running.
    running = int(stderr.wait_for(r'\] step (\d+)/10000000 \|').group(1))
    process.send_signal(signum)
    process.wait(timeout=HANG_SECONDS)  # it exits on its own
  finally:
    if process.poll() is None:
      process.kill()
  out, err = stdout.text(), stderr.text()
  assert process.returncode == 0, err[-2000:]
  step = _global_step(tmp_path)
  assert running <= step < 1000000  # stopped inside the first loop, after the signal
  assert toy_task.checkpoint_steps(tmp_path) == [step]
  assert f'{name} received' in err and f'at step {step}; rerun the same command' in err
  assert re.search(rf'^trained to step {step} in [\d.]+ s: {step} steps in ', out, re.M), out
  # The rerun resumes at that step.
  result = toy_task.train_py(*toy_task.TOY, f'--model_dir={tmp_path}', '--mode=train',
                             f'--params_override=trainer.train_steps={step + 3},'
                             'trainer.steps_per_loop=3,trainer.checkpoint_interval=1000000')
  assert result.returncode == 0, result.stderr[-2000:]
  assert re.search(rf'^trained to step {step + 3} in [\d.]+ s: 3 steps in ', result.stdout,
                   re.M), result.stdout


def test_corrupt_latest_checkpoint_falls_back_to_the_previous_one(tmp_path, caplog):
  full_model, _ = toy_task.run_in_process(tmp_path / 'full', train_steps=15)
  toy_task.run_in_process(tmp_path / 'split', train_steps=10)
  assert toy_task.checkpoint_steps(tmp_path / 'split') == [5, 10]
  data = tmp_path / 'split' / 'ckpt-10.data-00000-of-00001'
  data.write_bytes(data.read_bytes()[:10])  # truncated
  caplog.clear()
  caplog.set_level('INFO')
  model, _ = toy_task.run_in_process(tmp_path / 'split', train_steps=15)
  out = '\n'.join(r.getMessage() for r in caplog.records)
  assert 'checkpoint ' + str(tmp_path / 'split' / 'ckpt-10') + ' cannot be read' in out
  # Resumed from step 5: a line at the end of each loop (10, 15), none at or before step 5 (a
  # loop that takes over 10 s on a loaded machine also logs one inside).
  steps = [int(s) for s in re.findall(r'^step (\d+)/', out, re.M)]
  assert min(steps) > 5 and 10 in steps and steps[-1] == 15, steps
  np.testing.assert_allclose(model.get_weights()[0], full_model.get_weights()[0], rtol=1e-6)


def test_no_readable_checkpoint_is_an_error_not_a_fresh_start(tmp_path):
  toy_task.run_in_process(tmp_path, train_steps=5)
  data = tmp_path / 'ckpt-5.data-00000-of-00001'
  data.write_bytes(b'')
  with pytest.raises(ValueError, match='no checkpoint in .* can be read'):
    toy_task.run_in_process(tmp_path, train_steps=10)


def test_model_dir_with_another_config_fails_listing_the_keys(tmp_path):
  toy_task.run_in_process(tmp_path, train_steps=5)
  # Run length, intervals and devices may change.
  toy_task.run_in_process(tmp_path, train_steps=10, steps_per_loop=2, checkpoint_interval=10)
  result = toy_task.train_py(*toy_task.TOY, f'--model_dir={tmp_path}', '--mode=train',
                             '--params_override=trainer.train_steps=12,'
                             'task.train_data.global_batch_size=16,'
                             'trainer.optimizer_config.optimizer.sgd.momentum=0.5')
  assert result.returncode == 1 and 'Traceback' not in result.stderr
  assert 'holds a run with another config' in result.stderr
  assert 'task.train_data.global_batch_size: 8 -> 16' in result.stderr
  assert 'trainer.optimizer_config.optimizer.sgd.momentum: 0.0 -> 0.5' in result.stderr
  assert 'train_steps' not in result.stderr.split('config (')[1]
  assert toy_task.checkpoint_steps(tmp_path) == [5, 10]
  result = toy_task.train_py(*toy_task.TOY, f'--model_dir={tmp_path}', '--mode=train',
                             '--allow_config_change', '--params_override=trainer.train_steps=12,'
                             'trainer.optimizer_config.optimizer.sgd.momentum=0.5')
  assert result.returncode == 0, result.stderr[-2000:]
  assert toy_task.checkpoint_steps(tmp_path)[-1] == 12


def test_config_differences_ignore_resumable_keys():
  old = {'trainer': {'train_steps': 10, 'optimizer_config': {'lr': 1.0}},
         'runtime': {'distribution_strategy': 'mirrored'}, 'task': {'model': {'width': 4}}}
  new = {'trainer': {'train_steps': 20, 'optimizer_config': {'lr': 2.0}},
         'runtime': {'distribution_strategy': 'one_device'}, 'task': {'model': {'width': 4}}}
  assert train_utils.config_differences(old, new) == ['trainer.optimizer_config.lr: 1.0 -> 2.0']


@pytest.mark.slow
def test_two_replicas_resume_skips_the_consumed_batches(tmp_path, toy_reference_run):
  """tf.distribute iterators cannot be checkpointed: a resumed 2-replica run skips the batches of
  the restored steps and ends where an uninterrupted run ends; losses and metrics are reduced
  over the global batch (the same numbers as one device)."""
  code = f"""
import numpy as np, tensorflow as tf
from official.common import distribute_utils
from official.core import exp_factory, task_factory, train_lib
from tests.core import toy_task
strategy = distribute_utils.get_distribution_strategy('mirrored')
assert strategy.num_replicas_in_sync == 2
def run(model_dir, steps):
  params = exp_factory.get_exp_config('test/toy_regression')
  params.override({{'trainer': {{'train_steps': steps}}}})
  with strategy.scope():
    task = task_factory.get_task(params.task)
  return train_lib.run_experiment(strategy, task, 'train_and_eval', params, model_dir,
                                  run_post_eval=True)
root = {str(tmp_path)!r}
model, logs = run(root + '/full', 20)
np.save(root + '/full.npy', model.get_weights()[0])
np.save(root + '/full_eval.npy', [logs['validation_loss'], logs['mean_absolute_error']])
run(root + '/split', 10)
model, _ = run(root + '/split', 20)
np.save(root + '/split.npy', model.get_weights()[0])
"""
  result = run_on_two_cpus(code)
  assert result.returncode == 0, result.stderr[-3000:]
  np.testing.assert_allclose(np.load(tmp_path / 'split.npy'), np.load(tmp_path / 'full.npy'),
                             rtol=1e-6)
  # One device with the whole batch: same weights, training losses and eval metrics.
  from official.nlp.tools import training_curves  # pylint: disable=g-import-not-at-top
  logs = toy_reference_run['logs']
  np.testing.assert_allclose(np.load(tmp_path / 'full.npy'), toy_reference_run['kernel'],
                             rtol=1e-5)
  np.testing.assert_allclose(np.load(tmp_path / 'full_eval.npy'),
                             [logs['validation_loss'], logs['mean_absolute_error']], rtol=1e-5)
  two = training_curves.read_scalars(str(tmp_path / 'full' / 'train'))['training_loss']
  one = training_curves.read_scalars(
      str(toy_reference_run['model_dir'] / 'train'))['training_loss']
  assert [s for s, _ in two] == [s for s, _ in one]
  np.testing.assert_allclose([v for _, v in two], [v for _, v in one], rtol=1e-5)


# ---- never a poisoned checkpoint -----------------------------------------------------------------
def _runner(model_dir, overrides=None, mode='train', **run_kwargs):
  """The toy experiment's runner (built, not run) with `overrides` of its config."""
  params = exp_factory.get_exp_config('test/toy_regression')
  params.override(overrides or {})
  strategy = distribute_utils.get_distribution_strategy('one_device')
  with strategy.scope():
    task = task_factory.get_task(params.task, logging_dir=str(model_dir))
  return train_lib.OrbitExperimentRunner(strategy, task, mode, params, str(model_dir),
                                         **run_kwargs)


def _run(model_dir, overrides=None, mode='train', **run_kwargs):
  return _runner(model_dir, overrides, mode, **run_kwargs).run()


def _last_line(text):
  lines = [line for line in text.splitlines() if line.strip()]
  return lines[-1] if lines else ''


def test_nan_injected_before_a_save_is_not_written(tmp_path):
  def poison(outputs):  # a train action: runs after the loop, before its checkpoint
    del outputs
    trainer = runner.trainer
    if int(trainer.global_step.numpy()) == 10:
      kernel = trainer.model.trainable_variables[0]
      kernel.assign(tf.fill(kernel.shape, np.nan))

  runner = _runner(tmp_path, train_actions=[poison])
  with pytest.raises(checkpointing.TrainingStopped) as e:
    runner.run()
  message = str(e.value)
  assert 'the weights (or optimizer state) hold NaN or Inf at step 10' in message
  assert f'The newest finite checkpoint is {tmp_path}/ckpt-5 (step 5)' in message
  assert toy_task.checkpoint_steps(tmp_path) == [5]
  assert not tf.io.gfile.glob(str(tmp_path / 'ckpt-10*'))
  assert not (tmp_path / '.mlm_garden.lock').exists()  # released on the exception


def _write_poisoned_checkpoint(trainer, step):
  """What an older version could leave: `trainer`'s ckpt-<step>, holding a NaN kernel (saved past
  the finite check)."""
  kernel = trainer.model.trainable_variables[0]
  kernel.assign(tf.fill(kernel.shape, np.nan))
  trainer.global_step.assign(step)
  tf.train.CheckpointManager.save(trainer.manager, checkpoint_number=step, check_interval=False)


def test_a_stopped_run_names_the_newest_finite_checkpoint_on_disk(tmp_path):
  runner = _runner(tmp_path, {'trainer': {'train_steps': 10}})
  runner.run()
  _write_poisoned_checkpoint(runner.trainer, 15)
  with pytest.raises(checkpointing.TrainingStopped) as e:   # resumes from the NaN ckpt-15
    _run(tmp_path)
  assert 'training loss is nan at step 20' in str(e.value)
  assert f'The newest finite checkpoint is {tmp_path}/ckpt-10 (step 10)' in str(e.value)
  assert toy_task.checkpoint_steps(tmp_path) == [5, 10, 15]


def test_loss_above_the_bound_exits_1_naming_the_newest_checkpoint(tmp_path):
  _run(tmp_path, {'trainer': {'train_steps': 10}})
  result = toy_task.train_py(*toy_task.TOY, f'--model_dir={tmp_path}', '--mode=train',
                             '--params_override=trainer.loss_upper_bound=0.001')
  assert result.returncode == 1 and 'Traceback' not in result.stderr
  assert _last_line(result.stderr).startswith('error: training loss is 0.')
  assert (f'at step 15 (non-finite or above trainer.loss_upper_bound=0.001); stopping. The '
          f'newest finite checkpoint is {tmp_path}/ckpt-10 (step 10)') in result.stderr
  assert toy_task.checkpoint_steps(tmp_path) == [5, 10]


LR_1E30 = ('trainer.optimizer_config.learning_rate.polynomial.initial_learning_rate=1e30,'
           'trainer.optimizer_config.learning_rate.polynomial.end_learning_rate=1e30')


@pytest.mark.parametrize('skip', [False, True])
def test_a_diverging_run_exits_1_without_writing_a_checkpoint(tmp_path, skip):
  result = toy_task.train_py(*toy_task.TOY, f'--model_dir={tmp_path}', '--mode=train',
                             f'--params_override={LR_1E30},trainer.skip_nonfinite_steps={skip}')
  assert result.returncode == 1 and 'Traceback' not in result.stderr
  last = _last_line(result.stderr)
  if skip:  # the first step's update makes the weights infinite; the other four are skipped
    assert 'step 5/20 | loss ' in result.stderr and '| skipped 4 (non-finite loss)' in result.stderr
    assert last.startswith('error: the weights (or optimizer state) hold NaN or Inf at step 5')
  else:
    assert last.startswith('error: training loss is nan at step 5')
  assert 'loss 0.0000' not in result.stderr
  assert f'There is no finite checkpoint in {tmp_path}' in last
  assert not tf.io.gfile.glob(str(tmp_path / 'ckpt-*'))
  assert not (tmp_path / '.mlm_garden.lock').exists()


# ---- one writer per model_dir --------------------------------------------------------------------
def test_a_live_lock_of_another_process_refuses_train_py(tmp_path):
  sleeper = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])
  try:
    (tmp_path / '.mlm_garden.lock').write_text(json.dumps(
        {'host': socket.gethostname(), 'pid': sleeper.pid, 'started': 'earlier'}))
    result = toy_task.train_py(*toy_task.TOY, f'--model_dir={tmp_path}', '--mode=train')
  finally:
    sleeper.kill()
    sleeper.wait()
  assert result.returncode == 1 and 'Traceback' not in result.stderr
  assert _last_line(result.stderr) == (
      f'error: --model_dir={tmp_path} is in use by another training run (host '
      f'{socket.gethostname()}, pid {sleeper.pid}, started earlier; lock file '
      f'{tmp_path}/.mlm_garden.lock); wait for it to end or choose another --model_dir')
  assert sorted(os.listdir(tmp_path)) == ['.mlm_garden.lock']  # nothing written
  # The holder is gone now: the stale lock is taken over with a warning.
  result = toy_task.train_py(*toy_task.TOY, f'--model_dir={tmp_path}', '--mode=train',
                             '--params_override=trainer.train_steps=5')
  assert result.returncode == 0, result.stderr[-2000:]
  assert 'taking over the stale lock of a run that is no longer running' in result.stderr
  assert toy_task.checkpoint_steps(tmp_path) == [5] and not (tmp_path / '.mlm_garden.lock').exists()


@pytest.mark.slow
def test_two_train_py_runs_on_one_model_dir(tmp_path):
  # The first run is a child process: a lock is reentrant within one process.
  first = subprocess.Popen(
      [*toy_task.TRAIN_PY, f'--model_dir={tmp_path}', '--mode=train',
       '--params_override=trainer.train_steps=10000000,trainer.steps_per_loop=1000000,'
       'trainer.checkpoint_interval=1000000'],
      cwd=ROOT, env=subprocess_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
  try:
    deadline = time.monotonic() + HANG_SECONDS  # a hang guard, not a speed test
    while not (tmp_path / 'train').exists():  # the first run holds the lock
      assert first.poll() is None and time.monotonic() < deadline, first.communicate()
      time.sleep(0.2)
    second = toy_task.train_py(*toy_task.TOY, f'--model_dir={tmp_path}', '--mode=train')
    first.send_signal(signal.SIGTERM)
    first.communicate(timeout=HANG_SECONDS)
  finally:
    if first.poll() is None:
      first.kill()
  assert second.returncode == 1 and 'Traceback' not in second.stderr
  assert f'is in use by another training run (host {socket.gethostname()}, pid {first.pid}' in (
      _last_line(second.stderr))
  assert first.returncode == 0 and len(toy_task.checkpoint_steps(tmp_path)) == 1
  assert not (tmp_path / '.mlm_garden.lock').exists()


# ---- model_dir problems: one line, exit 1 --------------------------------------------------------
def test_model_dir_that_is_a_file(tmp_path):
  (tmp_path / 'run').write_text('not a directory')
  result = toy_task.train_py(*toy_task.TOY, f'--model_dir={tmp_path}/run', '--mode=train')
  assert result.returncode == 1 and 'Traceback' not in result.stderr
  assert _last_line(result.stderr) == (f'error: --model_dir={tmp_path}/run: expected a directory, '
                                       'found a file')


def test_read_only_model_dir(tmp_path):
  model_dir = tmp_path / 'run'
  model_dir.mkdir()
  model_dir.chmod(0o555)
  try:
    if os.access(model_dir, os.W_OK):
      pytest.skip('running as root: a read-only mode does not stop writes')
    result = toy_task.train_py(*toy_task.TOY, f'--model_dir={model_dir}', '--mode=train')
  finally:
    model_dir.chmod(0o755)
  assert result.returncode == 1 and 'Traceback' not in result.stderr
  assert _last_line(result.stderr) == (f'error: --model_dir={model_dir}: expected a writable '
                                       'directory, found one that is not writable')


@pytest.mark.slow
def test_a_checkpoint_that_cannot_be_written_exits_1_naming_it(tmp_path):
  """A full disk, simulated by a file size limit: the kernel refuses to grow a file past it
  (EFBIG, as ENOSPC on a full disk) and the checkpoint's data file is the largest file."""
  def limit():
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))

  # A child process: the limit is the process's. Unmeasured under `make coverage`: coverage's
  # own data file could not be written past the limit either.
  env = {k: v for k, v in subprocess_env().items() if k != 'COVERAGE_PROCESS_START'}
  lr = 'trainer.optimizer_config.learning_rate.polynomial'
  result = subprocess.run(
      [*toy_task.TRAIN_PY, f'--model_dir={tmp_path}', '--mode=train',
       '--params_override=task.model.width=30000,trainer.train_steps=5,'
       f'{lr}.initial_learning_rate=1e-7,{lr}.end_learning_rate=1e-7'],
      cwd=ROOT, env=env, capture_output=True, text=True, timeout=240, check=False,
      preexec_fn=limit)
  assert result.returncode == 1 and 'Traceback' not in result.stderr
  assert _last_line(result.stderr) == (
      f'error: cannot write checkpoint {tmp_path}/ckpt-5: File too large')
  assert not tf.io.gfile.glob(str(tmp_path / 'ckpt-5*'))  # no half-written files left


def test_global_batch_size_0_is_refused_naming_the_field(tmp_path):
  result = toy_task.train_py(*toy_task.TOY, f'--model_dir={tmp_path}/run', '--mode=train',
                     '--params_override=task.train_data.global_batch_size=0')
  assert result.returncode == 1 and 'Traceback' not in result.stderr
  assert _last_line(result.stderr) == (
      'error: task.train_data.global_batch_size: expected a batch size >= 1 with '
      'train_data.input_path set, found 0')
  assert not (tmp_path / 'run').exists()
