"""The child processes of the Hugging Face comparison and their JSON-lines talk (`compare_hf`).

Each framework runs in its own child (TensorFlow and PyTorch in one process contend for
threads), pinned to the run's cores: `python -m official.benchmark.compare_hf --worker=KIND`,
whose `serve` loop builds the variants (`hf_ours.OursBench` or `hf_torch_bench.HfBench`) from a
spec line and answers `round` requests, one JSON line each. `Child` is the parent's handle.

Example:
  child = Child(OURS, spec)
  info = child.receive()  # the built variants
  reply = child.request({'command': 'round', 'steps': 5, 'peak_seconds': 0.5})
  child.close()
"""

import json
import os
import subprocess
import sys
import time
from typing import Any, Dict, Sequence

from official.benchmark import hf_shared
from official.benchmark.hf_shared import OURS, REPO

# The module a child runs (`--worker=KIND`).
WORKER_MODULE = 'official.benchmark.compare_hf'


def _pin(cores: Sequence[int]) -> None:
  """Runs this process on `cores` (before TensorFlow or PyTorch starts its thread pools)."""
  os.sched_setaffinity(0, cores)


def _bench(kind: str, spec: Dict[str, Any]) -> Any:
  """The variants of framework `kind`, built from `spec`."""
  # Each child imports its own framework's side only (TensorFlow or PyTorch), never both.
  if kind == OURS:
    from official.benchmark import hf_ours  # Function-level: TensorFlow, in its child only.
    return hf_ours.OursBench(spec)
  from official.benchmark import hf_torch_bench  # Function-level: PyTorch, in its child only.
  return hf_torch_bench.HfBench(spec)


def serve(kind: str) -> int:
  """A child's loop: reads the spec (one JSON line), builds, then answers `round` requests.

  The replies go to the original stdout, one JSON line each; anything else the libraries print
  goes to stderr.

  Args:
    kind: OURS or HF.

  Returns:
    0 (the exit status).

  Example:
    >>> serve('ours')  # in `python -m official.benchmark.compare_hf --worker=ours`
  """
  replies = os.fdopen(os.dup(1), 'w', buffering=1)
  os.dup2(2, 1)
  sys.stdout = sys.stderr
  spec = json.loads(sys.stdin.readline())
  if spec.get('cores'):
    _pin(spec['cores'])
  try:
    bench = _bench(kind, spec)
  except Exception as e:  # pylint: disable=broad-except  (reported to the parent, which stops)
    replies.write(json.dumps({'error': hf_shared.reason(e)}) + '\n')
    raise
  replies.write(json.dumps(bench.info()) + '\n')
  for line in sys.stdin:
    request = json.loads(line)
    if request.get('command') != 'round':
      break
    cpu_start = time.process_time()
    reply = bench.run_round(request['steps'], request['peak_seconds'])
    # The process' CPU clock at both ends: what it used between rounds, while the other child
    # was timed, shows whether an idle child took cycles from the other.
    reply['process_cpu_seconds'] = [cpu_start, time.process_time()]
    replies.write(json.dumps(reply) + '\n')
  bench.close()
  return 0


class Child:
  """A framework's child process (`--worker=KIND`): JSON lines in, JSON lines out.

  Args:
    kind: OURS or HF.
    spec: the first line the child reads (what to build).
  """

  def __init__(self, kind: str, spec: Dict[str, Any]):
    self.kind = kind
    self.process = subprocess.Popen(
        [sys.executable, '-m', WORKER_MODULE, f'--worker={kind}'], cwd=REPO,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        env=dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL='2'))
    self._send(spec)

  def _send(self, message: Dict[str, Any]) -> None:
    self.process.stdin.write(json.dumps(message) + '\n')
    self.process.stdin.flush()

  def receive(self) -> Dict[str, Any]:
    """The child's next reply.

    Raises:
      RuntimeError: the child exited or reported an error, naming it and its exit status.
    """
    line = self.process.stdout.readline()
    reply = json.loads(line) if line.strip() else None
    if reply is None or 'error' in reply:
      status = self.process.wait()
      reason = reply['error'] if reply else 'no reply (its log is on stderr above)'
      raise RuntimeError(f'the {self.kind} child failed (exit status {status}): {reason}')
    return reply

  def request(self, message: Dict[str, Any]) -> Dict[str, Any]:
    """Sends `message` and returns the child's reply (as `receive`)."""
    self._send(message)
    return self.receive()

  def close(self) -> None:
    """Asks the child to quit and waits for it (kills it after 60 s)."""
    if self.process.poll() is None:
      try:
        self._send({'command': 'quit'})
        self.process.stdin.close()
        self.process.wait(timeout=60)
      except (OSError, subprocess.TimeoutExpired):
        self.process.kill()
        self.process.wait()
