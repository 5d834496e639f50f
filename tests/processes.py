r"""Child Python processes in tests: their environment, a hang guard, their output lines, and one
shared child whose TensorFlow has two logical CPUs (`run_on_two_cpus`).

Tests of signals and of several processes wait for events (a line, an exit), never for a fixed
time: `HANG_SECONDS` only bounds how long a stuck process may block the suite.

Example:
  >>> process = subprocess.Popen([sys.executable, '-m', 'official.nlp.train', ...], cwd=ROOT,
  ...                            env=subprocess_env(), stderr=subprocess.PIPE, text=True)
  >>> stderr = LineReader(process.stderr)
  >>> stderr.wait_for(r'\] step \d+/')       # training is under way
  >>> process.send_signal(signal.SIGTERM)
  >>> process.wait(timeout=HANG_SECONDS)
  >>> stderr.text()                          # everything it wrote
"""

import atexit
import contextlib
import io
import itertools
import json
import os
import re
import subprocess
import sys
import threading
import traceback
from typing import Dict, IO, List, Optional

from tests.paths import ROOT

# How long a child may take to reach its next event (a line, an exit) before the test calls it
# hung. Far above the slowest expected step on a loaded machine: a hang guard, not a speed test.
HANG_SECONDS = 300.0


def subprocess_env(**overrides: str) -> Dict[str, str]:
  """The environment of a child Python process: this one's, with the repository as PYTHONPATH
  and TensorFlow's C++ logging quiet (TF_CPP_MIN_LOG_LEVEL=2), then `overrides`."""
  env = dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL='2')
  env.update(overrides)
  return env


class LineReader:
  """Reads a child's output stream (a text pipe) to its end in a background thread, keeping every
  line, so a test can wait for a line while the child runs and still see all of the output.

  Args:
    stream: e.g. `process.stderr` of a `Popen(..., stderr=subprocess.PIPE, text=True)`.
  """

  def __init__(self, stream: IO[str]):
    self.lines: List[str] = []
    self._changed = threading.Condition()
    self._ended = False
    self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
    self._thread.start()

  def _read(self, stream: IO[str]) -> None:
    for line in stream:
      with self._changed:
        self.lines.append(line)
        self._changed.notify_all()
    with self._changed:
      self._ended = True
      self._changed.notify_all()

  def wait_for(self, pattern: str, timeout: float = HANG_SECONDS) -> re.Match:
    """The match of the first line that `re.search`es `pattern`, waiting for it up to `timeout`
    seconds; AssertionError (with the output so far) at the end of the stream or the timeout."""
    regex = re.compile(pattern)
    checked = 0

    def found_or_ended():
      nonlocal checked
      while checked < len(self.lines):
        match = regex.search(self.lines[checked])
        checked += 1
        if match:
          return match
      return self._ended

    with self._changed:
      result = self._changed.wait_for(found_or_ended, timeout=timeout)
    if isinstance(result, re.Match):
      return result
    reason = 'the output ended' if result else f'nothing after {timeout:.0f} s (hung?)'
    raise AssertionError(f'no line matching {pattern!r}: {reason}; output:\n'
                         f'{self.text(timeout=0)[-3000:]}')

  def text(self, timeout: float = HANG_SECONDS) -> str:
    """All of the output, once the stream ended (waiting up to `timeout` seconds for its end)."""
    self._thread.join(timeout)
    with self._changed:
      return ''.join(self.lines)


class _TwoCpuChild:
  """The child Python of `run_on_two_cpus`: started on the first call, ended at exit."""

  def __init__(self):
    self._lock = threading.Lock()
    self._process: Optional[subprocess.Popen] = None
    self._ids = itertools.count()

  def run(self, code: str, timeout: float) -> subprocess.CompletedProcess:
    with self._lock:
      if self._process is None or self._process.poll() is not None:
        self._start()
      request = next(self._ids)
      self._process.stdin.write(json.dumps({'id': request, 'code': code}) + '\n')
      self._process.stdin.flush()
      try:
        line = self._stdout.wait_for(rf'^RESULT {request} ', timeout=timeout).string
      except AssertionError as e:  # it died or hung: the next call starts a new child
        self.stop()
        raise AssertionError(f'{e}\nits stderr:\n{self._stderr.text(timeout=5)[-3000:]}') from None
    reply = json.loads(line.split(' ', 2)[2])
    return subprocess.CompletedProcess(['run_on_two_cpus'], reply['returncode'], reply['stdout'],
                                       reply['stderr'])

  def _start(self) -> None:
    self._process = subprocess.Popen(
        [sys.executable, '-m', 'tests.processes', '--two_cpus'], cwd=ROOT, env=subprocess_env(),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    self._stdout = LineReader(self._process.stdout)
    self._stderr = LineReader(self._process.stderr)
    atexit.register(self.stop)

  def stop(self) -> None:
    process, self._process = self._process, None
    if process is not None and process.poll() is None:
      process.stdin.close()  # the child ends at the end of its input
      try:
        process.wait(timeout=10)
      except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


_TWO_CPUS = _TwoCpuChild()


def run_on_two_cpus(code: str, timeout: float = HANG_SECONDS) -> subprocess.CompletedProcess:
  """Runs Python `code` as `python -c code` would, in a child whose TensorFlow has two logical
  CPU devices (for `MirroredStrategy` tests: they must be configured before TensorFlow starts,
  which in the test process it did).

  One child serves every call of the session (one TensorFlow import for all of them); each call
  runs in fresh globals, in the repository, with its own captured output.

  Args:
    code: Python source; it may import `tests.*` modules.
    timeout: a hang guard for this call, in seconds.

  Returns:
    A `CompletedProcess`: returncode (1 with the traceback on stderr when `code` raised),
    stdout, stderr (of `sys.stdout`/`sys.stderr`; the child's C++ logs are not in it).

  Example:
    >>> result = run_on_two_cpus("import tensorflow as tf\n"
    ...                          "print(len(tf.config.list_logical_devices('CPU')))")
    >>> result.returncode, result.stdout
    (0, '2\n')
  """
  return _TWO_CPUS.run(code, timeout)


def _serve_two_cpus() -> None:
  """The child of `run_on_two_cpus`: runs each request line of stdin, answers on stdout."""
  replies = os.fdopen(os.dup(1), 'w')
  os.dup2(2, 1)  # anything else written to fd 1 (C++ code) goes to stderr, not into the replies
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from tensorflow.python.eager import context  # pylint: disable=g-import-not-at-top
  from tests import tf_data_autotune  # pylint: disable=g-import-not-at-top
  tf_data_autotune.turn_off()
  cpu = tf.config.list_physical_devices('CPU')[0]
  for served, line in enumerate(sys.stdin):
    if served:
      # A fresh runtime, as a new process has: a second MirroredStrategy would reuse the first
      # one's collective keys, and the runtime keeps the shapes of the collectives it ran.
      context._reset_context()  # pylint: disable=protected-access
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    request = json.loads(line)
    out, err = io.StringIO(), io.StringIO()
    returncode = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
      try:
        exec(compile(request['code'], '<run_on_two_cpus>', 'exec'), {'__name__': '__main__'})  # pylint: disable=exec-used
      except SystemExit as e:
        returncode = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
      except BaseException:  # pylint: disable=broad-except
        traceback.print_exc()
        returncode = 1
    reply = {'returncode': returncode, 'stdout': out.getvalue(), 'stderr': err.getvalue()}
    replies.write(f'RESULT {request["id"]} {json.dumps(reply)}\n')
    replies.flush()


if __name__ == '__main__' and sys.argv[1:] == ['--two_cpus']:
  _serve_two_cpus()
