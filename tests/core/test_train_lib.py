"""Tests for official/core/{train_lib,trainer,step_functions,progress}.py and official/nlp/train.py
with the toy regression experiment."""

import json
import logging
import os
import re
import time

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

import orbit
from official.common import distribute_utils
from official.core import checkpointing
from official.core import exp_factory
from official.core import progress
from official.core import step_functions
from official.core import task_factory
from official.core import train_lib
from official.core import trainer as trainer_lib
from official.nlp import continuous_finetune_lib
from official.nlp.tools import training_curves
from tests.core import toy_task
from tests.core.toy_task import TOY
from tests.processes import run_on_two_cpus

def _progress_lines(caplog):
  """The train progress lines logged so far ('step S/N | loss ...')."""
  return [r.getMessage() for r in caplog.records if re.match(r'step \d+/', r.getMessage())]


@pytest.fixture(name='train_py_run', scope='module')
def fixture_train_py_run(tmp_path_factory):
  """`train.py --mode=train_and_eval` of the toy experiment in a fresh model_dir: (its
  CliResult, the model_dir)."""
  model_dir = tmp_path_factory.mktemp('train_py') / 'run'
  return toy_task.train_py(*TOY, '--mode=train_and_eval', f'--model_dir={model_dir}'), model_dir


@pytest.mark.slow
def test_every_mode_through_train_py(tmp_path, train_py_run):
  result, model_dir = train_py_run
  assert result.returncode == 0, result.stderr[-2000:]
  assert '] step 20/20 | loss ' in result.stderr and 'eval at step 20: ' in result.stdout
  assert (model_dir / 'params.yaml').exists()
  assert toy_task.checkpoint_steps(model_dir) == [5, 10, 15, 20]
  train = training_curves.read_scalars(str(model_dir / 'train'))
  assert {'training_loss', 'learning_rate', 'steps_per_second', 'mean_absolute_error'} <= set(train)
  losses = [v for _, v in train['training_loss']]
  assert [s for s, _ in train['training_loss']] == [5, 10, 15, 20]
  assert losses[-1] < 0.1 * losses[0]
  validation = training_curves.read_scalars(str(model_dir / 'validation'))
  assert [s for s, _ in validation['validation_loss']] == [10, 20]

  result = toy_task.train_py(*TOY, '--mode=eval', f'--model_dir={model_dir}')
  assert result.returncode == 0, result.stderr[-2000:]
  assert 'eval of ckpt-20 (step 20)' in result.stdout

  result = toy_task.train_py(*TOY, '--mode=continuous_eval', f'--model_dir={model_dir}',
                             '--params_override=trainer.continuous_eval_timeout=1')
  assert result.returncode == 0, result.stderr[-2000:]
  assert 'eval of ckpt-20 (step 20)' in result.stdout
  # Evaluation runs keep the training run's params.yaml.
  assert 'continuous_eval_timeout: 3600' in (model_dir / 'params.yaml').read_text()

  train_only = tmp_path / 'train_only'
  result = toy_task.train_py(*TOY, '--mode=train', f'--model_dir={train_only}',
                             '--params_override=trainer.train_steps=10')
  assert result.returncode == 0, result.stderr[-2000:]
  assert toy_task.checkpoint_steps(train_only) == [5, 10]
  assert not (train_only / 'validation').exists()


class _Crash(Exception):
  pass


def test_run_crashed_after_first_checkpoint_resumes_and_matches_uninterrupted_run(
    tmp_path, monkeypatch, caplog, toy_reference_run):
  caplog.set_level(logging.INFO)
  full_weights = toy_reference_run['kernel']  # evaluations change no weight
  # The first run dies after its second loop (steps 6-10 done, ckpt-10 not yet written).
  take_loop_loss = trainer_lib.Trainer._take_loop_loss  # pylint: disable=protected-access

  def crash_at_step_10(trainer):
    if int(trainer.global_step.numpy()) == 10:
      raise _Crash()
    return take_loop_loss(trainer)

  monkeypatch.setattr(trainer_lib.Trainer, '_take_loop_loss', crash_at_step_10)
  with pytest.raises(_Crash):
    toy_task.run_in_process(tmp_path / 'split')
  assert toy_task.checkpoint_steps(tmp_path / 'split') == [5]
  monkeypatch.setattr(trainer_lib.Trainer, '_take_loop_loss', take_loop_loss)
  caplog.clear()
  model, _ = toy_task.run_in_process(tmp_path / 'split')  # a fresh task, model and optimizer
  steps = [int(PROGRESS.match(line).group(1)) for line in _progress_lines(caplog)]
  # Resumed from ckpt-5: the first line is within the loop of steps 6-10 (a loop slower than
  # 10 s logs a line inside it too), the last at step 20.
  assert 5 < steps[0] <= 10 and steps[-1] == 20, steps
  assert toy_task.checkpoint_steps(tmp_path / 'split') == [5, 10, 15, 20]
  full = training_curves.read_scalars(str(toy_reference_run['model_dir'] / 'train'))
  split = training_curves.read_scalars(str(tmp_path / 'split' / 'train'))
  assert [s for s, _ in split['learning_rate']] == [5, 10, 15, 20]
  np.testing.assert_allclose([v for _, v in split['learning_rate']],
                             [v for _, v in full['learning_rate']], rtol=1e-6)
  reader = tf.train.load_checkpoint(str(tmp_path / 'split'))
  assert reader.get_tensor('global_step/.ATTRIBUTES/VARIABLE_VALUE') == 20
  assert reader.get_tensor('optimizer/_iterations/.ATTRIBUTES/VARIABLE_VALUE') == 20
  # The input iterator is checkpointed too: steps 6-10 see the same batches again, so the
  # weights are those of the uninterrupted run.
  np.testing.assert_allclose(model.get_weights()[0], full_weights, rtol=1e-5)


def test_train_to_more_steps_continues_from_the_last_checkpoint(tmp_path):
  toy_task.run_in_process(tmp_path, train_steps=10)
  toy_task.run_in_process(tmp_path, train_steps=10)  # already done: no step, no new checkpoint
  assert toy_task.checkpoint_steps(tmp_path) == [5, 10]
  toy_task.run_in_process(tmp_path, train_steps=15)
  assert toy_task.checkpoint_steps(tmp_path) == [5, 10, 15]


@pytest.mark.slow
def test_continuous_eval_stops_after_the_timeout_without_new_checkpoints(tmp_path, capsys):
  toy_task.run_in_process(tmp_path, train_steps=10)
  capsys.readouterr()
  start = time.time()
  _, logs = toy_task.run_in_process(tmp_path, mode='continuous_eval', run_post_eval=True,
                                    continuous_eval_timeout=2)
  assert time.time() - start >= 1  # ckpt-10 is below train_steps=20: it waited for more
  assert 'eval of ckpt-10 (step 10)' in capsys.readouterr().out
  assert logs['validation_loss'] > 0
  validation = training_curves.read_scalars(str(tmp_path / 'validation'))
  assert [s for s, _ in validation['validation_loss']] == [10]


@pytest.mark.slow
@pytest.mark.parametrize('xla', [False, True])
def test_train_loop_is_traced_once(tmp_path, xla):
  # Loops of 3, 3, 3, 1 steps (cut at the evaluation every 10 steps), twice: one trace only.
  params = exp_factory.get_exp_config('test/toy_regression')
  params.override({'trainer': {'steps_per_loop': 3},
                   'runtime': {'enable_xla': xla, 'xla_on_cpu': True}})
  task = task_factory.get_task(params.task)
  strategy = distribute_utils.get_distribution_strategy('one_device')
  _, logs, trainer = train_lib.run_experiment_with_trainer(
      strategy, task, 'train_and_eval', params, str(tmp_path), run_post_eval=True)
  assert int(trainer.global_step.numpy()) == 20
  assert trainer.train_loop_fn().experimental_get_tracing_count() == 1
  assert trainer.use_xla == xla
  assert logs['validation_loss'] < 0.5


def test_enable_xla_is_not_applied_on_cpu_unless_xla_on_cpu():
  runtime = exp_factory.get_exp_config('test/toy_regression').runtime
  strategy = distribute_utils.get_distribution_strategy('one_device')
  runtime.override({'enable_xla': True})
  assert not step_functions.use_xla(runtime, strategy)  # this machine has no GPU
  runtime.override({'xla_on_cpu': True})
  assert step_functions.use_xla(runtime, strategy)
  runtime.override({'enable_xla': False})
  assert not step_functions.use_xla(runtime, strategy)


@pytest.mark.parametrize('dtype, optimizer_cls', [
    ('bfloat16', 'SGD'), ('float16', 'LossScaleOptimizer')])
def test_mixed_precision(tmp_path, dtype, optimizer_cls):
  params = exp_factory.get_exp_config('test/toy_regression')
  params.override({'runtime': {'mixed_precision_dtype': dtype}})
  task = task_factory.get_task(params.task)
  strategy = distribute_utils.get_distribution_strategy('one_device')
  try:
    model, logs, trainer = train_lib.run_experiment_with_trainer(
        strategy, task, 'train_and_eval', params, str(tmp_path), run_post_eval=True)
    assert model.layers[0].compute_dtype == dtype
    assert model.layers[0].kernel.dtype == tf.float32
  finally:
    tf_keras.mixed_precision.set_global_policy('float32')
  assert type(trainer.optimizer).__name__.startswith(optimizer_cls)
  losses = [v for _, v in training_curves.read_scalars(str(tmp_path / 'train'))['training_loss']]
  assert losses[-1] < 0.5 * losses[0] and logs['validation_loss'] < 1.0


def test_skip_nonfinite_steps(tmp_path, caplog):
  caplog.set_level(logging.INFO)
  params = exp_factory.get_exp_config('test/toy_regression')
  params.override({'task': {'nan_batches': 2}, 'trainer': {'train_steps': 10}})
  strategy = distribute_utils.get_distribution_strategy('one_device')
  task = task_factory.get_task(params.task)
  with pytest.raises(checkpointing.TrainingStopped, match='training loss is nan at step 5'):
    train_lib.run_experiment(strategy, task, 'train', params, str(tmp_path / 'stop'))
  params.override({'trainer': {'skip_nonfinite_steps': True}})
  caplog.clear()
  model, _ = train_lib.run_experiment(strategy, task, 'train', params, str(tmp_path / 'skip'))
  assert np.all(np.isfinite(model.get_weights()[0]))
  scalars = training_curves.read_scalars(str(tmp_path / 'skip' / 'train'))
  losses = [v for _, v in scalars['training_loss']]
  assert len(losses) == 2 and np.all(np.isfinite(losses)) and losses[1] < losses[0]
  # Counted, logged per loop and summarized.
  assert scalars['skipped_steps'] == [(5, 2.0), (10, 2.0)]
  lines = _progress_lines(caplog)
  assert '| skipped 2 (non-finite loss)' in lines[0]
  assert 'skipped' not in lines[1]


def test_a_loop_of_only_skipped_steps_stops_the_run(tmp_path, caplog):
  caplog.set_level(logging.INFO)
  params = exp_factory.get_exp_config('test/toy_regression')
  params.override({'task': {'nan_batches': 100}, 'trainer': {'skip_nonfinite_steps': True}})
  strategy = distribute_utils.get_distribution_strategy('one_device')
  task = task_factory.get_task(params.task)
  with pytest.raises(checkpointing.TrainingStopped) as e:
    train_lib.run_experiment(strategy, task, 'train', params, str(tmp_path))
  assert str(e.value).startswith(
      'every step of the loop from step 0 to 5 (5 steps) had a non-finite loss and was skipped '
      '(trainer.skip_nonfinite_steps): training makes no progress (learning rate 0.1); stopping. '
      f'There is no finite checkpoint in {tmp_path}')
  assert 'loss 0.0000' not in caplog.text
  assert not tf.io.gfile.glob(str(tmp_path / 'ckpt-*'))


@pytest.mark.slow
def test_two_replica_mirrored_matches_one_device(tmp_path, toy_reference_run):
  """Two virtual CPUs (with and without XLA): the per-replica batch halves and the result is the
  one-device result."""
  code = f"""
import numpy as np, tensorflow as tf
from official.common import distribute_utils
from official.core import exp_factory, task_factory, train_lib
from tests.core import toy_task
strategy = distribute_utils.get_distribution_strategy('mirrored')
assert strategy.num_replicas_in_sync == 2
for xla in (False, True):
  params = exp_factory.get_exp_config('test/toy_regression')
  params.override({{'runtime': {{'enable_xla': xla, 'xla_on_cpu': True}}}})
  with strategy.scope():
    task = task_factory.get_task(params.task)
  model, logs = train_lib.run_experiment(strategy, task, 'train_and_eval', params,
                                         {str(tmp_path)!r} + f'/two_{{xla}}')
  np.save({str(tmp_path)!r} + f'/two_{{xla}}.npy', model.get_weights()[0])
"""
  result = run_on_two_cpus(code)
  assert result.returncode == 0, result.stderr[-2000:]
  assert 'eval at step 20' in result.stdout
  for xla in (False, True):  # with XLA, only the forward and backward pass are compiled
    np.testing.assert_allclose(np.load(tmp_path / f'two_{xla}.npy'), toy_reference_run['kernel'],
                               rtol=1e-5)


def test_unknown_experiment_lists_registered_ones():
  result = toy_task.train_py('--experiment_module=tests.core.toy_task', '--experiment=nope',
                             '--model_dir=/tmp/unused')
  assert result.returncode == 1
  assert 'nope' in result.stderr and 'test/toy_regression' in result.stderr
  assert 'Traceback' not in result.stderr


def test_bad_override_names_the_key_and_helpfull_lists_flags(tmp_path):
  result = toy_task.train_py(*TOY, f'--model_dir={tmp_path}',
                             '--params_override=trainer.train_stepz=3')
  assert result.returncode == 1
  assert 'trainer.train_stepz: unknown key' in result.stderr
  assert 'Traceback' not in result.stderr
  result = toy_task.train_py('--helpfull')
  for flag in ('--experiment', '--mode', '--model_dir', '--config_file', '--params_override',
               '--gin_file', '--gin_params', '--tpu', '--tf_data_service', '--experiment_module'):
    assert flag in result.stdout, flag


def test_tf_data_service_and_eval_without_checkpoint_fail_clearly(tmp_path):
  result = toy_task.train_py(*TOY, f'--model_dir={tmp_path}', '--tf_data_service=grpc://x:5000')
  assert result.returncode == 1 and '--tf_data_service' in result.stderr
  assert 'Traceback' not in result.stderr
  result = toy_task.train_py(*TOY, f'--model_dir={tmp_path}', '--mode=eval')
  assert result.returncode == 1 and 'no checkpoint' in result.stderr
  assert 'Traceback' not in result.stderr


def test_best_checkpoint_export_keeps_the_lowest_validation_loss(tmp_path):
  params = exp_factory.get_exp_config('test/toy_regression')
  params.override({'trainer': {'validation_interval': 5, 'best_checkpoint_export_subdir': 'best',
                               'best_checkpoint_eval_metric': 'validation_loss',
                               'best_checkpoint_metric_comp': 'lower'}})
  params.validate()
  task = task_factory.get_task(params.task)
  strategy = distribute_utils.get_distribution_strategy('one_device')
  evals = []
  model, logs = train_lib.run_experiment(strategy, task, 'train_and_eval', params, str(tmp_path),
                                         run_post_eval=True, eval_actions=[evals.append])
  losses = [e['validation_loss'] for e in evals]
  assert len(losses) == 4 and losses[-1] == min(losses)   # it keeps improving on this task
  info = json.loads((tmp_path / 'best' / 'info.json').read_text())
  assert info['best_ckpt_global_step'] == 20.0
  np.testing.assert_allclose(info['validation_loss'], losses[-1], rtol=1e-6)
  best = tf.train.latest_checkpoint(str(tmp_path / 'best'))
  assert os.path.basename(best).startswith('best_ckpt-')
  assert len(tf.io.gfile.glob(str(tmp_path / 'best' / 'best_ckpt-*.index'))) == 1  # max_to_keep 1
  reader = tf.train.load_checkpoint(best)
  assert reader.get_tensor('global_step/.ATTRIBUTES/VARIABLE_VALUE') == 20
  # A rerun compares against the saved best: a worse evaluation exports nothing.
  exporter = train_lib.maybe_create_best_ckpt_exporter(params, str(tmp_path))
  assert not exporter.maybe_export_checkpoint(tf.train.Checkpoint(), {'validation_loss': 1e9}, 30)
  assert model is not None and logs['validation_loss'] == losses[-1]


def test_train_and_post_eval_evaluates_once_at_the_end(tmp_path, capsys):
  model_dir = tmp_path / 'run'
  _, logs = toy_task.run_in_process(model_dir, mode='train_and_post_eval')
  out = capsys.readouterr().out
  assert logs['validation_loss'] > 0 and out.count('eval at step') == 1
  assert 'eval at step 20' in out
  validation = training_curves.read_scalars(str(model_dir / 'validation'))
  assert [s for s, _ in validation['validation_loss']] == [20]
  with pytest.raises(ValueError, match="unknown mode 'train_and_validate'"):
    toy_task.run_in_process(model_dir, mode='train_and_validate')


def test_orbit_experiment_runner_exposes_its_parts(tmp_path):
  params = exp_factory.get_exp_config('test/toy_regression')
  params.override({'trainer': {'train_steps': 10}})
  task = task_factory.get_task(params.task)
  strategy = distribute_utils.get_distribution_strategy('one_device')
  runner = train_lib.OrbitExperimentRunner(strategy, task, 'train', params, str(tmp_path),
                                           run_post_eval=True)
  assert isinstance(runner.controller, orbit.Controller)
  assert runner.checkpoint_manager.checkpoint_interval == 5
  assert isinstance(runner.trainer, orbit.AbstractTrainer)
  _, logs = runner.run()
  assert 'validation_loss' in logs and toy_task.checkpoint_steps(tmp_path) == [5, 10]


def test_continuous_train_and_eval_fine_tunes_each_pretraining_checkpoint(tmp_path, caplog,
                                                                         capsys):
  caplog.set_level(logging.INFO)
  pretrain_dir = tmp_path / 'pretrain'
  toy_task.run_in_process(pretrain_dir, train_steps=10)            # ckpt-5, ckpt-10
  params = exp_factory.get_exp_config('test/toy_regression')
  params.override({'task': {'init_checkpoint': str(pretrain_dir)},
                   'trainer': {'train_steps': 5, 'validation_interval': 5,
                               'continuous_eval_timeout': 1}})
  finetune_dir = tmp_path / 'finetune'
  logs = continuous_finetune_lib.run_continuous_finetune(
      'continuous_train_and_eval', params, str(finetune_dir), run_post_eval=True,
      distribution_strategy=distribute_utils.get_distribution_strategy('one_device'))
  assert 'fine-tuning from ' + str(pretrain_dir / 'ckpt-10') in caplog.text
  assert 'fine-tuned from pretraining step 10: validation_loss ' in capsys.readouterr().out
  metrics = json.loads((finetune_dir / 'metrics-10.json').read_text())
  np.testing.assert_allclose(metrics['validation_loss'], logs['validation_loss'], rtol=1e-6)
  assert not tf.io.gfile.glob(str(finetune_dir / 'ckpt-*'))   # removed after each fine-tuning
  scalars = training_curves.read_scalars(str(finetune_dir / 'eval'))
  # Tagged `<model_dir name>_<task name>/<metric>` at the pretraining step.
  assert [s for s, _ in scalars['finetune_toy_regression_task/validation_loss']] == [10]
  with pytest.raises(ValueError, match='runs mode continuous_train_and_eval'):
    continuous_finetune_lib.run_continuous_finetune('train', params, str(finetune_dir))


def test_loss_blowup_recovery_restores_the_latest_checkpoint(tmp_path, monkeypatch, caplog):
  caplog.set_level(logging.INFO)
  take_loop_loss = trainer_lib.Trainer._take_loop_loss  # pylint: disable=protected-access
  blowups = {10}

  def blow_up_at(trainer):  # the loop loss of the loops ending at these steps is NaN
    loss, step = take_loop_loss(trainer), int(trainer.global_step.numpy())
    if step in blowups:
      blowups.discard(step)
      return float('nan')
    return loss

  monkeypatch.setattr(trainer_lib.Trainer, '_take_loop_loss', blow_up_at)
  model_dir = tmp_path / 'run'
  toy_task.run_in_process(model_dir, recovery_max_trials=1)
  assert f'restored {model_dir}/ckpt-5 (recovery 1 of 1)' in caplog.text
  steps = [int(line.split()[1].split('/')[0]) for line in _progress_lines(caplog)]
  assert steps == [5, 5, 10, 15, 20]   # back to step 5 after the restore, then on to 20
  assert toy_task.checkpoint_steps(model_dir) == [5, 10, 15, 20]
  blowups.update({10, 15})
  with pytest.raises(RuntimeError, match='training loss is nan at step 15'):
    toy_task.run_in_process(tmp_path / 'twice', recovery_max_trials=1)


@pytest.mark.slow
def test_skipped_steps_are_counted_once_over_two_replicas(tmp_path):
  """A step is skipped on every replica when one replica's loss is non-finite (the gradients
  are all-reduced); it is counted once."""
  code = f"""
import tensorflow as tf
from official.common import distribute_utils
from official.core import exp_factory, task_factory, train_lib
from tests.core import toy_task
strategy = distribute_utils.get_distribution_strategy('mirrored')
params = exp_factory.get_exp_config('test/toy_regression')
# Per-replica batches of 4: the first 3 replica batches (steps 1 and 2) hold NaN labels.
params.override({{'task': {{'nan_batches': 3, 'train_data': {{'global_batch_size': 8}}}},
                 'trainer': {{'train_steps': 10, 'skip_nonfinite_steps': True}}}})
with strategy.scope():
  task = task_factory.get_task(params.task)
from official.common import quiet
quiet.use_absl_logging()
result = train_lib.run_experiment_with_trainer(strategy, task, 'train', params, {str(tmp_path)!r})
print('skipped', int(result.trainer.skipped_steps.numpy()))
"""
  result = run_on_two_cpus(code)
  assert result.returncode == 0, result.stderr[-2000:]
  assert 'skipped 2\n' in result.stdout
  assert '| skipped 2 (non-finite loss)' in result.stderr


PROGRESS = re.compile(r'^step (\d+)/(\d+) \| loss \d+\.\d{4} \| lr [\d.e+-]+ \| ([\d.]+) steps/s '
                      r'\| ETA (\d+m\d\ds)$')
# absl's prefix (Python: 'I1124 07:03:20.801013 1399 progress.py:121] ';
# C++: 'E0000 00:00:17.1 ...').
ABSL_PREFIX = re.compile(r'^[IWEF]\d{4} [\d:.]+ +\d+ [\w.]+:\d+\] ')


def test_one_progress_line_per_loop_results_on_stdout(tmp_path, caplog, capsys, monkeypatch):
  caplog.set_level(logging.DEBUG)
  clock = _StepClock()
  monkeypatch.setattr(progress, 'now', clock)  # a 5-step loop takes 5 s, never 10
  runner = toy_task.runner_in_process(tmp_path, mode='train_and_eval')
  clock.trainer = runner.trainer
  runner.run()
  info = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO]
  lines = [m for m in info if m.startswith('step ')]
  assert [PROGRESS.match(m).group(1) for m in lines] == ['5', '10', '15', '20'], lines
  # The controller's own per-loop and per-evaluation lines are DEBUG under train_lib.
  assert not [m for m in info if m.startswith(('train | step', 'eval | step'))]
  debug = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG]
  assert sum(m.startswith('train | step') for m in debug) == 4
  saves = [m for m in info if m.startswith('saved checkpoint ')]
  assert [re.match(r'saved checkpoint .*ckpt-(\d+) in \d+\.\d\d s$', m).group(1)
          for m in saves] == ['5', '10', '15', '20']
  out = capsys.readouterr().out.splitlines()
  assert len(out) == 3, out
  assert re.match(r'eval at step 10: validation_loss [\d.]+, mean_absolute_error [\d.]+ '
                  r'\(4 steps in \d+\.\d\d s\)$', out[0])
  assert out[1].startswith('eval at step 20: validation_loss ')
  assert re.match(r'trained to step 20 in [\d.]+ s: 20 steps in [\d.]+ s \([\d.]+ steps/s\), '
                  r'4 checkpoints in [\d.]+ s, 2 evaluations in [\d.]+ s$', out[2]), out[2]


def test_train_py_logs_every_status_line_in_absl_format(train_py_run):
  result, _ = train_py_run
  assert result.returncode == 0, result.stderr[-2000:]
  lines = [line for line in result.stderr.splitlines() if line.strip()]
  assert lines and all(ABSL_PREFIX.match(line) for line in lines), lines
  steps = [int(PROGRESS.match(ABSL_PREFIX.sub('', line)).group(1)) for line in lines
           if '] step ' in line]
  # A line after every loop (and inside one that takes more than 10 s on a loaded machine).
  assert {5, 10, 15, 20} <= set(steps) and steps == sorted(steps) and steps[-1] == 20, steps
  assert 'train | step' not in result.stderr and 'eval | step' not in result.stderr
  # stdout: the results only.
  out = result.stdout.splitlines()
  assert len(out) == 3 and [line.split(':')[0] for line in out[:2]] == ['eval at step 10',
                                                                        'eval at step 20']
  assert out[2].startswith('trained to step 20 in ')


class _StepClock:
  """A fake clock for `progress.now`: every global step of `trainer` takes one second (0 until
  the trainer is set: a fresh run starts at step 0)."""

  def __init__(self):
    self.trainer = None

  def __call__(self) -> float:
    return float(self.trainer.global_step.numpy()) if self.trainer is not None else 0.0


def test_progress_lines_every_ten_seconds_inside_a_long_loop(tmp_path, caplog, monkeypatch):
  caplog.set_level(logging.INFO)
  clock = _StepClock()
  monkeypatch.setattr(progress, 'now', clock)
  runner = toy_task.runner_in_process(tmp_path, train_steps=40, steps_per_loop=20,
                                      summary_interval=20, checkpoint_interval=20)
  clock.trainer = runner.trainer
  runner.run()
  lines = [PROGRESS.match(m) for m in _progress_lines(caplog)]
  # Calls of 1 step (nothing measured yet), then of at most 5 steps (half of the 10 s at
  # 1 step/s) ending when the next line is due: a line every 10 s and at the end of each loop.
  assert [int(m.group(1)) for m in lines] == [10, 20, 30, 40]
  assert {m.group(3) for m in lines} == {'1.00'}
  assert lines[0].group(4) == '0m30s'  # 30 steps left at 1 step/s
  trainer = runner.trainer
  assert trainer.train_loop_fn().experimental_get_tracing_count() == 1
  assert trainer.train_steps_run == 40 and trainer.train_seconds == 40.0
  # Loops, summaries and checkpoints are those of steps_per_loop=20.
  assert toy_task.checkpoint_steps(tmp_path) == [20, 40]
  scalars = training_curves.read_scalars(str(tmp_path / 'train'))
  assert [s for s, _ in scalars['training_loss']] == [20, 40]


def test_steps_per_second_leaves_out_slow_checkpoints(tmp_path, monkeypatch, capsys):
  # A fake clock for the trainer's and the controller's timings: every global step takes 1 s and
  # every checkpoint save 100 s (spent in the finite check that runs before it).
  step_clock, checks = _StepClock(), []

  def clock():
    return step_clock() + 100.0 * len(checks)

  monkeypatch.setattr(progress, 'now', clock)
  monkeypatch.setattr(orbit.controller, '_now', clock)
  is_finite = checkpointing.checkpoint_is_finite

  def slow_check(checkpoint):  # runs before every save
    checks.append(checkpoint)
    return is_finite(checkpoint)

  monkeypatch.setattr(checkpointing, 'checkpoint_is_finite', slow_check)
  runner = toy_task.runner_in_process(tmp_path)
  step_clock.trainer = runner.trainer
  runner.run()
  rates = training_curves.read_scalars(str(tmp_path / 'train'))['steps_per_second']
  # 5 steps in 5 s per window; with the 100 s saves counted, it would be 5 / 105 steps/s.
  assert [s for s, _ in rates] == [5, 10, 15, 20]
  np.testing.assert_allclose([v for _, v in rates], [1.0] * 4, rtol=1e-6)
  summary = capsys.readouterr().out.splitlines()[-1]
  assert len(checks) == 4 and summary.startswith(
      'trained to step 20 in 420.0 s: 20 steps in 20.00 s (1.00 steps/s), 4 checkpoints in '
      '400.00 s'), summary


def test_eval_progress_lines(tmp_path, caplog):
  caplog.set_level(logging.INFO)
  params = exp_factory.get_exp_config('test/toy_regression')
  strategy = distribute_utils.get_distribution_strategy('one_device')
  task = task_factory.get_task(params.task)
  trainer = trainer_lib.Trainer(strategy, task, params, str(tmp_path), train=False)
  trainer.progress_seconds = 0.0  # a line after every step
  trainer.evaluate(3)
  lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith('eval at step')]
  assert [re.match(r'eval at step 0: (\d/3) steps \| [\d.]+ steps/s \| ETA \d+m\d\ds$', line)
          .group(1) for line in lines] == ['1/3', '2/3', '3/3']
  assert trainer.last_eval[0] == 3 and trainer.evaluations == 1
  caplog.clear()
  trainer.evaluate(-1)  # the whole dataset: 256 examples in batches of 8
  lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith('eval at step')]
  assert len(lines) == 32 and re.match(r'eval at step 0: 32 steps \| [\d.]+ steps/s$', lines[-1])
  assert trainer.last_eval[0] == 32
