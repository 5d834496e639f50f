"""`trainer.time_budget_minutes`: the plan, the learning rate mapped onto it, evaluations and
checkpoints inside the budget, resume with the budget left, and the conflict errors.

The runs read a simulated clock (`time_budget.now`): every train step costs `STEP_SECONDS`, every
evaluation `EVAL_SECONDS`, the first loop of a session `TRACE_SECONDS` more (its tracing), so the
assertions follow from the arithmetic and not from this machine's speed.
"""

import re
import subprocess

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official.core import config_definitions as cfg
from official.core import exp_factory
from official.core import time_budget
from official.core import trainer as trainer_lib
from official.modeling import hyperparams
from official.nlp import api
from tests.core import test_multi_worker
from tests.core import toy_task
from tests.paths import ROOT
from tests.processes import HANG_SECONDS
from tests.processes import run_on_two_cpus
from tests.processes import subprocess_env

STEP_SECONDS = 0.01
EVAL_SECONDS = 0.2
TRACE_SECONDS = 0.5
BUDGET_MINUTES = 0.1  # 6 simulated seconds: about 500 steps of the toy task
# The toy experiment's schedule: linear from 0.1 to 0.01 over its 20 steps.
START_LEARNING_RATE, END_LEARNING_RATE = 0.1, 0.01


class SimulatedClock:
  """`time_budget.now` of a run: steps, evaluations and the first loop cost fixed times (times
  `slowness`)."""

  def __init__(self, slowness: float = 1.0):
    self.trainer = None
    self.slowness = slowness

  def __call__(self) -> float:
    trainer = self.trainer
    trace = TRACE_SECONDS if trainer.train_steps_run else 0.0
    return self.slowness * (trainer.train_steps_run * STEP_SECONDS +
                            trainer.evaluations * EVAL_SECONDS + trace)


@pytest.fixture(name='clock')
def _clock(monkeypatch):
  clock = SimulatedClock()
  monkeypatch.setattr(time_budget, 'now', clock)
  return clock


def _assert_schedule_ended(trainer):
  """The plan's progress is 1 at the final step (the schedule's end), and the last step ran at
  the schedule's value one step before (what the optimizer reports)."""
  step = int(trainer.global_step.numpy())
  assert float(trainer.budget.progress(step)) == 1.0
  schedule = trainer.optimizer._learning_rate  # pylint: disable=protected-access
  assert isinstance(schedule, time_budget.BudgetedSchedule)
  assert float(schedule(step)) == pytest.approx(END_LEARNING_RATE)
  assert trainer.learning_rate() == pytest.approx(float(schedule(step - 1)))
  assert trainer.learning_rate() < END_LEARNING_RATE + (START_LEARNING_RATE -
                                                        END_LEARNING_RATE) / 100


def _runner(model_dir, clock, mode='train_and_eval', **overrides):
  overrides = dict(dict(time_budget_minutes=BUDGET_MINUTES, steps_per_loop=1000), **overrides)
  runner = toy_task.runner_in_process(model_dir, mode, **overrides)
  clock.trainer = runner.trainer
  return runner


# ---- the plan ----------------------------------------------------------------------------------
def test_plan_end_step_keeps_time_for_evaluations_and_the_final_save():
  # 60 s left - 2 evaluations of 5 s - 1 s to save = 49 s of 0.1 s steps.
  assert time_budget.plan_end_step(100, 60.0, 0.1, 2, 5.0, 1.0) == 590
  assert time_budget.plan_end_step(100, 5.0, 0.1, 1, 5.0, 1.0) == 100  # no time left


def test_loops_start_at_one_step_and_double_up_to_a_fiftieth_of_the_budget():
  lengths, previous = [], None
  for _ in range(8):
    previous = time_budget.next_loop_length(previous, 0.01, 60.0, 1000)
    lengths.append(previous)
  assert lengths == [1, 2, 4, 8, 16, 32, 64, 120]  # 60 s / 50 / 0.01 s = 120 steps
  assert time_budget.next_loop_length(64, 0.01, 60.0, 100) == 100  # steps_per_loop caps it


def test_evaluations_spread_over_the_plan_and_intervals_scale_with_it():
  assert [time_budget.evaluation_step(k, 3, 600) for k in (1, 2, 3)] == [200, 400, 600]
  assert time_budget.scaled_interval(5000, 100000, 2000) == 100
  assert time_budget.scaled_interval(10, 100000, 2000) == 1


def test_replanning_keeps_the_schedule_continuous_and_ends_it_at_the_plan():
  state = time_budget.BudgetState(60.0, reference_steps=1000)
  schedule = time_budget.BudgetedSchedule(
      tf_keras.optimizers.schedules.PolynomialDecay(1.0, 1000, 0.0), state)
  state.replan(0, 400)
  assert float(schedule(200)) == pytest.approx(0.5)
  before = float(schedule(300))
  state.replan(300, 1000)  # a slower run: the rest of the schedule over the new plan
  assert float(schedule(300)) == pytest.approx(before)
  assert float(schedule(650)) == pytest.approx(before / 2)
  assert float(schedule(1000)) == pytest.approx(0.0)
  assert float(schedule(1200)) == pytest.approx(0.0)  # past the plan: the schedule's end


def test_every_schedule_type_takes_the_mapped_step():
  """The factory's schedules (with a warmup) are called with a float step by the mapping."""
  from official.modeling import optimization  # pylint: disable=g-import-not-at-top
  state = time_budget.BudgetState(60.0, reference_steps=100)
  state.replan(0, 300)
  for lr in ({'type': 'polynomial', 'polynomial': {'initial_learning_rate': 1.0,
                                                   'decay_steps': 100}},
             {'type': 'cosine', 'cosine': {'initial_learning_rate': 1.0, 'decay_steps': 100}},
             {'type': 'stepwise', 'stepwise': {'boundaries': [50], 'values': [1.0, 0.1]}},
             {'type': 'exponential', 'exponential': {'initial_learning_rate': 1.0,
                                                     'decay_steps': 100, 'decay_rate': 0.5}}):
    config = optimization.OptimizationConfig.from_dict({
        'optimizer': {'type': 'adamw'}, 'learning_rate': lr,
        'warmup': {'type': 'linear', 'linear': {'warmup_steps': 10}}})
    factory = optimization.OptimizerFactory(config)
    inner = factory.build_learning_rate()
    schedule = time_budget.BudgetedSchedule(inner, state)
    for step in (0, 15, 150, 299):  # the plan's step 3k is the schedule's step k
      np.testing.assert_allclose(float(schedule(step)), float(inner(step / 3)), rtol=1e-6,
                                 err_msg=str((lr['type'], step)))


# ---- budgeted runs -----------------------------------------------------------------------------
def test_a_budgeted_run_ends_at_its_budget_with_the_schedule_ended(tmp_path, clock):
  runner = _runner(tmp_path, clock)
  _, logs = runner.run()
  trainer = runner.trainer
  budget = BUDGET_MINUTES * 60
  spent = float(trainer.budget.spent_seconds.numpy())
  assert 0.95 * budget <= spent <= budget
  step = int(trainer.global_step.numpy())
  # The toy config evaluates every 10 of 20 steps: twice in the budget, the last at its end.
  assert trainer.evaluations == 2
  assert step == int(trainer.budget.planned_steps.numpy())
  # (6 s - 0.5 s tracing - 2 x 0.2 s evaluating) / 0.01 s: about 510 steps.
  assert abs(step - (budget - TRACE_SECONDS - 2 * EVAL_SECONDS) / STEP_SECONDS) <= 0.05 * step
  _assert_schedule_ended(trainer)
  assert toy_task.checkpoint_steps(tmp_path)[-1] == step
  assert trainer.budget_report.end_step == step
  assert f'for {step:,} steps, {8 * step:,} examples' in trainer.run_summary()
  assert logs == {}  # train_and_eval returns no logs without run_post_eval (Model Garden)


def test_checkpoints_keep_their_share_of_the_run(tmp_path, clock):
  # The toy config saves every 5 of 20 steps: every quarter of the budgeted run.
  runner = _runner(tmp_path, clock, max_to_keep=10)
  runner.run()
  steps = toy_task.checkpoint_steps(tmp_path)
  end = steps[-1]
  assert len(steps) in (4, 5), steps
  assert all(abs(b - a - end / 4) <= 0.1 * end for a, b in zip(steps, steps[1:]))


def test_stopped_and_resumed_it_ends_at_the_same_total_budget(tmp_path, clock):
  runner = _runner(tmp_path, clock)

  def stop_at_step_150(_outputs):
    if int(runner.trainer.global_step.numpy()) >= 150:
      raise trainer_lib.StopRequested('SIGTERM')

  runner.controller.train_actions.append(stop_at_step_150)
  runner.run()
  stopped = int(runner.trainer.global_step.numpy())
  assert runner.trainer.stopped_by == 'SIGTERM' and stopped < 300
  reader = tf.train.load_checkpoint(str(tmp_path))
  spent = reader.get_tensor('time_budget/spent_seconds/.ATTRIBUTES/VARIABLE_VALUE')
  assert 0 < spent < BUDGET_MINUTES * 60 / 2

  resumed = _runner(tmp_path, clock)
  resumed.run()
  trainer = resumed.trainer
  total = float(trainer.budget.spent_seconds.numpy())
  assert 0.95 * BUDGET_MINUTES * 60 <= total <= BUDGET_MINUTES * 60
  # A second session traces again: 0.5 s less training than one session's ~510 steps.
  step = int(trainer.global_step.numpy())
  expected = (BUDGET_MINUTES * 60 - 2 * TRACE_SECONDS - 2 * EVAL_SECONDS) / STEP_SECONDS
  assert abs(step - expected) <= 0.05 * expected
  _assert_schedule_ended(trainer)
  assert trainer.evaluations == 2


def test_final_evaluation_time_is_kept_free(tmp_path, clock):
  runner = _runner(tmp_path, clock, mode='train_and_post_eval')
  _, logs = runner.run()
  trainer = runner.trainer
  assert 'validation_loss' in logs and trainer.evaluations == 1
  # No evaluation was timed before it: its 4 steps are estimated at half a train step each.
  estimate = 4 * STEP_SECONDS * time_budget.EVAL_STEP_SHARE
  spent = float(trainer.budget.spent_seconds.numpy())
  assert 0.95 * BUDGET_MINUTES * 60 <= spent + estimate <= BUDGET_MINUTES * 60


def test_the_python_api_trains_for_the_budget(tmp_path, clock, monkeypatch):
  train_within_budget = time_budget.train_within_budget

  def with_the_clock(controller, trainer, *args):
    clock.trainer = trainer
    return train_within_budget(controller, trainer, *args)

  monkeypatch.setattr(time_budget, 'train_within_budget', with_the_clock)
  params = exp_factory.get_exp_config('test/toy_regression')
  params.override({'trainer': {'time_budget_minutes': BUDGET_MINUTES, 'steps_per_loop': 1000}})
  result = api.train(params, str(tmp_path), evaluate=False, show_progress=False)
  assert clock.trainer is not None
  spent = float(clock.trainer.budget.spent_seconds.numpy())
  assert 0.95 * BUDGET_MINUTES * 60 <= spent <= BUDGET_MINUTES * 60
  assert result.step == int(clock.trainer.budget.planned_steps.numpy()) > 100


def _loop_targets(tmp_path, monkeypatch, slowness, agreed_slowness):
  """The steps each loop of a run trains to, when this process's clock runs `slowness` times the
  simulated times and the workers' agreed measurements are `agreed_slowness` times them."""
  clock = SimulatedClock(slowness)
  monkeypatch.setattr(time_budget, 'now', clock)
  # (The last value, seconds a checkpoint save takes, is real time: left out, as it would differ
  # between the two runs.)
  monkeypatch.setattr(time_budget, 'agree', lambda strategy, values: [
      v * agreed_slowness / slowness for v in values[:3]] + [0.0])
  runner = _runner(tmp_path, clock)
  targets = []
  train = runner.controller.train

  def record(steps, checkpoint_at_completion=True):
    targets.append(steps)
    train(steps=steps, checkpoint_at_completion=checkpoint_at_completion)

  monkeypatch.setattr(runner.controller, 'train', record)
  runner.run()
  return targets


@pytest.mark.slow
def test_only_the_agreed_measurements_decide(tmp_path, monkeypatch):
  """A worker whose own clock runs 4x slower than the workers' agreed figures trains the same
  loops as one whose clock agrees with them: every worker takes the same steps (or their
  collectives would wait for each other forever)."""
  alike = _loop_targets(tmp_path / 'alike', monkeypatch, 1.0, 1.0)
  slow = _loop_targets(tmp_path / "slow", monkeypatch, 4.0, 1.0)  # (x4: exact in binary)
  assert slow == alike and len(alike) > 10


def test_a_budget_with_a_step_target_is_refused():
  params = exp_factory.get_exp_config('test/toy_regression')
  params.override({'trainer': {'time_budget_minutes': 3}})
  with pytest.raises(ValueError, match=r'steps=50 and trainer.time_budget_minutes=3 both say '
                     'when training ends; pass one'):
    api.train(params, 'unused', steps=50)


def test_a_budget_needs_the_length_its_schedule_is_written_for():
  params = exp_factory.get_exp_config('test/toy_regression')
  params.override({'trainer': {'time_budget_minutes': 3, 'train_steps': 0}})
  with pytest.raises(hyperparams.ConfigError, match=r'train_steps.*time_budget_minutes=3 it is '
                     'the run length the learning-rate schedule is written for'):
    params.validate()
  with pytest.raises(hyperparams.ConfigError, match='time_budget_minutes'):
    cfg.TrainerConfig(time_budget_minutes=-1).validate()


def test_without_a_budget_the_checkpoint_holds_no_budget(tmp_path):
  toy_task.run_in_process(tmp_path, train_steps=5)
  names = tf.train.list_variables(str(tmp_path))
  assert not any(name.startswith('time_budget') for name, _ in names)


# ---- strategies ----------------------------------------------------------------------------------
@pytest.mark.slow
def test_two_replicas_plan_and_end_alike():
  """MirroredStrategy on two virtual CPUs: the budget's state is mirrored, the run ends at it."""
  code = """
import tempfile
from official.common import distribute_utils
from official.core import exp_factory, task_factory, time_budget, train_lib
from tests.core import test_time_budget as t
clock = t.SimulatedClock()
time_budget.now = clock
params = exp_factory.get_exp_config('test/toy_regression')
params.override({'trainer': {'time_budget_minutes': t.BUDGET_MINUTES, 'steps_per_loop': 1000}})
strategy = distribute_utils.get_distribution_strategy('mirrored')
assert strategy.num_replicas_in_sync == 2
with strategy.scope():
  task = task_factory.get_task(params.task)
runner = train_lib.OrbitExperimentRunner(strategy, task, 'train_and_eval', params,
                                         tempfile.mkdtemp())
clock.trainer = runner.trainer
runner.run()
trainer = runner.trainer
print(int(trainer.global_step.numpy()), float(trainer.budget.spent_seconds.numpy()),
      float(trainer.budget.progress(trainer.global_step)), trainer.evaluations)
"""
  result = run_on_two_cpus(code)
  assert result.returncode == 0, result.stderr[-3000:]
  step, spent, progress, evaluations = result.stdout.split()[-4:]
  assert 0.95 * BUDGET_MINUTES * 60 <= float(spent) <= BUDGET_MINUTES * 60
  assert float(progress) == 1.0 and int(evaluations) == 2 and int(step) > 100


@pytest.mark.slow
def test_two_workers_stop_and_evaluate_at_the_same_steps(tmp_path):
  """Two worker processes (their own clocks): they agree on the plan, so both evaluate at the
  same steps and end together (a disagreement would hang a collective)."""
  result = subprocess.run(
      test_multi_worker.launch_command(tmp_path, 'trainer.time_budget_minutes=0.2'), cwd=ROOT,
      env=subprocess_env(), capture_output=True, text=True, timeout=HANG_SECONDS + 60,
      check=False)
  assert result.returncode == 0, result.stdout[-3000:]
  evals = re.findall(r'^\[worker (\d)\] eval at step (\d+):', result.stdout, re.M)
  steps = {worker: [s for w, s in evals if w == worker] for worker in ('0', '1')}
  assert len(steps['0']) == 2 and steps['0'] == steps['1'], evals
  budgets = re.findall(r'^\[worker (\d)\] time budget 0\.2 min: spent [\d.]+ min .* for '
                       r'([\d,]+) steps', result.stdout, re.M)
  ends = [end.replace(',', '') for _, end in budgets]
  assert len(ends) == 2 and ends[0] == ends[1] == steps['0'][-1], budgets
