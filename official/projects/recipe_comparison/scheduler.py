"""Running jobs of commands, each job on one core, `len(cores)` jobs at a time."""

import ctypes
import dataclasses
import os
import signal
import subprocess
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Sequence

from official.projects.recipe_comparison import grid


@dataclasses.dataclass
class Step:
  """One command of a job. `deadline`: seconds after its start at which it gets SIGTERM."""
  command: List[str]
  log: str
  deadline: Optional[float] = None
  done: Optional[Callable[[Dict[str, Any]], None]] = None


@dataclasses.dataclass
class Job:
  name: str
  steps: List[Step]


def _terminate_with_parent() -> None:
  """In a child before exec: SIGTERM when the runner dies (Linux), so that no run goes on
  unwatched past its budget (it saves and stops; a rerun starts it again)."""
  try:
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
  except (AttributeError, OSError):
    pass


def run_jobs(jobs: Sequence[Job], cores: Sequence[int], poll_seconds: float = 1.0,
             pin: bool = True) -> Dict[str, str]:
  """Runs the jobs, `len(cores)` at a time, each pinned to its slot's core (`taskset -c`).

  A step still running `deadline` seconds after its start gets SIGTERM (training saves and stops),
  and SIGKILL `KILL_AFTER_SECONDS` later. When a step ends, its `done` gets `{'started',
  'seconds', 'returncode', 'stopped'}` (`stopped`: it got SIGTERM). A step that fails (not after
  our SIGTERM), or whose `done` raises, ends its job.

  Returns:
    `{job name: error}` of the jobs that failed.

  Example:
    >>> run_jobs([Job('a', [Step(['python', 'train.py'], 'a.log', deadline=1800)])], [0, 1])
    {}
  """
  queue, free, running, failed = list(jobs), list(range(len(cores))), {}, {}

  def start(job, index, slot):
    step = job.steps[index]
    os.makedirs(os.path.dirname(os.path.abspath(step.log)), exist_ok=True)
    command = (['taskset', '-c', str(cores[slot])] if pin else []) + step.command
    with open(step.log, 'a') as log:
      process = subprocess.Popen(command, cwd=grid.REPO, env=dict(os.environ, PYTHONPATH=grid.REPO),
                                 stdout=log, stderr=subprocess.STDOUT,
                                 preexec_fn=_terminate_with_parent)
    running[slot] = dict(job=job, index=index, process=process, started=time.time(),
                         stopped=False, killed=False)
    print(f'[{time.strftime("%H:%M:%S")}] core {cores[slot]}: {job.name}: '
          f'{os.path.basename(step.log)}', file=sys.stderr, flush=True)

  def fail(job, slot, error):
    failed[job.name] = error
    print(f'FAILED {job.name}: {error}', file=sys.stderr, flush=True)
    free.append(slot)

  while queue or running:
    while queue and free:
      start(queue.pop(0), 0, free.pop(0))
    time.sleep(poll_seconds)
    for slot, state in list(running.items()):
      job, step, process = state['job'], state['job'].steps[state['index']], state['process']
      elapsed = time.time() - state['started']
      if process.poll() is None:
        if step.deadline is not None and elapsed > step.deadline and not state['stopped']:
          process.send_signal(signal.SIGTERM)
          state['stopped'] = True
        elif (state['stopped'] and not state['killed']
              and elapsed > step.deadline + grid.KILL_AFTER_SECONDS):
          process.kill()
          state['killed'] = True
        continue
      del running[slot]
      if process.returncode and not state['stopped']:
        fail(job, slot, f'{os.path.basename(step.log)} exited {process.returncode}; see '
             f'{step.log}')
        continue
      try:
        if step.done:
          step.done(dict(started=state['started'], seconds=elapsed,
                         returncode=process.returncode, stopped=state['stopped']))
      except Exception as e:  # pylint: disable=broad-except  (one job's bad output)
        fail(job, slot, f'{os.path.basename(step.log)}: {type(e).__name__}: {e}')
        continue
      if state['index'] + 1 < len(job.steps):
        start(job, state['index'] + 1, slot)
      else:
        free.append(slot)
  return failed
