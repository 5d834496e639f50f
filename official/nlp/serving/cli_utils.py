"""Flag parsing shared by the command-line programs (serving, inference tools, data_tools)."""

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


def define_model_flags(flag_values: flags.FlagValues) -> None:
  """--model_dir, --vocab_file, --checkpoint_path and --do_lower_case of the programs that load a
  model with `inference.load_model` (a training model_dir or a SavedModel)."""
  flags.DEFINE_string('model_dir', None, 'A training model_dir (params.yaml + ckpt-N) or a '
                      'SavedModel directory from official.nlp.serving.export_savedmodel.',
                      flag_values=flag_values)
  flags.DEFINE_string('vocab_file', None, 'vocab.txt of the model (default: <model_dir>/vocab.txt '
                      'or the SavedModel\'s assets.extra/vocab.txt).', flag_values=flag_values)
  flags.DEFINE_string('checkpoint_path', None, 'Checkpoint of a training model_dir (default: its '
                      'latest).', flag_values=flag_values)
  flags.DEFINE_boolean('do_lower_case', None, 'Lower-case texts (default: as recorded with the '
                       'model, else true).', flag_values=flag_values)


def error(program: str, message: str) -> int:
  """Prints `program: error: message` to stderr; returns the exit status 1."""
  print(f'{program}: error: {message}', file=sys.stderr)
  return 1
