"""Flag parsing shared by the serving and inference command-line programs."""

import sys
from typing import Optional, Sequence

from absl import flags

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
    2 for an invalid flag (why, and the flags, on stderr).
  """
  argv = list(sys.argv if argv is None else argv)
  if any(arg in _HELP for arg in argv[1:]):
    print(f'{usage.strip()}\n\nflags:\n{flag_values.get_help()}')
    return 0
  try:
    flag_values(argv)
  except flags.Error as e:
    print(f'{program}: {e}\n\nflags:\n{flag_values.get_help()}', file=sys.stderr)
    return 2
  return None


def error(program: str, message: str) -> int:
  """Prints `program: error: message` to stderr; returns the exit status 1."""
  print(f'{program}: error: {message}', file=sys.stderr)
  return 1
