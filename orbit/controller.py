"""`Controller`: the outer loop of training and evaluation, with checkpoints and summaries.

The controller alternates `trainer.train(n)` calls of `steps_per_loop` steps with the
bookkeeping between them: train outputs are logged, written as summaries every
`summary_interval` steps and passed to the train actions; checkpoints are saved through a
`tf.train.CheckpointManager` (its `checkpoint_interval` decides how often); evaluations run every
`eval_interval` steps in `train_and_evaluate`, or on every new checkpoint in
`evaluate_continuously`.

Example:
  >>> controller = Controller(trainer=trainer, evaluator=evaluator,
  ...                         global_step=trainer.global_step, steps_per_loop=100,
  ...                         checkpoint_manager=manager, summary_dir=f'{model_dir}/train',
  ...                         eval_summary_dir=f'{model_dir}/validation')
  >>> controller.train_and_evaluate(train_steps=10_000, eval_steps=50, eval_interval=1000)
"""

import contextlib
import logging
import time
from typing import Any, Callable, Iterable, Optional, Union

import numpy as np
import tensorflow as tf
from tensorflow.python.eager import monitoring

from orbit import runner
from orbit import utils

# Records that the Orbit API is in use (read by tests).
_orbit_api_gauge = monitoring.BoolGauge('/mlm_garden/api/orbit', 'orbit api usage')

# `train` fails when this many loops in a row leave the global step where it was.
_MAX_LOOPS_WITHOUT_PROGRESS = 3

# An action: any callable taking the outputs of a train loop or of an evaluation.
Action = Callable[[runner.Output], None]


def _format(output: Any) -> str:
  if isinstance(output, dict):
    return '{' + ', '.join(f'{k}: {_format(v)}' for k, v in output.items()) + '}'
  if isinstance(output, (float, np.floating)):
    return f'{float(output):.6g}'
  array = np.asarray(output)
  if array.ndim == 0 and np.issubdtype(array.dtype, np.floating):
    return f'{float(array):.6g}'
  return str(output)


def _to_host(output: Optional[runner.Output]) -> runner.Output:
  if output is None:
    return {}
  return tf.nest.map_structure(utils.get_value, output)


def _now() -> float:
  """The clock of the train, checkpoint and eval timings (a seam for tests)."""
  return time.monotonic()


class _StepTimer:
  """Steps per second of the global step over the time spent inside `trainer.train` calls
  since `start()`: checkpoint saves and evaluations between the calls do not count."""

  def __init__(self, step: tf.Variable):
    self._step = step
    self.start()

  def start(self) -> None:
    self._start_step = int(self._step.numpy())
    self._seconds = 0.0

  def add(self, seconds: float) -> None:
    """Counts `seconds` spent inside a `trainer.train` call."""
    self._seconds += seconds

  def steps_per_second(self, restart: bool = True) -> float:
    steps = int(self._step.numpy()) - self._start_step
    rate = steps / max(self._seconds, 1e-9)
    if restart:
      self.start()
    return rate


class Controller:
  """Runs a trainer and/or an evaluator with checkpoints, summaries and actions.

  All arguments are keyword-only.

  Args:
    global_step: the int64 step variable the trainer increments (e.g.
      `orbit.utils.create_global_step()` or `optimizer.iterations`).
    trainer: an `AbstractTrainer` (needed by `train` and `train_and_evaluate`).
    evaluator: an `AbstractEvaluator` (needed by the evaluation methods).
    strategy: the distribution strategy whose scope `trainer.train` is called in (None: the one
      in scope when the controller is built, if any). A controller built outside every strategy
      scope and given none enters no scope, as Model Garden's: the trainer's own strategy then
      creates what its steps create (e.g. an optimizer's slots), not the default strategy.
    train_actions: callables applied to the outputs of every train loop.
    eval_actions: callables applied to the outputs of every evaluation.
    steps_per_loop: train steps per `trainer.train` call, or a function of the global step
      returning it (required with a trainer).
    checkpoint_manager: restores the latest checkpoint of its directory here; saves during
      training only when it has a `checkpoint_interval` (every that many steps and at the end).
    enable_async_checkpointing: save checkpoints in the background.
    summary_interval: steps between train summaries, best a multiple of an int
      `steps_per_loop` (otherwise the loop crossing it writes them; None: every loop).
    summary_dir: train summary directory (None: no train summaries).
    eval_summary_dir: eval summary directory (None: `summary_dir`).
    summary_manager: writes the train summaries (overrides `summary_dir`).
    eval_summary_manager: writes the eval summaries (overrides `eval_summary_dir`).

  Attributes:
    output_log_level: the `logging` level of the per-loop train line ('train | step N |
      outputs {...}') and of the evaluation lines; INFO. A driver whose trainer
      logs its own progress lines (`official.core.train_lib`) lowers it to DEBUG so that each
      event is logged once. Checkpoint saves are logged at INFO with their time either way.

  The `steps_per_second` written with the train outputs counts only the time inside
  `trainer.train` calls: checkpoint saves and evaluations between them are timed apart.

  Raises:
    ValueError: neither a trainer nor an evaluator, a trainer without `steps_per_loop`, or a
      `summary_interval` that is not positive.
  """

  output_log_level: int = logging.INFO

  def __init__(self, *, global_step: tf.Variable,
               trainer: Optional[runner.AbstractTrainer] = None,
               evaluator: Optional[runner.AbstractEvaluator] = None,
               strategy: Optional[tf.distribute.Strategy] = None,
               train_actions: Optional[Iterable[Action]] = None,
               eval_actions: Optional[Iterable[Action]] = None,
               steps_per_loop: Optional[Union[int, Callable[[int], int]]] = None,
               checkpoint_manager: Optional[tf.train.CheckpointManager] = None,
               enable_async_checkpointing: bool = False,
               summary_interval: Optional[int] = None,
               summary_dir: Optional[str] = None,
               eval_summary_dir: Optional[str] = None,
               summary_manager: Optional[utils.SummaryManagerInterface] = None,
               eval_summary_manager: Optional[utils.SummaryManagerInterface] = None):
    if trainer is None and evaluator is None:
      raise ValueError('Controller: pass a trainer, an evaluator or both')
    if trainer is not None:
      if steps_per_loop is None:
        raise ValueError('Controller: steps_per_loop is required with a trainer')
      if not callable(steps_per_loop) and (not isinstance(steps_per_loop, int) or
                                           steps_per_loop < 1):
        raise ValueError(f'Controller: steps_per_loop must be a positive int or a function of '
                         f'the global step, found {steps_per_loop!r}')
    if summary_interval is not None:
      if summary_interval <= 0:
        raise ValueError(f'Controller: summary_interval must be positive, found '
                         f'{summary_interval}')
      if isinstance(steps_per_loop, int) and summary_interval % steps_per_loop:
        # Orbit refuses this; here summaries are then written after the first loop ending at
        # least `summary_interval` steps after the previous summary.
        logging.warning('Controller: summary_interval (%d) is not a multiple of steps_per_loop '
                        '(%d): summaries are written at the end of the loop that crosses it.',
                        summary_interval, steps_per_loop)
    if not isinstance(global_step, tf.Variable):
      raise ValueError('Controller: global_step must be a tf.Variable, found '
                       f'{type(global_step).__name__}')

    self.trainer = trainer
    self.evaluator = evaluator
    self.strategy = strategy or tf.distribute.get_strategy()
    # The scope `trainer.train` runs in: a strategy given or in scope now, never the default one
    # (entering it around a trainer built in another strategy's scope made the variables its
    # steps create the default strategy's: "Mixing different tf.distribute.Strategy objects").
    self._train_strategy = strategy or (
        tf.distribute.get_strategy() if tf.distribute.has_strategy() else None)
    self.train_actions = list(train_actions or [])
    self.eval_actions = list(eval_actions or [])
    self.global_step = global_step
    self.checkpoint_manager = checkpoint_manager
    self._enable_async_checkpointing = enable_async_checkpointing
    self._checkpoint_options = tf.train.CheckpointOptions(
        experimental_enable_async_checkpoint=enable_async_checkpointing)
    self._steps_per_loop = steps_per_loop
    self.summary_interval = summary_interval

    if trainer is not None:
      self.summary_manager = summary_manager or utils.SummaryManager(
          summary_dir, utils.scalar_summary, global_step=global_step)
      self._step_timer = None
      self._last_summary_step = None
      self._loops_without_progress = 0
    else:
      self.summary_manager = summary_manager
    if evaluator is not None:
      if eval_summary_manager is None:
        eval_dir = eval_summary_dir if eval_summary_dir is not None else summary_dir
        if (eval_dir is not None and eval_dir == summary_dir and
            isinstance(self.summary_manager, utils.SummaryManager)):
          eval_summary_manager = self.summary_manager  # one writer, one events file
        else:
          eval_summary_manager = utils.SummaryManager(eval_dir, utils.scalar_summary,
                                                      global_step=global_step)
      self.eval_summary_manager = eval_summary_manager
    _orbit_api_gauge.get_cell().set(True)

    if checkpoint_manager is not None:
      self.restore_checkpoint()

  # ---- public API -------------------------------------------------------------------------------
  @property
  def steps_per_loop(self) -> Optional[Union[int, Callable[[int], int]]]:
    """The `steps_per_loop` passed in (an int or a function of the global step)."""
    return self._steps_per_loop

  def train(self, steps: int, checkpoint_at_completion: bool = True) -> None:
    """Trains until the global step reaches `steps` (a total, not a number of new steps).

    Args:
      steps: the global step to reach.
      checkpoint_at_completion: save a checkpoint at the end (regardless of the interval).
    """
    self._require('trainer', 'train')
    current = int(self.global_step.numpy())
    if current >= steps:
      logging.info('train: the global step %d already reaches %d; nothing to train', current,
                   steps)
    while current < steps:
      num_steps = min(self._loop_length(current), steps - current)
      self._train_n_steps(num_steps)
      current = int(self.global_step.numpy())
      self._maybe_save_checkpoint()
    if checkpoint_at_completion:
      self._maybe_save_checkpoint(check_interval=False)
    self._sync_on_async_checkpointing()

  def evaluate(self, steps: int = -1) -> Optional[runner.Output]:
    """Runs one evaluation of `steps` steps (-1: the whole eval dataset); returns its outputs
    plus `steps_per_second`, after writing them as summaries and applying the eval actions."""
    self._require('evaluator', 'evaluate')
    step = int(self.global_step.numpy())
    if steps > 0:
      logging.log(self.output_log_level, 'eval | step %d | running %d steps', step, steps)
    else:
      logging.log(self.output_log_level, 'eval | step %d | running the complete dataset', step)
    start = _now()
    with self.eval_summary_manager.summary_writer().as_default(step=self.global_step):
      output = self.evaluator.evaluate(tf.convert_to_tensor(steps, tf.int32))
    elapsed = _now() - start
    output = _to_host(output)
    if steps > 0:
      output['steps_per_second'] = steps / max(elapsed, 1e-9)
    logging.log(self.output_log_level, 'eval | step %d | eval time %.1f s | outputs %s', step,
                elapsed, _format(output))
    self.eval_summary_manager.write_summaries(output)
    self.eval_summary_manager.flush()
    for action in self.eval_actions:
      action(output)
    return output

  def train_and_evaluate(self, train_steps: int, eval_steps: int = -1,
                         eval_interval: Optional[int] = None) -> Optional[runner.Output]:
    """Trains to `train_steps`, evaluating every `eval_interval` steps and at the end.

    Evaluations happen at the multiples of `eval_interval` (and at `train_steps`), also in a
    run resumed from a checkpoint between two of them (Orbit counts from the resumed step; a
    fresh run evaluates at the same steps either way).

    Args:
      train_steps: the global step to reach.
      eval_steps: steps per evaluation (-1: the whole eval dataset).
      eval_interval: steps between evaluations (None: only at the end).

    Returns:
      The outputs of the last evaluation (None when no training was needed).
    """
    self._require('trainer', 'train_and_evaluate')
    self._require('evaluator', 'train_and_evaluate')
    current = int(self.global_step.numpy())
    output = None
    while current < train_steps:
      if eval_interval:
        target = min((current // eval_interval + 1) * eval_interval, train_steps)
      else:
        target = train_steps
      self.train(steps=target, checkpoint_at_completion=False)
      output = self.evaluate(steps=eval_steps)
      current = int(self.global_step.numpy())
    self._maybe_save_checkpoint(check_interval=False)
    return output

  def evaluate_continuously(self, steps: int = -1, timeout: Optional[float] = None,
                            timeout_fn: Optional[Callable[[], bool]] = None
                            ) -> Optional[runner.Output]:
    """Evaluates every new checkpoint of the checkpoint manager's directory.

    Args:
      steps: steps per evaluation (-1: the whole eval dataset).
      timeout: seconds to wait for a new checkpoint before calling `timeout_fn` (None: forever).
      timeout_fn: called on a timeout; returning True ends the loop (None: end at the timeout).

    Returns:
      The outputs of the last evaluation.
    """
    self._require('evaluator', 'evaluate_continuously')
    self._require('checkpoint_manager', 'evaluate_continuously')
    output = None
    for path in tf.train.checkpoints_iterator(self.checkpoint_manager.directory,
                                              timeout=timeout, timeout_fn=timeout_fn):
      self.restore_checkpoint(path)
      output = self.evaluate(steps)
    return output

  def restore_checkpoint(self, checkpoint_path: Optional[str] = None) -> Optional[str]:
    """Restores `checkpoint_path`, or the latest checkpoint of the manager (running its
    `init_fn` when there is none); returns the restored path (None when nothing was restored)."""
    self._require('checkpoint_manager', 'restore_checkpoint')
    with self.strategy.scope():
      if checkpoint_path is not None:
        self.checkpoint_manager.checkpoint.restore(checkpoint_path).expect_partial()
      else:
        checkpoint_path = self.checkpoint_manager.restore_or_initialize()
    if checkpoint_path is not None:
      logging.info('restored %s at step %d', checkpoint_path, int(self.global_step.numpy()))
    else:
      logging.info('no checkpoint to restore in %s', self.checkpoint_manager.directory)
    return checkpoint_path

  def save_checkpoint(self) -> None:
    """Saves a checkpoint at the current global step (ignoring the interval)."""
    self._require('checkpoint_manager', 'save_checkpoint')
    self._save(check_interval=False)
    self._sync_on_async_checkpointing()

  # ---- internals --------------------------------------------------------------------------------
  def _loop_length(self, current_step: int) -> int:
    if callable(self._steps_per_loop):
      length = int(self._steps_per_loop(current_step))
      if length < 1:
        raise ValueError(f'steps_per_loop({current_step}) returned {length}; expected >= 1')
      return length
    return self._steps_per_loop

  def _train_n_steps(self, num_steps: int) -> None:
    """One `trainer.train(num_steps)` call and the bookkeeping after it."""
    if self._step_timer is None:
      self._step_timer = _StepTimer(self.global_step)
    start_step = int(self.global_step.numpy())
    interval = self.summary_interval
    global_step = self.global_step

    def should_record():
      if interval is None:
        return True
      return tf.equal(global_step % interval, 0)

    with self.summary_manager.summary_writer().as_default(step=self.global_step), \
        tf.summary.record_if(should_record):
      with (self._train_strategy.scope() if self._train_strategy is not None
            else contextlib.nullcontext()):
        start = _now()
        output = self.trainer.train(tf.convert_to_tensor(num_steps, tf.int32))
        self._step_timer.add(_now() - start)
    step = int(self.global_step.numpy())
    # A loop may end where it began (e.g. a loss-blowup recovery restored a checkpoint), but a
    # trainer that never advances the step would make `train` loop forever.
    self._loops_without_progress = self._loops_without_progress + 1 if step == start_step else 0
    if self._loops_without_progress >= _MAX_LOOPS_WITHOUT_PROGRESS:
      raise RuntimeError(f'trainer.train({num_steps}) did not advance the global step in '
                         f'{self._loops_without_progress} loops (still {step}); the trainer must '
                         'increment the global_step it shares with the Controller')
    output = _to_host(output)
    if self._last_summary_step is None:
      self._last_summary_step = start_step
    if interval is None or step - self._last_summary_step >= interval:
      output['steps_per_second'] = self._step_timer.steps_per_second()
      self.summary_manager.write_summaries(output)
      self.summary_manager.flush()
      self._last_summary_step = step
    logging.log(self.output_log_level, 'train | step %d | outputs %s', step, _format(output))
    for action in self.train_actions:
      action(output)

  def _maybe_save_checkpoint(self, check_interval: bool = True) -> Optional[str]:
    """Saves a checkpoint at the global step unless one exists for it (or, with
    `check_interval`, the manager's interval has not passed); returns its path or None.

    As in Orbit, only a manager with a `checkpoint_interval` saves during training: one
    without an interval serves restoring and `evaluate_continuously`.
    """
    if self.checkpoint_manager is None or not self.checkpoint_manager.checkpoint_interval:
      return None
    return self._save(check_interval)

  def _save(self, check_interval: bool) -> Optional[str]:
    manager = self.checkpoint_manager
    step = int(self.global_step.numpy())
    latest = manager.latest_checkpoint
    if latest is not None and latest.rsplit('-', 1)[-1] == str(step):
      return None
    start = _now()
    path = manager.save(checkpoint_number=self.global_step, check_interval=check_interval,
                        options=self._checkpoint_options)
    if path is not None:
      # Apart from the train time: `steps_per_second` does not count it.
      logging.info('saved checkpoint %s in %.2f s', path, _now() - start)
    return path

  def _sync_on_async_checkpointing(self) -> None:
    """Waits for a background checkpoint save to finish."""
    if self.checkpoint_manager is not None and self._enable_async_checkpointing:
      self.checkpoint_manager.sync()

  def _require(self, attribute: str, method: str) -> None:
    if getattr(self, attribute, None) is None:
      raise ValueError(f'Controller.{method} needs `{attribute}`, which was not passed')
