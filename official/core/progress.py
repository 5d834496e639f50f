"""Progress of a run: the train progress lines, eval progress lines and the run summary.

Status goes to the log (absl INFO on stderr); results go to stdout (`log_line`, `run_summary`).
`now` is the one clock of progress lines and timings: tests replace it with a fake clock.

Example:
  >>> log = ProgressLog(total_steps=1000, progress_seconds=10.0)
  >>> log.start(step=0, steps_run=0, seconds=0.0)
  >>> log.line(step=200, loss=6.1, learning_rate=1e-4, steps_run=200, seconds=16.2)
  # I... step 200/1000 | loss 6.1000 | lr 0.0001 | 12.35 steps/s | ETA 1m05s
"""

import logging
import math
import os
import time
from typing import Any, Mapping, Optional, Tuple

import numpy as np

# A progress line at least this often (seconds of work) inside long train loops and evaluations.
PROGRESS_SECONDS = 10.0
# The environment variable that sets another interval (e.g. `MLM_PROGRESS_SECONDS=60`).
PROGRESS_SECONDS_ENV = 'MLM_PROGRESS_SECONDS'


def progress_seconds() -> float:
  """Seconds of work between progress lines: `$MLM_PROGRESS_SECONDS` when set, else 10.

  Raises:
    ValueError: the variable is set to something other than a positive number (naming it).

  Example:
    >>> os.environ['MLM_PROGRESS_SECONDS'] = '2'
    >>> progress_seconds()
    2.0
  """
  text = os.environ.get(PROGRESS_SECONDS_ENV, '').strip()
  if not text:
    return PROGRESS_SECONDS
  try:
    seconds = float(text)
  except ValueError:
    seconds = math.nan
  if not seconds > 0:
    raise ValueError(f'{PROGRESS_SECONDS_ENV}: expected a positive number of seconds, '
                     f'found {text!r}')
  return seconds


def now() -> float:
  """The clock of progress lines and timings (a seam for tests)."""
  return time.monotonic()


def format_eta(seconds: float) -> str:
  """'1h02m', '3m05s', or '?' for an unknown (infinite) time."""
  if not math.isfinite(seconds):
    return '?'
  minutes, seconds = divmod(int(seconds), 60)
  hours, minutes = divmod(minutes, 60)
  return f'{hours}h{minutes:02d}m' if hours else f'{minutes}m{seconds:02d}s'


def count(number: int, noun: str) -> str:
  """'1 checkpoint', '2 checkpoints'."""
  return f'{number} {noun}' if number == 1 else f'{number} {noun}s'


def log_line(logs: Mapping[str, Any]) -> str:
  """'validation_loss 1.2345, accuracy 0.5000': the scalar logs (not steps_per_second)."""
  return ', '.join(f'{k} {float(v):.4f}' for k, v in logs.items()
                   if k != 'steps_per_second' and np.size(v) == 1)


class ProgressLog:
  """The progress lines of a training run, and the size of the loop calls that keep them regular.

  A long loop runs as several calls of one compiled loop function; `chunk_length` sizes each call
  from the measured step rate so a line comes at least every `progress_seconds` of work.

  Args:
    total_steps: the run's last step (`trainer.train_steps`).
    progress_seconds: seconds of work between lines (`math.inf`: one line per loop).
    single_call: run every loop in one call (several workers: their calls must pair up).
  """

  def __init__(self, total_steps: int, progress_seconds: float = PROGRESS_SECONDS,
               single_call: bool = False):
    self.total_steps = total_steps
    self.progress_seconds = progress_seconds
    self.single_call = single_call
    self.rate: Optional[float] = None  # measured train steps per second of loop calls
    self._run_start: Optional[Tuple[int, float]] = None  # (step, clock) of the first loop
    self._line: Optional[Tuple[int, float, float]] = None  # (steps_run, seconds, clock)

  @property
  def started(self) -> bool:
    return self._run_start is not None

  @property
  def run_start_time(self) -> float:
    """The clock when the run's first loop began."""
    return self._run_start[1]

  def start(self, step: int, steps_run: int, seconds: float) -> None:
    """Marks the start of the run (the first loop), at `step`."""
    self._run_start = (step, now())
    self._line = (steps_run, seconds, now())

  def due(self) -> bool:
    """Whether `progress_seconds` passed since the last line."""
    return now() - self._line[2] >= self.progress_seconds

  def measured(self, steps: int, seconds: float) -> None:
    """Records a loop call of `steps` steps that took `seconds`."""
    if seconds > 0:
      self.rate = steps / seconds

  def chunk_length(self, remaining: int) -> int:
    """Steps for the next call of the loop function (at most `remaining`): half the interval, or
    less to end when the next line is due (but no tiny calls); 1 before anything was measured
    (the first call also traces)."""
    if self.single_call or not math.isfinite(self.progress_seconds):
      return remaining
    if self.rate is None:
      return 1
    until_line = self.progress_seconds - (now() - self._line[2])
    seconds = min(self.progress_seconds / 2, max(until_line, self.progress_seconds / 20))
    return max(1, min(remaining, int(self.rate * seconds)))

  def line(self, step: int, loss: float, learning_rate: float, steps_run: int, seconds: float,
           note: str = '') -> None:
    """Logs 'step S/N | loss L | lr R | X steps/s | ETA T'.

    Args:
      step: the global step now.
      loss: the mean loss since the last line.
      learning_rate: the current learning rate.
      steps_run, seconds: the train steps run and the time inside the loop function so far:
        steps/s counts the steps since the previous line over that time only.
      note: appended to the line.
    """
    line_steps, line_seconds, _ = self._line
    rate = (steps_run - line_steps) / max(seconds - line_seconds, 1e-9)
    done = (step - self._run_start[0]) / max(now() - self._run_start[1], 1e-9)
    eta = (self.total_steps - step) / done if done > 0 else float('inf')
    logging.info('step %d/%d | loss %.4f | lr %.3g | %.2f steps/s | ETA %s%s', step,
                 self.total_steps, loss, learning_rate, rate, format_eta(eta), note)
    self._line = (steps_run, seconds, now())


def log_eval_progress(global_step: int, done: int, steps: int, seconds: float) -> None:
  """Logs 'eval at step G: 40/100 steps | 5.12 steps/s | ETA 0m12s' (no total and ETA for a
  whole-dataset evaluation, `steps` < 0)."""
  rate = done / max(seconds, 1e-9)
  if steps > 0:
    logging.info('eval at step %d: %d/%d steps | %.2f steps/s | ETA %s', global_step, done, steps,
                 rate, format_eta((steps - done) / rate if rate > 0 else float('inf')))
  else:
    logging.info('eval at step %d: %d steps | %.2f steps/s', global_step, done, rate)


def eval_note(last_eval: Optional[Tuple[int, float]]) -> str:
  """' (4 steps in 0.19 s)': the size and time of the last evaluation ('' without one)."""
  if last_eval is None:
    return ''
  steps, seconds = last_eval
  return f' ({steps} steps in {seconds:.2f} s)'


def run_summary(step: int, total_seconds: float, steps_run: int, train_seconds: float, saves: int,
                save_seconds: float, evaluations: int, eval_seconds: float) -> str:
  """'trained to step 20 in 1.3 s: 20 steps in 0.05 s (400.00 steps/s), 4 checkpoints in
  0.04 s, 2 evaluations in 0.30 s': the train steps' rate counts only the time inside the train
  loop function; checkpoint saves and evaluations are timed apart."""
  rate = steps_run / max(train_seconds, 1e-9)
  return (f'trained to step {step} in {total_seconds:.1f} s: '
          f'{steps_run} steps in {train_seconds:.2f} s ({rate:.2f} steps/s), '
          f'{count(saves, "checkpoint")} in {save_seconds:.2f} s, '
          f'{count(evaluations, "evaluation")} in {eval_seconds:.2f} s')
