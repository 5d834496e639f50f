"""Tests for orbit/controller.py: loop lengths, intervals, checkpoints, summaries, actions."""

import logging

import numpy as np
import pytest
import tensorflow as tf

import orbit
from official.nlp.tools import training_curves


class CountingRunner(orbit.StandardTrainer, orbit.StandardEvaluator):
  """Adds each batch (all ones, width 1) to `total` and counts steps; eval returns the step."""

  def __init__(self):
    self.global_step = orbit.utils.create_global_step()
    self.total = tf.Variable(0.0)
    self.loop_lengths = []
    self._start = 0
    dataset = tf.data.Dataset.from_tensors(tf.ones([1])).repeat()
    orbit.StandardTrainer.__init__(self, dataset)
    orbit.StandardEvaluator.__init__(self, tf.data.Dataset.from_tensors(tf.ones([1])).repeat(4))

  def train_loop_begin(self):
    self._start = int(self.global_step.numpy())

  def train_step(self, iterator):
    self.total.assign_add(tf.reduce_sum(next(iterator)))
    self.global_step.assign_add(1)

  def train_loop_end(self):
    self.loop_lengths.append(int(self.global_step.numpy()) - self._start)
    return {'total': self.total.read_value(), 'nested': {'double': 2.0 * self.total}}

  def eval_begin(self):
    return tf.constant(0.0)

  def eval_step(self, iterator):
    return tf.reduce_sum(next(iterator))

  def eval_reduce(self, state, step_outputs):
    return state + step_outputs

  def eval_end(self, state):
    return {'eval_sum': state, 'at_step': tf.cast(self.global_step, tf.float32)}


def _manager(runner, directory, interval=None):
  checkpoint = tf.train.Checkpoint(step=runner.global_step, total=runner.total)
  return tf.train.CheckpointManager(checkpoint, str(directory), max_to_keep=None,
                                    step_counter=runner.global_step, checkpoint_interval=interval)


def _steps(manager):
  return [int(p.rsplit('-', 1)[1]) for p in manager.checkpoints]


def test_loops_are_cut_at_the_target_and_checkpoints_follow_the_interval(tmp_path):
  runner = CountingRunner()
  manager = _manager(runner, tmp_path, interval=4)
  controller = orbit.Controller(trainer=runner, global_step=runner.global_step, steps_per_loop=3,
                                checkpoint_manager=manager, summary_dir=str(tmp_path / 'train'),
                                summary_interval=3)
  controller.train(steps=10)
  assert runner.loop_lengths == [3, 3, 3, 1]
  assert float(runner.total.numpy()) == 10.0
  assert _steps(manager) == [3, 9, 10]   # first loop, then >= 4 steps later, then at completion
  scalars = training_curves.read_scalars(str(tmp_path / 'train'))
  assert [s for s, _ in scalars['total']] == [3, 6, 9]   # every 3 steps (not the last loop)
  assert [v for _, v in scalars['total']] == [3.0, 6.0, 9.0]
  assert 'steps_per_second' in scalars
  nested = training_curves.read_scalars(str(tmp_path / 'train' / 'nested'))
  assert [v for _, v in nested['double']] == [6.0, 12.0, 18.0]


def test_train_and_evaluate_evaluates_at_multiples_of_the_interval_after_a_resume(tmp_path):
  runner = CountingRunner()
  runner.global_step.assign(3)  # as if restored at step 3
  evals = []
  controller = orbit.Controller(trainer=runner, evaluator=runner, global_step=runner.global_step,
                                steps_per_loop=4, eval_actions=[evals.append],
                                eval_summary_dir=str(tmp_path / 'eval'))
  last = controller.train_and_evaluate(train_steps=12, eval_steps=2, eval_interval=5)
  assert [e['at_step'] for e in evals] == [5.0, 10.0, 12.0]
  assert runner.loop_lengths == [2, 4, 1, 2]
  assert last['eval_sum'] == 2.0 and last['steps_per_second'] > 0
  scalars = training_curves.read_scalars(str(tmp_path / 'eval'))
  assert [s for s, _ in scalars['eval_sum']] == [5, 10, 12]


def test_evaluate_whole_dataset_and_actions(tmp_path):
  runner = CountingRunner()
  train_outputs = []
  controller = orbit.Controller(trainer=runner, evaluator=runner, global_step=runner.global_step,
                                steps_per_loop=2, train_actions=[train_outputs.append])
  controller.train(steps=4)
  assert [o['total'] for o in train_outputs] == [2.0, 4.0]
  logs = controller.evaluate()   # -1: the 4 batches of the eval dataset
  assert logs['eval_sum'] == 4.0 and 'steps_per_second' not in logs


def test_restore_on_init_and_manager_without_interval_saves_nothing(tmp_path):
  runner = CountingRunner()
  manager = _manager(runner, tmp_path)   # no checkpoint_interval
  orbit.Controller(trainer=runner, global_step=runner.global_step, steps_per_loop=2,
                   checkpoint_manager=manager).train(steps=4)
  assert manager.checkpoints == []
  runner.global_step.assign(7)
  manager.save()
  fresh = CountingRunner()
  controller = orbit.Controller(trainer=fresh, global_step=fresh.global_step, steps_per_loop=2,
                                checkpoint_manager=_manager(fresh, tmp_path))
  assert int(fresh.global_step.numpy()) == 7
  assert controller.restore_checkpoint() == manager.latest_checkpoint


def test_evaluate_continuously_stops_at_the_timeout(tmp_path):
  runner = CountingRunner()
  manager = _manager(runner, tmp_path, interval=1)
  orbit.Controller(trainer=runner, global_step=runner.global_step, steps_per_loop=2,
                   checkpoint_manager=manager).train(steps=4)
  evaluator = CountingRunner()
  controller = orbit.Controller(evaluator=evaluator, global_step=evaluator.global_step,
                                checkpoint_manager=_manager(evaluator, tmp_path))
  seen = []
  controller.eval_actions.append(lambda logs: seen.append(logs['at_step']))
  controller.evaluate_continuously(steps=1, timeout=0.5, timeout_fn=lambda: True)
  assert seen == [4.0]   # only the latest checkpoint existed when it started


def test_errors_name_the_problem():
  runner = CountingRunner()
  with pytest.raises(ValueError, match='pass a trainer, an evaluator or both'):
    orbit.Controller(global_step=runner.global_step)
  with pytest.raises(ValueError, match='steps_per_loop is required'):
    orbit.Controller(trainer=runner, global_step=runner.global_step)
  controller = orbit.Controller(evaluator=runner, global_step=runner.global_step)
  with pytest.raises(ValueError, match='Controller.train needs `trainer`'):
    controller.train(5)

  class Stuck(CountingRunner):
    def train_step(self, iterator):
      next(iterator)

  stuck = Stuck()
  controller = orbit.Controller(trainer=stuck, global_step=stuck.global_step, steps_per_loop=2)
  with pytest.raises(RuntimeError, match='did not advance the global step'):
    controller.train(4)


def test_steps_per_loop_function_and_summaries_inside_the_step(tmp_path):
  class WithSummary(CountingRunner):
    def train_step(self, iterator):
      tf.summary.scalar('batch_sum', tf.reduce_sum(next(iterator)))
      self.global_step.assign_add(1)

  runner = WithSummary()
  controller = orbit.Controller(trainer=runner, global_step=runner.global_step,
                                steps_per_loop=lambda step: 1 if step < 2 else 4,
                                summary_dir=str(tmp_path), summary_interval=2)
  controller.train(steps=10)
  assert runner.loop_lengths == [1, 1, 4, 4]
  scalars = training_curves.read_scalars(str(tmp_path))
  # Recorded inside the compiled loop at the steps that are multiples of summary_interval.
  assert sorted({s for s, _ in scalars['batch_sum']}) == [0, 2, 4, 6, 8]
  assert np.allclose([v for _, v in scalars['batch_sum']], 1.0)


class _FakeClock:
  """A clock that moves only when told to."""

  def __init__(self):
    self.now = 0.0

  def __call__(self) -> float:
    return self.now


def test_steps_per_second_counts_only_the_time_inside_train(tmp_path, monkeypatch, caplog):
  caplog.set_level(logging.INFO)
  clock = _FakeClock()
  monkeypatch.setattr(orbit.controller, '_now', clock)
  runner = CountingRunner()
  train, evaluate = runner.train, runner.evaluate

  def timed_train(num_steps):  # 0.1 s per step
    clock.now += 0.1 * int(num_steps)
    return train(num_steps)

  def slow_evaluate(num_steps):
    clock.now += 30.0
    return evaluate(num_steps)

  runner.train, runner.evaluate = timed_train, slow_evaluate
  manager = _manager(runner, tmp_path, interval=3)
  save = manager.save

  def slow_save(*args, **kwargs):
    clock.now += 5.0
    return save(*args, **kwargs)

  manager.save = slow_save
  controller = orbit.Controller(trainer=runner, evaluator=runner, global_step=runner.global_step,
                                steps_per_loop=3, checkpoint_manager=manager,
                                summary_dir=str(tmp_path / 'train'), summary_interval=3,
                                eval_summary_dir=str(tmp_path / 'eval'))
  controller.train_and_evaluate(train_steps=9, eval_steps=2, eval_interval=3)
  rates = training_curves.read_scalars(str(tmp_path / 'train'))['steps_per_second']
  np.testing.assert_allclose([v for _, v in rates], [10.0, 10.0, 10.0], rtol=1e-6)
  saves = [r.getMessage() for r in caplog.records if r.getMessage().startswith('saved ')]
  assert [s.split(' in ')[-1] for s in saves] == ['5.00 s'] * 3
  evals = [r.getMessage() for r in caplog.records if 'eval time' in r.getMessage()]
  assert len(evals) == 3 and all('| eval time 30.0 s |' in e for e in evals)


def test_output_log_level_moves_the_train_and_eval_lines(tmp_path, caplog):
  caplog.set_level(logging.DEBUG)
  runner = CountingRunner()
  controller = orbit.Controller(trainer=runner, evaluator=runner, global_step=runner.global_step,
                                steps_per_loop=2)
  controller.train_and_evaluate(train_steps=2, eval_steps=1)
  levels = {r.getMessage().split(' | ')[0]: r.levelno for r in caplog.records}
  assert levels['train'] == logging.INFO and levels['eval'] == logging.INFO
  caplog.clear()
  controller.output_log_level = logging.DEBUG
  controller.train_and_evaluate(train_steps=4, eval_steps=1)
  lines = [(r.levelno, r.getMessage()) for r in caplog.records
           if r.getMessage().startswith(('train |', 'eval |'))]
  assert len(lines) == 3 and {level for level, _ in lines} == {logging.DEBUG}


class _StrategyRecorder(orbit.AbstractTrainer):
  """Records the strategy in scope (None: none) when `train` is called."""

  def __init__(self):
    self.global_step = orbit.utils.create_global_step()
    self.seen = []

  def train(self, num_steps):
    self.seen.append(tf.distribute.get_strategy() if tf.distribute.has_strategy() else None)
    self.global_step.assign_add(tf.cast(num_steps, tf.int64))


def test_train_enters_only_a_strategy_given_or_in_scope():
  """A controller built outside every scope and given no strategy enters none (as Model
  Garden's): the trainer's own strategy creates what its steps create. Entering the default
  strategy's scope there made variables created in a step of a trainer built in a
  OneDeviceStrategy's scope the default strategy's ('Mixing different tf.distribute.Strategy
  objects'; tests/orbit/examples/single_task/test_orbit_tutorial.py)."""
  strategy = tf.distribute.OneDeviceStrategy('/cpu:0')
  outside = _StrategyRecorder()
  orbit.Controller(trainer=outside, global_step=outside.global_step, steps_per_loop=1).train(1)
  given = _StrategyRecorder()
  orbit.Controller(trainer=given, global_step=given.global_step, steps_per_loop=1,
                   strategy=strategy).train(1)
  in_scope = _StrategyRecorder()
  with strategy.scope():
    controller = orbit.Controller(trainer=in_scope, global_step=in_scope.global_step,
                                  steps_per_loop=1)
  controller.train(1)
  assert outside.seen == [None] and given.seen == [strategy] and in_scope.seen == [strategy]
