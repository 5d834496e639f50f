"""What the command-line programs share (serving, inference tools, data_tools): flag parsing,
one-line errors (`error`, exit 1; 2 for a bad flag), and checks of output paths made before any
expensive work (`check_output_dir`, `check_output_file`).

Errors a user can cause are raised as `ValueError` or `OSError` (`USER_ERRORS`) by the library
code, with the offending path or flag, what was expected and what was found; a program's `main`
catches them and prints them with `error`:

  try:
    cli_utils.check_output_dir(fv.output_dir, '--output_dir', overwrite=fv.overwrite)
    ...
  except cli_utils.USER_ERRORS as e:
    return cli_utils.error(PROGRAM, cli_utils.message_of(e))
"""

import errno
import importlib
import os
import sys
from typing import Callable, List, Mapping, Optional, Sequence

from absl import flags

from official.common import file_utils
from official.common import quiet

# What a user can cause (bad paths, permissions, a full disk, corrupt or wrong files): reported in
# one line by the programs; anything else is a bug and keeps its traceback.
USER_ERRORS = (ValueError, OSError)
_SHOWN_ENTRIES = 5
# What was expected, by errno, for `message_of`.
_EXPECTED = {
    errno.ENOSPC: '; expected room for the output (free some space or choose another path)',
    errno.EACCES: '; expected a path this user may read or write',
    errno.EPERM: '; expected a path this user may read or write',
    errno.EROFS: '; expected a writable file system',
    errno.ENOENT: '; expected an existing path',
    errno.ENOTDIR: '; expected a directory there, not a file',
    errno.EISDIR: '; expected a file, not a directory',
}

_HELP = ('--help', '-h', '-help', '--helpfull')


def parse_flags(flag_values: flags.FlagValues, argv: Optional[Sequence[str]], program: str,
                usage: str = '') -> Optional[int]:
  """Parses `argv` (default `sys.argv`) into `flag_values`.

  Args:
    flag_values: the program's flags.
    argv: the command line, program name first.
    program: the name printed in messages.
    usage: printed before the flags by `--help`.

  Returns:
    None when the program should run; else its exit status: 0 after `--help` (usage on stdout),
    2 for an invalid flag (one line on stderr naming the flag; `--help` lists them all).
  """
  quiet.define_verbose_flag(flag_values)  # listed by --help (quiet_cli consumes it)
  argv = list(sys.argv if argv is None else argv)
  if any(arg in _HELP for arg in argv[1:]):
    print(f'{usage.strip()}\n\nflags:\n{flag_values.get_help()}')
    return 0
  try:
    flag_values(argv)
  except flags.Error as e:
    return error(program, f'{e} (--help lists the flags)', status=2)
  return None


def renamed_flags(argv: Sequence[str], renamed: Mapping[str, str], program: str) -> List[str]:
  """`argv` with the old names of renamed flags replaced by the new, one notice per old name.

  The tools share one name per concept (`--output_dir` for an output directory, `--precision`,
  `--minutes`, `--seed`); an old spelling still works and says so on stderr in one line.

  Args:
    argv: the command line (the program name first, or not: every item is looked at).
    renamed: old name -> new name, without dashes (`{'train_minutes': 'minutes'}`).
    program: the name printed first.

  Returns:
    The command line with `--old`, `--old=value` (and absl's `--noold`) spelt the new way.

  Example:
    >>> renamed_flags(['demo', '--train_minutes=2'], {'train_minutes': 'minutes'}, 'demo')
    ['demo', '--minutes=2']   # and on stderr: demo: note: --train_minutes is now --minutes
  """
  result, noted = [], set()
  for position, arg in enumerate(argv):
    if arg == '--':  # what follows is arguments, not flags
      return result + list(argv[position:])
    new_arg = arg
    if arg.startswith('--'):
      name, sep, value = arg[2:].partition('=')
      negated = name.startswith('no') and name[2:] in renamed
      old = name[2:] if negated else name
      if old in renamed:
        new_arg = f"--{'no' if negated else ''}{renamed[old]}{sep}{value}"
        if old not in noted:
          noted.add(old)
          print(f'{program}: note: --{old} is now --{renamed[old]} (the old name still works)',
                file=sys.stderr)
    result.append(new_arg)
  return result


def define_model_flags(flag_values: flags.FlagValues) -> None:
  """Defines --model_dir, --vocab_file, --checkpoint_path and --do_lower_case in `flag_values`.

  They are the flags of the programs that load a model with `inference.load_model` (a training
  model_dir or a SavedModel).

  Args:
    flag_values: the program's flags.

  Example:
    >>> fv = flags.FlagValues()
    >>> define_model_flags(fv)
  """
  flags.DEFINE_string('model_dir', None, 'A training model_dir (params.yaml + ckpt-N) or a '
                      'SavedModel directory from official.nlp.serving.export_savedmodel.',
                      flag_values=flag_values)
  flags.DEFINE_string('vocab_file', None, 'vocab.txt of the model (default: <model_dir>/vocab.txt '
                      'or the SavedModel\'s assets.extra/vocab.txt).', flag_values=flag_values)
  flags.DEFINE_string('checkpoint_path', None, 'Checkpoint of a training model_dir (default: its '
                      'latest).', flag_values=flag_values)
  flags.DEFINE_boolean('do_lower_case', None, 'Lower-case texts (default: as recorded with the '
                       'model, else true).', flag_values=flag_values)


def import_experiment_modules(modules: Sequence[str]) -> None:
  """Imports each of `modules` for what it registers (`--experiment_module`).

  Raises:
    ValueError: a module that cannot be imported, naming the flag and the reason.

  Example:
    >>> import_experiment_modules(['official.projects.recipe_comparison.ablation_encoder'])
  """
  for module in modules:
    try:
      importlib.import_module(module)
    except ImportError as e:
      raise ValueError(f'--experiment_module={module}: cannot import it: {e}') from e


def one_line(message: str) -> str:
  """`message` with every run of whitespace (line breaks included) as one space.

  Example:
    >>> one_line('bad   thing  here')
    'bad thing here'
  """
  return ' '.join(str(message).split())


def message_of(e: BaseException) -> str:
  """The one-line text of a user error; an `OSError` as `<path>: <reason>` (e.g. a full disk).

  Example:
    >>> message_of(PermissionError(13, 'Permission denied', '/data/out.npy'))
    '/data/out.npy: permission denied; expected a path this user may read or write (errno 13)'
  """
  if isinstance(e, OSError) and e.strerror:
    where = f'{e.filename}: ' if e.filename else ''
    reason = e.strerror[0].lower() + e.strerror[1:]
    reason += _EXPECTED.get(e.errno, '')
    return one_line(f'{where}{reason} (errno {e.errno})')
  return one_line(str(e))


def error(program: str, message: str, status: int = 1) -> int:
  """Prints `program: error: message` on one line to stderr; returns `status`.

  Args:
    program: the name printed first.
    message: what went wrong (line breaks are folded into spaces).
    status: the exit status: 1 for an error, 2 for a bad flag.

  Example:
    >>> return cli_utils.error('fill_mask', '--seq_length=64 exceeds ...', status=2)
  """
  print(f'{program}: error: {one_line(message)}', file=sys.stderr)
  return status


def _check_parent_writable(path: str, flag: str) -> None:
  """The nearest existing ancestor of `path` must be a directory we may write in (local paths)."""
  if file_utils.is_remote(path):
    return
  parent = os.path.dirname(os.path.abspath(path))
  while not os.path.exists(parent):
    parent = os.path.dirname(parent)
  if not os.path.isdir(parent):
    raise ValueError(f'{flag}={path}: {parent} is a file; expected a directory there')
  if not os.path.exists(path) and not os.access(parent, os.W_OK | os.X_OK):
    raise ValueError(f'{flag}={path}: cannot create it in {parent} (not writable); expected a '
                     'writable location')


def check_output_dir(path: str, flag: str, overwrite: bool = False,
                     replaceable: Optional[Callable[[str], bool]] = None) -> bool:
  """Checks, before any work, that a program may write the directory `path`.

  Args:
    path: the output directory (local or a `tf.io.gfile` URL).
    flag: the flag that named it (e.g. `--output_dir`), for the message.
    overwrite: whether the user passed `--overwrite`.
    replaceable: with `overwrite`, which non-empty directories may be replaced (default: any);
      e.g. only an earlier export.

  Returns:
    Whether `path` exists and is not empty (an earlier output that `overwrite` allows to replace).

  Raises:
    ValueError: `path` is a file, is not writable, or is a non-empty directory without
      `overwrite` (or one that `replaceable` refuses), naming the flag, the path and what was
      found.

  Example:
    >>> check_output_dir('exports/tiny', '--output_dir', overwrite=False)
    False
  """
  if not path:
    raise ValueError(f'{flag} is empty; expected a directory')
  if file_utils.exists(path) and not file_utils.isdir(path):
    raise ValueError(f'{flag}={path}: a file; expected a directory (new or empty)')
  _check_parent_writable(path, flag)
  if not file_utils.exists(path):
    return False
  if not file_utils.is_remote(path) and not os.access(path, os.W_OK | os.X_OK):
    raise ValueError(f'{flag}={path}: not writable; expected a writable directory')
  entries = sorted(file_utils.listdir(path))
  if not entries:
    return False
  shown = ', '.join(e.rstrip('/') for e in entries[:_SHOWN_ENTRIES])
  shown += ', ...' if len(entries) > _SHOWN_ENTRIES else ''
  if not overwrite:
    raise ValueError(f'{flag}={path}: not empty (holds {shown}); expected a new or empty '
                     'directory, or pass --overwrite to replace it')
  if replaceable is not None and not replaceable(path):
    raise ValueError(f'{flag}={path}: holds {shown}, which --overwrite does not replace '
                     '(not an earlier output of this program); expected a new or empty '
                     'directory')
  return True


def check_output_file(path: str, flag: str, overwrite: bool = False) -> None:
  """Checks, before any work, that a program may write the file `path` (`-`: stdout, always).

  Args:
    path: the output file (local or a `tf.io.gfile` URL), or `-` for stdout.
    flag: the flag that named it (e.g. `--output_file`), for the message.
    overwrite: whether the user passed `--overwrite`.

  Raises:
    ValueError: `path` is a directory, its parent is a file or not writable, or the file exists
      without `overwrite`.

  Example:
    >>> check_output_file('embeddings.npy', '--output_file', overwrite=True)
  """
  if path == '-':
    return
  if not path:
    raise ValueError(f'{flag} is empty; expected a file path')
  if file_utils.isdir(path):
    raise ValueError(f'{flag}={path}: a directory; expected a file path')
  _check_parent_writable(path, flag)
  if file_utils.exists(path):
    if not overwrite:
      raise ValueError(f'{flag}={path}: exists; expected a new file, or pass --overwrite to '
                       'replace it')
    if not file_utils.is_remote(path) and not os.access(path, os.W_OK):
      raise ValueError(f'{flag}={path}: exists and is not writable; expected a writable file')
