"""Hides TensorFlow's C++ start-up lines from the command-line tools' stderr.

Importing TensorFlow 2.21 prints lines such as `WARNING: All log messages before
absl::InitializeLog() is called ...`, `I0000 ... port.cc] oneDNN custom operations are on`,
`cudart_stub.cc] Could not find cuda drivers`, `cpu_feature_guard.cc] This TensorFlow binary is
optimized ...` and `cuda_platform.cc] failed call to cuInit`. Most of them are written before
TensorFlow reads `TF_CPP_MIN_LOG_LEVEL`, so that variable does not hide them (checked: even `3`
leaves the first three). `quiet_tensorflow` therefore routes file descriptor 2 through a pipe whose
reader thread drops exactly those start-up lines and passes every other byte on unchanged and at
once (progress bars without a newline included).

Call it at the top of a CLI entry module, before TensorFlow is imported:

  from official.common import quiet
  quiet.quiet_cli(__name__)
  import tensorflow as tf

`--verbose` on the command line (removed from `sys.argv` before the flags are parsed) or the
environment variable `MLM_VERBOSE=1` keeps the start-up lines; `define_verbose_flag` lists it in
a tool's `--help`.

`quiet_cli` also gives every tool one log format: Python `logging` records of level INFO and above
go to stderr with absl's prefix (`use_absl_logging`), e.g.

  I1124 07:03:20.801013 139976637619072 progress.py:121] step 5/20 | loss 6.7534 | ...

Status and progress lines are logged this way; stdout carries only a tool's results.
"""

import atexit
import logging
import multiprocessing
import os
import re
import select
import sys
import threading
from typing import List, Optional

VERBOSE_FLAG = '--verbose'
VERBOSE_ENV = 'MLM_VERBOSE'
VERBOSE_HELP = ("Show TensorFlow's C++ start-up lines and its Python INFO logs (hidden by "
                'default); the environment variable MLM_VERBOSE=1 does the same.')
# Loggers whose INFO lines are chatter for a tool's user (per-save checkpoint notes, SavedModel
# asset lines): WARNING and above only, unless --verbose.
_CHATTY_LOGGERS = ('tensorflow', 'absl')

# The start-up lines; anything else (including every other C++ log line) passes.
_NOISE = re.compile(
    r'^(WARNING: All log messages before absl::InitializeLog\(\) is called'
    r'|[IWE]\d{4} [\d:.]+ +\d+ (?:'
    r'port\.cc:\d+\] oneDNN custom operations are on'
    r'|cudart_stub\.cc:\d+\] '
    r'|cpu_feature_guard\.cc:\d+\] '
    r'|cuda_platform\.cc:\d+\] failed call to cuInit'
    r'|cuda_(?:dnn|fft|blas)\.cc:\d+\] Unable to register'
    r'|computation_placer\.cc:\d+\] computation placer already registered))')
# The second line of cpu_feature_guard's message.
_CONTINUATION = re.compile(r'^To enable the following instructions: .*rebuild TensorFlow')
# Beginnings that may grow into a noise line: such a partial line is held back briefly.
_MAYBE_NOISE = ('WARNING: All log messages', 'To enable the following')
_MAYBE_NOISE_RE = re.compile(r'^[IWE]\d{0,4}(?: [\d:.]*)?(?: +\d*)?(?: \S*)?$|^[IWE]\d{4} ')
_HOLD_SECONDS = 0.2

_state = {'installed': False}


def verbose_requested(argv: Optional[List[str]] = None) -> bool:
  """Whether the start-up lines should stay: `--verbose` in `argv` or `MLM_VERBOSE=1`.

  Args:
    argv: the command line (default `sys.argv`).

  Returns:
    True when the user asked for TensorFlow's start-up lines.

  Example:
    >>> verbose_requested(['mlm-train', '--verbose'])
    True
  """
  argv = sys.argv if argv is None else argv
  env = os.environ.get(VERBOSE_ENV, '').strip().lower()
  return VERBOSE_FLAG in argv[1:] or env in ('1', 'true', 'yes')


def is_noise(line: str) -> bool:
  """Whether `line` (without its newline) is one of TensorFlow's start-up lines.

  Example:
    >>> is_noise('E0000 00:00:17.1  28994 cuda_platform.cc:52] failed call to cuInit: ...')
    True
  """
  return bool(_NOISE.match(line) or _CONTINUATION.match(line))


def _may_become_noise(partial: str) -> bool:
  if any(p.startswith(partial) or partial.startswith(p) for p in _MAYBE_NOISE):
    return True
  return bool(_MAYBE_NOISE_RE.match(partial))


def _pump(read_fd: int, out_fd: int) -> None:
  """Copies `read_fd` to `out_fd`, dropping start-up lines; returns at end of file."""
  pending = b''
  previous_dropped = False
  while True:
    timeout = _HOLD_SECONDS if pending else None
    ready, _, _ = select.select([read_fd], [], [], timeout)
    if not ready:  # a held partial line did not grow into a noise line: let it through
      os.write(out_fd, pending)
      pending = b''
      continue
    chunk = os.read(read_fd, 65536)
    if not chunk:
      if pending:
        os.write(out_fd, pending)
      return
    pending += chunk
    out = []
    *lines, pending = pending.split(b'\n')
    for raw in lines:
      text = raw.decode('utf-8', 'replace')
      drop = bool(_NOISE.match(text)) or (previous_dropped and bool(_CONTINUATION.match(text)))
      previous_dropped = drop
      if not drop:
        out.append(raw + b'\n')
    if pending and not _may_become_noise(pending.decode('utf-8', 'replace')):
      out.append(pending)
      pending = b''
    if out:
      os.write(out_fd, b''.join(out))


def quiet_tensorflow(verbose: bool = False) -> None:
  """Hides TensorFlow's C++ start-up lines from this process's stderr (call before importing TF).

  Sets `TF_CPP_MIN_LOG_LEVEL=2` unless it is set (C++ errors still show) and filters file
  descriptor 2 through a pipe that drops the start-up lines only. Does nothing when `verbose`,
  when called twice, or where file descriptors cannot be redirected.

  Args:
    verbose: keep everything (the `--verbose` flag / `MLM_VERBOSE=1`).

  Example:
    >>> quiet_tensorflow(verbose=False)
    >>> import tensorflow as tf  # no start-up lines
  """
  if verbose or _state['installed']:
    return
  os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
  try:
    sys.stderr.flush()
    original = os.dup(2)
    read_fd, write_fd = os.pipe()
    os.dup2(write_fd, 2)
    os.close(write_fd)
  except (OSError, AttributeError, ValueError):
    return
  os.set_inheritable(original, False)
  thread = threading.Thread(target=_pump, args=(read_fd, original), name='quiet-stderr',
                            daemon=True)
  thread.start()
  _state['installed'] = True

  def restore() -> None:
    """At exit: sends what is left through the filter, then writes to the real stderr again."""
    try:
      sys.stderr.flush()
    except (OSError, ValueError):
      pass
    os.dup2(original, 2)  # closes the pipe's last write end: the reader sees end of file
    thread.join(timeout=2.0)

  atexit.register(restore)


class _StderrHandler(logging.StreamHandler):
  """A stream handler writing to the current `sys.stderr` (also after it is replaced)."""

  def __init__(self):
    super().__init__(sys.stderr)

  def emit(self, record: logging.LogRecord) -> None:
    self.stream = sys.stderr
    super().emit(record)


def use_absl_logging(level: int = logging.INFO, verbose: bool = False) -> None:
  """Sends Python `logging` records of `level` and above to stderr in absl's format.

  Adds one handler to the root logger (once; `absl.app.run` later swaps it for absl's own
  handler, which writes the same format) and, unless `verbose`, keeps the `tensorflow` and `absl`
  loggers at WARNING. The tools call it through `quiet_cli`; a notebook or script using the
  Python API may call it to see the training progress lines.

  Args:
    level: the lowest level shown.
    verbose: also show the INFO lines of TensorFlow and absl.

  Example:
    >>> use_absl_logging()
    >>> logging.info('step %d', 5)  # stderr: I1124 07:03:20.801013 1399 x.py:1] step 5
  """
  # Function-level: CLIs import this module before anything else; absl loads when asked for.
  from absl import logging as absl_logging  # pylint: disable=g-import-not-at-top
  root = logging.getLogger()
  if not any(isinstance(h, (_StderrHandler, absl_logging.ABSLHandler)) for h in root.handlers):
    handler = _StderrHandler()
    handler.setFormatter(absl_logging.PythonFormatter())
    root.addHandler(handler)
  root.setLevel(level)
  if not verbose:
    for name in _CHATTY_LOGGERS:
      logging.getLogger(name).setLevel(logging.WARNING)


def define_verbose_flag(flag_values) -> None:
  """Defines the boolean `--verbose` in `flag_values` (once) so that `--help` lists it.

  `quiet_cli` reads and removes `--verbose` before the flags are parsed; the flag is defined for
  the help text and so that a `main(argv)` called in-process accepts it.

  Args:
    flag_values: an `absl.flags.FlagValues` (e.g. `flags.FLAGS`).

  Example:
    >>> fv = flags.FlagValues(); define_verbose_flag(fv)
    >>> 'verbose' in fv
    True
  """
  # Function-level: CLIs import this module before anything else; absl loads when asked for.
  from absl import flags  # pylint: disable=g-import-not-at-top
  if 'verbose' not in flag_values:
    flags.DEFINE_bool('verbose', False, VERBOSE_HELP, flag_values=flag_values)


def quiet_cli(module_name: str, argv: Optional[List[str]] = None) -> None:
  """`quiet_tensorflow` for a CLI entry module, when it is running as the program.

  Active when `module_name` is `'__main__'` (`python -m ...`) or the program is an `mlm-*` console
  script, and not in a multiprocessing worker; a plain import (e.g. by tests) changes nothing.
  Removes `--verbose` from `argv` so that the tool's own flag parser does not see it, and logs
  in absl's format to stderr (`use_absl_logging`).

  Args:
    module_name: the caller's `__name__`.
    argv: the command line to read and edit (default `sys.argv`).

  Example:
    >>> quiet_cli(__name__)  # at the top of official/nlp/tools/fill_mask.py
  """
  argv = sys.argv if argv is None else argv
  program = os.path.basename(argv[0]) if argv else ''
  if module_name != '__main__' and not program.startswith('mlm-'):
    return
  if multiprocessing.parent_process() is not None:  # a worker: its parent filters already
    return
  verbose = verbose_requested(argv)
  while VERBOSE_FLAG in argv[1:]:
    argv.remove(VERBOSE_FLAG)
  quiet_tensorflow(verbose)
  use_absl_logging(verbose=verbose)
