r"""Runs a command-line program's `main` in this process: its output, logs and exit code.

A child Python process imports TensorFlow again (5-10 s); calling `main` here does not. Two calls:

- `run_app(main, argv)` for an absl program started with `app.run(main)` (flags in the global
  `flags.FLAGS`, e.g. `official/nlp/train.py`): parses `argv` (program name first) as `app.run`
  does, then calls `main`.
- `call_main(main, argv)` for a `main(argv)` that parses `argv` itself (argparse, or its own
  `flags.FlagValues` through `official.common.cli_utils.parse_flags`); `argv` is exactly what
  `main` gets.

Both return a `CliResult` with `subprocess.CompletedProcess`'s field names: `returncode` (what the
process would exit with), `stdout` and `stderr` (with the `logging` records of INFO and above in
absl's format, as the tools print them; `--verbose` in `argv` adds DEBUG), plus `value` (`main`'s
return value: an int or None is the exit status, anything else is kept, with status 0).

Global state a program may change is restored afterwards: `flags.FLAGS` (also reset to their
defaults before the run, as in a fresh process), `sys.argv`, every logger's level, the root
logger's handlers, TensorFlow's `run_functions_eagerly` and Keras' global dtype policy. An
exception other than `SystemExit` (and absl's `UsageError`) propagates: where the program would
die with a traceback, the test fails with it.

What stays out of reach in-process: file descriptor 2 (TensorFlow's C++ log lines), signals,
resource limits, another process holding a lock. Tests of those start a real process
(`tests/processes.py`).

Example:
  >>> from official.nlp import train
  >>> result = run_app(train.main, ['train', '--experiment=bert/pretraining'])
  >>> result.returncode, result.stderr
  (1, 'error: --model_dir is required\n')
  >>> from official.nlp.tools import fill_mask
  >>> call_main(fill_mask.main, ['fill_mask', '--help']).returncode
  0
"""

import contextlib
import dataclasses
import io
import logging
import os
import sys
from typing import Any, Callable, Dict, Iterator, List, Sequence, Tuple

from absl import app
from absl import flags
from absl import logging as absl_logging

# Loggers the tools keep at WARNING unless --verbose (as `official.common.quiet.quiet_cli` does).
_CHATTY_LOGGERS = ('tensorflow', 'absl')


@dataclasses.dataclass
class CliResult:
  """What a program run produced.

  Attributes:
    returncode: the exit status (0 on success; as `sys.exit` maps `main`'s value or SystemExit).
    stdout: everything written to `sys.stdout`.
    stderr: everything written to `sys.stderr`, with the log records in absl's format, e.g.
      `I1124 07:03:20.801013 1399 progress.py:121] step 5/20 | loss 6.7534 | ...`.
    value: `main`'s return value (None when it exited through SystemExit).
  """
  returncode: int
  stdout: str
  stderr: str
  value: Any = None


def run_app(main: Callable[[List[str]], Any], argv: Sequence[str]) -> CliResult:
  """Runs `main` as `absl.app.run(main, argv)` would, in this process.

  The global `flags.FLAGS` are reset to their defaults and parsed from `argv` (a bad flag: the
  `FATAL Flags parsing error` lines and exit status 1; `--help`/`--helpfull`: the usage on stdout
  and status 1, as absl does), then `main(remaining_argv)` runs: its return value or SystemExit is
  the exit status, and an `app.UsageError` prints the usage and the error to stderr. The flags are
  restored afterwards.

  Args:
    main: the program's absl main function, e.g. `official.nlp.train.main`.
    argv: the command line, program name first, e.g. `['train', '--mode=train']`.

  Returns:
    The `CliResult`.

  Example:
    >>> result = run_app(train.main, ['train', '--helpfull'])
    >>> result.returncode, '--experiment' in result.stdout
    (1, True)
  """
  argv = list(argv)
  usage = _usage_of(main)

  def parse_and_run():
    app.define_help_flags()  # --help, --helpfull, --only_check_args: as app.run defines them
    remaining = app.parse_flags_with_usage(argv)
    if flags.FLAGS.only_check_args:
      sys.exit(0)
    if flags.FLAGS['verbosity'].using_default_value:
      flags.FLAGS.verbosity = 0  # app.run's INFO default
    try:
      return main(remaining)
    except app.UsageError as error:
      usage(shorthelp=True, detailed_error=error, exitcode=error.exitcode)

  with _patched(app, 'usage', usage):
    return _run(parse_and_run, argv)


def call_main(main: Callable[[List[str]], Any], argv: Sequence[str]) -> CliResult:
  """Runs `main(argv)` in this process, as `sys.exit(main(argv))` in the program would.

  For a `main` that parses `argv` itself: argparse (without the program name) or
  `cli_utils.parse_flags` (program name first). An int (or None: 0) returned or given to
  SystemExit is the exit status; argparse's errors exit 2 with the usage on stderr.

  Args:
    main: the program's main function, e.g. `official.nlp.tools.fill_mask.main`.
    argv: `main`'s argument.

  Returns:
    The `CliResult`.

  Example:
    >>> result = call_main(demo.main, ['--train_steps=0'])
    >>> result.returncode, 'must be at least 1' in result.stderr
    (2, True)
  """
  argv = list(argv)
  # sys.argv[0] as `python path/to/program.py` sets it (argparse names the program after it).
  module = sys.modules.get(getattr(main, '__module__', None))
  program = os.path.basename(getattr(module, '__file__', None) or 'main')
  return _run(lambda: main(argv), [program, *argv])


def _run(body: Callable[[], Any], sys_argv: List[str]) -> CliResult:
  """Calls `body()` with `sys.argv` set to `sys_argv`, the output captured and global state
  saved and restored."""
  out, err = io.StringIO(), io.StringIO()
  value, code = None, 0
  with _restored_state(sys_argv), _captured_logs(err, verbose='--verbose' in sys_argv[1:]):
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
      try:
        value = body()
        code = _exit_status(value if _is_status(value) else None, err)
      except SystemExit as e:
        code = _exit_status(e.code, err)
  return CliResult(returncode=code, stdout=out.getvalue(), stderr=err.getvalue(), value=value)


def _is_status(value: Any) -> bool:
  return value is None or isinstance(value, int)


def _exit_status(code: Any, err: io.StringIO) -> int:
  """The process's exit status for `sys.exit(code)`; like Python, writes a non-int to stderr."""
  if code is None:
    return 0
  if isinstance(code, int):
    return int(code)
  print(code, file=err)
  return 1


@contextlib.contextmanager
def _captured_logs(stream: io.StringIO, verbose: bool) -> Iterator[None]:
  """Sends `logging` records to `stream` in absl's format, instead of to the terminal."""
  root = logging.getLogger()
  # Handlers writing to the terminal (absl's, quiet's) stay out; pytest's caplog keeps its records.
  silenced = [h for h in root.handlers if _writes_to_terminal(h)]
  handler = logging.StreamHandler(stream)
  handler.setFormatter(absl_logging.PythonFormatter())
  for h in silenced:
    root.removeHandler(h)
  root.addHandler(handler)
  root.setLevel(logging.DEBUG if verbose else logging.INFO)
  for name in _CHATTY_LOGGERS:
    logging.getLogger(name).setLevel(logging.NOTSET if verbose else logging.WARNING)
  try:
    yield
  finally:
    root.removeHandler(handler)
    for h in silenced:
      root.addHandler(h)


def _writes_to_terminal(handler: logging.Handler) -> bool:
  """absl's handler and stream handlers to a terminal or pipe; not pytest's (a StringIO), not a
  log file."""
  if isinstance(handler, absl_logging.ABSLHandler):
    return True
  return (isinstance(handler, logging.StreamHandler) and
          not isinstance(handler, logging.FileHandler) and
          not isinstance(handler.stream, io.StringIO))


@contextlib.contextmanager
def _restored_state(sys_argv: List[str]) -> Iterator[None]:
  """Resets the global flags to their defaults, then restores them, `sys.argv`, logger levels,
  TensorFlow's `run_functions_eagerly` and Keras' dtype policy."""
  fv = flags.FLAGS
  saved_flags = {name: _flag_state(fv[name]) for name in list(fv)}
  was_parsed = fv.is_parsed()
  for name in list(fv):  # a fresh process's defaults (FlagValues.unparse_flags also logs a line)
    fv[name].unparse()
  _mark_parsed(fv, False)
  saved_argv = sys.argv
  saved_levels = _logger_levels()
  saved_tf = _tf_state()
  sys.argv = list(sys_argv)
  try:
    yield
  finally:
    sys.argv = saved_argv
    for name in list(fv):
      flag = fv[name]
      if name not in saved_flags:  # defined during the run: kept, at its default
        flag.unparse()
        continue
      state = saved_flags[name]
      if flag.value != state['_value']:
        flag.value = state['_value']  # through the setter (verbosity sets absl's log level)
      flag.__dict__ = state
    _mark_parsed(fv, was_parsed)
    for logger, level in saved_levels:
      logger.setLevel(level)
    _set_tf_state(saved_tf)


def _mark_parsed(fv: flags.FlagValues, parsed: bool) -> None:
  # No public call marks a FlagValues unparsed without resetting (and logging).
  fv.__dict__['__flags_parsed'] = parsed


def _flag_state(flag: flags.Flag) -> Dict[str, Any]:
  state = flag.__dict__.copy()
  state['_value'] = flag.value
  state['validators'] = list(flag.validators)
  return state


def _logger_levels() -> List[Tuple[logging.Logger, int]]:
  loggers = [logging.getLogger()] + [
      logger for logger in list(logging.Logger.manager.loggerDict.values())
      if isinstance(logger, logging.Logger)]
  return [(logger, logger.level) for logger in loggers]


def _tf_state() -> Dict[str, Any]:
  """TensorFlow's global settings a run may change (none when it is not imported yet)."""
  state = {}
  if 'tensorflow' in sys.modules:
    state['eager'] = sys.modules['tensorflow'].config.functions_run_eagerly()
  if 'tf_keras' in sys.modules:
    state['policy'] = sys.modules['tf_keras'].mixed_precision.global_policy().name
  return state


def _set_tf_state(state: Dict[str, Any]) -> None:
  if 'tensorflow' in sys.modules:
    sys.modules['tensorflow'].config.run_functions_eagerly(state.get('eager', False))
  if 'tf_keras' in sys.modules:
    policy = sys.modules['tf_keras'].mixed_precision
    if policy.global_policy().name != state.get('policy', 'float32'):
      policy.set_global_policy(state.get('policy', 'float32'))


@contextlib.contextmanager
def _patched(owner: Any, name: str, value: Any) -> Iterator[None]:
  saved = getattr(owner, name)
  setattr(owner, name, value)
  try:
    yield
  finally:
    setattr(owner, name, saved)


def _usage_of(main: Callable[..., Any]) -> Callable[..., None]:
  """`absl.app.usage` for `main`'s program: its module's docstring and key flags (absl's own
  takes them from `__main__`, here the test runner)."""
  module_name = getattr(main, '__module__', None)

  def usage(shorthelp=False, writeto_stdout=False, detailed_error=None, exitcode=None):
    stream = sys.stdout if writeto_stdout else sys.stderr
    module = sys.modules.get(module_name)
    doc = (module.__doc__ if module else None) or f'\nUSAGE: {sys.argv[0]} [flags]\n'
    flag_text = (flags.FLAGS.module_help(module_name) if shorthelp else
                 flags.FLAGS.get_help())
    stream.write(doc)
    if flag_text:
      stream.write('\nflags:\n')
      stream.write(flag_text)
    stream.write('\n')
    if detailed_error is not None:
      stream.write(f'\n{detailed_error}\n')
    if exitcode is not None:
      sys.exit(exitcode)

  return usage
