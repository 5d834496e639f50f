"""Tests for official/core/progress.py (with a fake clock)."""

import logging
import math

import pytest

from official.core import progress


class _Clock:
  """A clock the test moves by hand."""

  def __init__(self):
    self.time = 100.0

  def __call__(self) -> float:
    return self.time


def test_format_eta_and_count():
  assert progress.format_eta(65) == '1m05s'
  assert progress.format_eta(3725) == '1h02m'
  assert progress.format_eta(math.inf) == '?'
  assert progress.count(1, 'checkpoint') == '1 checkpoint'
  assert progress.count(2, 'evaluation') == '2 evaluations'


def test_chunks_are_sized_from_the_measured_rate(monkeypatch):
  clock = _Clock()
  monkeypatch.setattr(progress, 'now', clock)
  log = progress.ProgressLog(total_steps=1000, progress_seconds=10.0)
  log.start(step=0, steps_run=0, seconds=0.0)
  assert log.chunk_length(500) == 1          # nothing measured yet (the first call traces)
  log.measured(steps=1, seconds=0.5)         # 2 steps/s
  assert log.chunk_length(500) == 10         # half the 10 s interval
  clock.time += 8.0                          # the next line is due in 2 s
  assert log.chunk_length(500) == 4
  clock.time += 5.0                          # overdue: still no tiny calls (1/20 of the interval)
  assert log.chunk_length(500) == 1 and log.due()
  assert progress.ProgressLog(1000, math.inf).chunk_length(500) == 500
  assert progress.ProgressLog(1000, 10.0, single_call=True).chunk_length(500) == 500


def test_line_counts_loop_time_only_and_eta_from_the_wall_clock(monkeypatch, caplog):
  caplog.set_level(logging.INFO)
  clock = _Clock()
  monkeypatch.setattr(progress, 'now', clock)
  log = progress.ProgressLog(total_steps=300, progress_seconds=10.0)
  log.start(step=0, steps_run=0, seconds=0.0)
  clock.time += 20.0                         # 20 s of wall clock, 10 s of it in the loop
  log.line(step=100, loss=1.5, learning_rate=1e-4, steps_run=100, seconds=10.0, note=' | x')
  assert caplog.messages[-1] == ('step 100/300 | loss 1.5000 | lr 0.0001 | 10.00 steps/s | '
                                 'ETA 0m40s | x')


def test_eval_lines_and_summary(caplog):
  caplog.set_level(logging.INFO)
  progress.log_eval_progress(7, done=40, steps=100, seconds=8.0)
  progress.log_eval_progress(7, done=40, steps=-1, seconds=8.0)
  assert caplog.messages == ['eval at step 7: 40/100 steps | 5.00 steps/s | ETA 0m12s',
                             'eval at step 7: 40 steps | 5.00 steps/s']
  assert progress.eval_note((4, 0.19)) == ' (4 steps in 0.19 s)' and progress.eval_note(None) == ''
  assert progress.log_line({'loss': 0.5, 'steps_per_second': 3.0, 'v': [1, 2]}) == 'loss 0.5000'
  assert progress.run_summary(20, 1.34, 20, 0.05, 4, 0.04, 2, 0.3) == (
      'trained to step 20 in 1.3 s: 20 steps in 0.05 s (400.00 steps/s), 4 checkpoints in '
      '0.04 s, 2 evaluations in 0.30 s')


def test_progress_seconds_from_the_environment(monkeypatch):
  monkeypatch.delenv('MLM_PROGRESS_SECONDS', raising=False)
  assert progress.progress_seconds() == progress.PROGRESS_SECONDS == 10.0
  monkeypatch.setenv('MLM_PROGRESS_SECONDS', '2.5')
  assert progress.progress_seconds() == 2.5
  for bad in ('0', '-1', 'soon', 'nan'):
    monkeypatch.setenv('MLM_PROGRESS_SECONDS', bad)
    with pytest.raises(ValueError, match=f"MLM_PROGRESS_SECONDS: expected a positive number of "
                                         f"seconds, found '{bad}'"):
      progress.progress_seconds()
