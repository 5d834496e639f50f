r"""Child Python processes in tests: their environment, a hang guard and their output lines.

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

import os
import re
import threading
from typing import Dict, IO, List

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
