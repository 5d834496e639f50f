"""`--gin_file` / `--gin_params` support; gin-config is an optional extra (`mlm-garden[gin]`).

Example:
  >>> parse_gin_flags(['extra.gin'], ['MyLayer.width = 3'])
"""

import os
from typing import Sequence

INSTALL_HINT = "pip install 'mlm-garden[gin]'"


class GinError(ValueError):
  """A one-line message about --gin_file / --gin_params (gin missing, or gin rejected them)."""


def _one_line(e: BaseException) -> str:
  return ' '.join(str(e).split()) or type(e).__name__


def parse_gin_flags(gin_files: Sequence[str], gin_params: Sequence[str]) -> None:
  """Parses the gin files, then the bindings, then finalizes gin's config.

  Args:
    gin_files: values of `--gin_file`, parsed in order.
    gin_params: values of `--gin_params` (bindings such as `'MyLayer.width = 3'`).

  Raises:
    GinError: gin-config is not installed (the message says how to install it), a file is
      missing, or gin rejects a file or binding (the message names the flag, value and gin's
      reason).

  Example:
    >>> parse_gin_flags([], ['MyLayer.width = 3'])  # MyLayer must be @gin.configurable
  """
  if not gin_files and not gin_params:
    return
  flag = '--gin_file' if gin_files else '--gin_params'
  try:
    # Function-level: gin-config is an optional dependency (the [gin] extra).
    import gin  # pylint: disable=g-import-not-at-top
  except ImportError:
    raise GinError(f'{flag} needs gin-config, which is not installed: {INSTALL_HINT}') from None
  for path in gin_files:
    if '://' not in path and not os.path.exists(path):
      raise GinError(f'--gin_file={path}: no such file')
    try:
      gin.parse_config_file(path)
    except Exception as e:  # pylint: disable=broad-except  # gin raises many types
      raise GinError(f'--gin_file={path}: gin cannot parse it: {_one_line(e)}') from e
  for binding in gin_params:
    try:
      gin.parse_config(binding)
    except Exception as e:  # pylint: disable=broad-except
      raise GinError(f'--gin_params={binding!r}: gin cannot apply it: {_one_line(e)}') from e
  try:
    gin.finalize()
  except Exception as e:  # pylint: disable=broad-except
    raise GinError(f'{flag}: gin cannot finalize the config: {_one_line(e)}') from e
