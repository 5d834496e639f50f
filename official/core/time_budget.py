"""Training for a wall-clock budget: `trainer.time_budget_minutes` (an mlm-garden addition).

With a budget, training ends when the budget is spent, and the learning-rate schedule ends there
too. The config's schedule is written for `trainer.train_steps` steps (its warmup and decay steps
count in those); a budgeted run maps it onto the steps the budget buys, so warmup and decay become
fractions of the planned run: a config for 100,000 steps with 2,000 warmup steps warms up for the
first 2% of whatever the budget buys. The step intervals (`validation_interval`,
`checkpoint_interval`) scale alike: a config that evaluates every 10,000 of 100,000 steps
evaluates 10 times in the budget, the last time at its end.

The plan: the first loops are short (1 step, which also traces the train function, then 2, 4,
...) and measure the time of a step; from then on, after every loop, the run plans the step it
ends at: the budget left, minus the evaluations still to come and the final checkpoint, at the
measured speed (the last 10 loops: a run that slows down is corrected as it goes). The schedule
continues from where it is to the end of the new plan, so the learning rate never jumps.
A loop lasts about 1/50 of the budget (at most `trainer.steps_per_loop` steps), so the end lands
within a few percent of the budget.

What counts: the time of the train loops, evaluations and checkpoint saves after the model is
built and restored (not the start-up: building the model, reading data files, restoring), in
every session of the run. The time spent and the plan are saved in every checkpoint, so a run
killed and started again with the same command resumes with the budget it had left at its last
checkpoint. Under a multi-worker strategy the workers plan from the mean of their measurements,
so they agree on every step they stop and evaluate at.

Example (YAML):
  trainer:
    train_steps: 100000        # the length the schedule below is written for
    time_budget_minutes: 30    # training ends after 30 minutes, the schedule with it
    optimizer_config: {learning_rate: {type: polynomial, polynomial: {decay_steps: 100000}}, ...}
"""

import collections
import dataclasses
import math
import time
from typing import Any, Callable, Dict, List, Optional, Sequence

import tensorflow as tf
import tf_keras

from official.core import train_utils

# The plan is corrected about this many times over a budget (one loop each).
LOOPS_PER_BUDGET = 50
# Loops whose speed the plan uses (the most recent ones).
SPEED_WINDOW = 10
# Before an evaluation was timed: one eval step is estimated at this share of a train step's time
# (a forward pass is about a third of a train step; the rest leaves room for a larger batch).
EVAL_STEP_SHARE = 0.5

now: Callable[[], float] = time.monotonic  # the budget's clock (tests replace it)


class BudgetState(tf.Module):
  """The budget's state, saved in the checkpoint (`time_budget`): the seconds spent so far and
  the plan of the learning-rate schedule.

  The schedule's progress (0 at the start, 1 at the planned end) is piecewise linear in the
  step: from `plan_start_progress` at `plan_start_step` to 1 at `planned_steps`. `replan` starts
  a new piece at the current step, so the progress (and the learning rate) stays continuous.

  Args:
    budget_seconds: the budget.
    reference_steps: the steps the config's schedule is written for (`trainer.train_steps`).

  Example:
    >>> state = BudgetState(60.0, reference_steps=1000)
    >>> state.replan(step=0, end_step=200)
    >>> float(state.progress(100))
    0.5
  """

  def __init__(self, budget_seconds: float, reference_steps: int):
    super().__init__(name='time_budget')
    if budget_seconds <= 0 or reference_steps < 1:
      raise ValueError(f'BudgetState: expected a positive budget and reference_steps >= 1, found '
                       f'{budget_seconds} s and {reference_steps}')
    self.budget_seconds = float(budget_seconds)
    self.reference_steps = int(reference_steps)
    first = tf.VariableAggregation.ONLY_FIRST_REPLICA

    def variable(value, dtype, name):
      return tf.Variable(value, dtype=dtype, trainable=False, name=name, aggregation=first)

    self.spent_seconds = variable(0.0, tf.float64, 'spent_seconds')
    self.plan_start_step = variable(0, tf.int64, 'plan_start_step')
    self.plan_start_progress = variable(0.0, tf.float64, 'plan_start_progress')
    # Until the first measurement: the schedule's own length.
    self.planned_steps = variable(self.reference_steps, tf.int64, 'planned_steps')
    self.evaluations = variable(0, tf.int64, 'evaluations')

  def progress(self, step: Any) -> tf.Tensor:
    """The schedule's progress at `step` (float64, in [0, 1])."""
    step = tf.cast(step, tf.float64)
    start = tf.cast(self.plan_start_step, tf.float64)
    span = tf.maximum(tf.cast(self.planned_steps, tf.float64) - start, 1.0)
    done = tf.clip_by_value((step - start) / span, 0.0, 1.0)
    begin = tf.cast(self.plan_start_progress, tf.float64)
    return begin + (1.0 - begin) * done

  def replan(self, step: int, end_step: int) -> None:
    """The schedule goes on from its progress at `step` to its end at `end_step`."""
    progress = float(self.progress(step))
    self.plan_start_step.assign(int(step))
    self.plan_start_progress.assign(progress)
    self.planned_steps.assign(max(int(end_step), int(step)))

  @property
  def remaining_seconds(self) -> float:
    return self.budget_seconds - float(self.spent_seconds.numpy())


class BudgetedSchedule(tf_keras.optimizers.schedules.LearningRateSchedule):
  """A learning-rate schedule written for `state.reference_steps` steps, run over the steps
  the budget plans (`BudgetState.progress`).

  Args:
    schedule: the config's schedule (a `LearningRateSchedule`).
    state: the run's `BudgetState`.

  Example:
    >>> lr = BudgetedSchedule(tf_keras.optimizers.schedules.PolynomialDecay(1.0, 1000, 0.0), state)
    >>> state.replan(0, 200)
    >>> float(lr(100))   # half way through the plan: half way through the schedule
    0.5
  """

  def __init__(self, schedule: tf_keras.optimizers.schedules.LearningRateSchedule,
               state: BudgetState):
    super().__init__()
    self.schedule = schedule
    self.state = state

  def __call__(self, step):
    return self.schedule(tf.cast(self.state.progress(step) * self.state.reference_steps,
                                 tf.float32))

  def get_config(self) -> Dict[str, Any]:
    """The wrapped schedule's config and the reference steps (the plan lives in the
    checkpoint, not in the config)."""
    return {'schedule': tf_keras.optimizers.schedules.serialize(self.schedule),
            'reference_steps': self.state.reference_steps}


def budget_the_learning_rate(optimizer: tf_keras.optimizers.Optimizer,
                             state: BudgetState) -> bool:
  """Replaces the optimizer's learning-rate schedule by its `BudgetedSchedule`.

  Looks through wrappers (loss scaling, moving averages: `inner_optimizer`, `_optimizer`). A
  constant learning rate has no schedule to plan and is left as it is.

  Returns:
    Whether a schedule was replaced.
  """
  seen = set()
  while optimizer is not None and id(optimizer) not in seen:
    seen.add(id(optimizer))
    schedule = getattr(optimizer, '_learning_rate', None)
    if isinstance(schedule, BudgetedSchedule):
      return True
    if isinstance(schedule, tf_keras.optimizers.schedules.LearningRateSchedule):
      optimizer.learning_rate = BudgetedSchedule(schedule, state)
      return True
    hyper = getattr(optimizer, '_hyper', {}).get('learning_rate')  # a legacy optimizer
    if isinstance(hyper, tf_keras.optimizers.schedules.LearningRateSchedule):
      optimizer._set_hyper('learning_rate', BudgetedSchedule(hyper, state))  # pylint: disable=protected-access
      return True
    optimizer = (getattr(optimizer, 'inner_optimizer', None) or
                 getattr(optimizer, '_optimizer', None))
  return False


# ---- planning (plain Python) -------------------------------------------------------------------
def plan_end_step(step: int, remaining_seconds: float, seconds_per_step: float,
                  evaluations_left: int, seconds_per_evaluation: float,
                  seconds_per_save: float) -> int:
  """The step a run at `step` ends at: the budget left, minus the evaluations to come and the
  final checkpoint, at `seconds_per_step`.

  Example:
    >>> plan_end_step(100, remaining_seconds=60.0, seconds_per_step=0.1, evaluations_left=2,
    ...               seconds_per_evaluation=5.0, seconds_per_save=1.0)
    590
  """
  usable = remaining_seconds - evaluations_left * seconds_per_evaluation - seconds_per_save
  if usable <= 0 or seconds_per_step <= 0:
    return step
  return step + int(usable / seconds_per_step)


def next_loop_length(previous: Optional[int], seconds_per_step: Optional[float],
                     budget_seconds: float, steps_per_loop: int) -> int:
  """Steps of the next loop: 1 first (it also traces), then doubling up to the steps of about
  1/`LOOPS_PER_BUDGET` of the budget, at most `steps_per_loop`.

  Example:
    >>> [next_loop_length(p, None, 60.0, 1000) for p in (None, 1, 2)]
    [1, 2, 4]
    >>> next_loop_length(64, 0.01, 60.0, 1000)   # 1.2 s of steps
    120
  """
  if previous is None:
    return 1
  length = 2 * previous
  if seconds_per_step is not None and seconds_per_step > 0:
    length = min(length, max(1, int(budget_seconds / LOOPS_PER_BUDGET / seconds_per_step)))
  return max(1, min(length, steps_per_loop))


def evaluation_step(index: int, count: int, end_step: int) -> int:
  """The step of evaluation `index` (1-based) of `count` spread evenly to `end_step`.

  Example:
    >>> [evaluation_step(k, 4, 1000) for k in (1, 2, 3, 4)]
    [250, 500, 750, 1000]
  """
  return int(round(index * end_step / count))


def scaled_interval(interval: int, reference_steps: int, end_step: int) -> int:
  """A step interval of the config (written for `reference_steps`) on a run planned to
  `end_step`: the same share of the run, at least 1."""
  return max(1, int(round(interval * end_step / reference_steps)))


class _Speed:
  """Seconds per train step over the last `SPEED_WINDOW` measured loops."""

  def __init__(self):
    self._loops = collections.deque(maxlen=SPEED_WINDOW)

  def add(self, steps: int, seconds: float) -> None:
    if steps > 0 and seconds > 0:
      self._loops.append((steps, seconds))

  @property
  def seconds_per_step(self) -> Optional[float]:
    if not self._loops:
      return None
    return sum(s for _, s in self._loops) / sum(n for n, _ in self._loops)


def agree(strategy: tf.distribute.Strategy, values: Sequence[float]) -> List[float]:
  """The workers' mean of `values` under a multi-worker strategy (every worker gets the same
  numbers, so they plan alike); `values` unchanged otherwise."""
  if not train_utils.is_multi_worker(strategy):
    return list(values)
  local = tf.constant(list(values), tf.float64)
  per_replica = strategy.experimental_distribute_values_from_function(lambda _: local)
  return [float(v) for v in strategy.reduce(tf.distribute.ReduceOp.MEAN, per_replica,
                                            axis=None).numpy()]


@dataclasses.dataclass
class BudgetReport:
  """What a budget bought: `summary()` is the line printed after training."""
  budget_seconds: float
  spent_seconds: float
  end_step: int
  planned_steps: int
  examples_per_step: int
  tokens_per_example: Optional[int]
  train_seconds: float
  eval_seconds: float
  evaluations: int

  def summary(self) -> str:
    """e.g. 'time budget 3.0 min: spent 2.97 min (train 2.80, 4 evaluations 0.15) for 1,200 steps,
    76,800 examples, 4.9 M tokens'."""
    tokens = ''
    if self.tokens_per_example:
      total = self.end_step * self.examples_per_step * self.tokens_per_example
      tokens = f', {_count(total)} tokens'
    note = ''
    if self.end_step < self.planned_steps:
      note = f' (stopped before the planned step {self.planned_steps})'
    return (f'time budget {self.budget_seconds / 60:.1f} min: spent '
            f'{self.spent_seconds / 60:.2f} min (train {self.train_seconds / 60:.2f}, '
            f'{self.evaluations} evaluations {self.eval_seconds / 60:.2f}) for '
            f'{self.end_step:,} steps{note}, {self.end_step * self.examples_per_step:,} '
            f'examples{tokens}')


def _count(number: float) -> str:
  for size, unit in ((1e9, 'G'), (1e6, 'M'), (1e3, 'k')):
    if number >= size:
      return f'{number / size:.1f} {unit}'
  return f'{int(number)}'


class _Clock:
  """Adds the time since its last tick to `state.spent_seconds`."""

  def __init__(self, state: BudgetState):
    self.state = state
    self.last = now()

  def tick(self, _outputs: Any = None) -> None:
    current = now()
    self.state.spent_seconds.assign_add(current - self.last)
    self.last = current


def evaluations_in(mode: str, params: Any, run_post_eval: bool) -> int:
  """Evaluations inside the budget: `train_and_eval` keeps the config's count
  (train_steps / validation_interval, rounded up), the last at the end; a final evaluation
  (`train_and_post_eval`, `run_post_eval`) is 1; 'train' has none."""
  trainer = params.trainer
  if mode == 'train_and_eval':
    return max(1, math.ceil(trainer.train_steps / trainer.validation_interval))
  return 1 if mode == 'train_and_post_eval' or run_post_eval else 0


def train_within_budget(controller: Any, trainer: Any, mode: str,
                        run_post_eval: bool = False) -> Dict[str, float]:
  """Trains with `controller` (restored) until `trainer.budget` is spent; returns the logs of
  the last evaluation ({} when none ran).

  In 'train_and_eval' the evaluations are spread evenly over the planned run, the last at its
  end; with a final evaluation only (`train_and_post_eval`, `run_post_eval`) it is left to the
  caller but its time is kept free. A checkpoint is saved at the end. `trainer.budget_report`
  says what the budget bought.

  Raises:
    As `controller.train` (`StopRequested` after a signal: the time spent is in the checkpoint
    the caller saves).
  """
  state: BudgetState = trainer.budget
  params = trainer.params.trainer
  strategy, manager = trainer.strategy, trainer.manager
  reference = state.reference_steps
  evaluations_wanted = evaluations_in(mode, trainer.params, run_post_eval)
  spread = evaluations_wanted if mode == 'train_and_eval' else 0
  clock = _Clock(state)
  if manager is not None:  # no interval checkpoint before the first plan scales the interval
    manager.set_checkpoint_interval(2**62)
  controller.train_actions.append(clock.tick)  # before the interval checkpoint of each loop
  speed, eval_times = _Speed(), []
  logs: Dict[str, float] = {}
  length: Optional[int] = None
  first_loop = True
  last_eval_step: Optional[int] = None
  train_seconds = eval_seconds = 0.0

  def seconds_per_evaluation(seconds_per_step: float) -> float:
    if eval_times:
      return sum(eval_times) / len(eval_times)
    return max(params.validation_steps, 0) * seconds_per_step * EVAL_STEP_SHARE

  def evaluate() -> Dict[str, float]:
    nonlocal eval_seconds
    begin = now()
    result = dict(controller.evaluate(steps=params.validation_steps) or {})
    clock.tick()
    eval_times.append(now() - begin)
    eval_seconds += eval_times[-1]
    state.evaluations.assign_add(1)
    return result

  # A plan restored from the checkpoint holds until this session has measured its speed.
  planned = float(state.spent_seconds.numpy()) > 0
  try:
    while True:
      step = int(trainer.global_step.numpy())
      done = int(state.evaluations.numpy())
      clock.tick()
      measured = speed.seconds_per_step
      per_save = manager.save_seconds / manager.saves if manager and manager.saves else 0.0
      spent, per_step, per_eval, per_save = agree(strategy, [
          float(state.spent_seconds.numpy()), measured or 0.0,
          seconds_per_evaluation(measured or 0.0), per_save])
      if planned and step >= int(state.planned_steps.numpy()):
        pass  # the plan's last loop ran: its end stands (the schedule ended exactly there)
      elif measured is not None:
        end = plan_end_step(step, state.budget_seconds - spent, per_step,
                            max(evaluations_wanted - done, 0), per_eval, per_save)
        state.replan(step, end)
        planned = True
        if manager is not None:
          manager.set_checkpoint_interval(
              scaled_interval(params.checkpoint_interval, reference, end))
        trainer.progress.total_steps = end
      elif spent >= state.budget_seconds:
        state.replan(step, step)  # out of time before a measurement
        planned = True
      end = int(state.planned_steps.numpy())
      if planned and spread and done < spread:
        # Evaluation k of n at k/n of the plan, the last at its end; one evaluation a step. A run
        # that reached its end early (out of time) skips to the last.
        due = end if done >= spread - 1 else evaluation_step(done + 1, spread, end)
        if step >= due and step != last_eval_step:
          logs = evaluate()
          last_eval_step = step
          if step >= end:
            state.evaluations.assign(spread)
          continue
      if planned and step >= end:
        break
      # Only agreed numbers decide (workers measuring different speeds would otherwise run
      # loops of different lengths and wait for each other's collectives forever).
      length = next_loop_length(length, per_step if measured is not None else None,
                                state.budget_seconds, params.steps_per_loop)
      target = step + length
      if planned:
        target = min(target, end)
        if spread and done < spread:
          target = min(target, max(evaluation_step(done + 1, spread, end), step + 1))
      begin = now()
      controller.train(steps=target, checkpoint_at_completion=False)
      seconds = now() - begin
      train_seconds += seconds
      if not first_loop:
        speed.add(int(trainer.global_step.numpy()) - step, seconds)
      first_loop = False
    clock.tick()
    if controller.checkpoint_manager is not None:
      controller.save_checkpoint()
  finally:
    clock.tick()  # (a signal: the caller's checkpoint holds the time spent until now)
    controller.train_actions.remove(clock.tick)
  examples = trainer.params.task.train_data.global_batch_size * trainer.accumulation_steps
  trainer.budget_report = BudgetReport(
      budget_seconds=state.budget_seconds, spent_seconds=float(state.spent_seconds.numpy()),
      end_step=int(trainer.global_step.numpy()), planned_steps=int(state.planned_steps.numpy()),
      examples_per_step=examples,
      tokens_per_example=getattr(trainer.params.task.train_data, 'seq_length', None),
      train_seconds=train_seconds, eval_seconds=eval_seconds, evaluations=len(eval_times))
  return logs  # (the run summary prints the report)
