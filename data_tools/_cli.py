"""Flag parsing shared by the data_tools command-line programs."""

import sys
from typing import Optional, Sequence

from absl import flags


def parse_flags(flag_values: flags.FlagValues, argv: Optional[Sequence[str]], program: str) -> bool:
  """Parses `argv` (default `sys.argv`) into `flag_values`; on a bad flag prints why and the usage.

  Returns:
    False when the flags are invalid (the caller exits with status 2).
  """
  try:
    flag_values(list(sys.argv if argv is None else argv))
  except flags.Error as e:
    print(f'{program}: {e}\n\n{flag_values.main_module_help()}', file=sys.stderr)
    return False
  return True
