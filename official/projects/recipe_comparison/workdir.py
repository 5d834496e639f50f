"""The sweep's work directory: JSON files, build-once outputs, the settings a rerun must share."""

import json
import os
import shutil
from typing import Any, Callable, Dict, Mapping, Optional

from official.common import file_utils



def write_json(path: str, data: Any) -> None:
  """Writes JSON atomically (a `.partial` file renamed over `path`)."""
  os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
  file_utils.atomic_write_text(path, json.dumps(data, indent=2) + '\n')


def read_json(path: str) -> Optional[Any]:
  """The JSON at `path`, or None when there is no such file."""
  if not os.path.exists(path):
    return None
  with open(path, encoding='utf-8') as f:
    return json.load(f)


def make_once(path: str, build: Callable[[str], None]) -> str:
  """Calls `build(partial)` unless `path` exists, then renames `partial` to `path`.

  `partial` is `path + '.partial'` (a file or a directory, whichever `build` writes; a leftover
  of an interrupted build is deleted first), so `path` exists only once complete.

  Example:
    >>> make_once('/tmp/w/vocab', lambda out: build_vocab(output_dir=out))
    '/tmp/w/vocab'
  """
  if os.path.exists(path):
    return path
  partial = path + '.partial'
  if os.path.isdir(partial):
    shutil.rmtree(partial)
  elif os.path.exists(partial):
    os.remove(partial)
  os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
  build(partial)
  os.replace(partial, path)
  return path


# The flag of a setting whose key (in settings.json) is not the flag's name.
_FLAG_OF_SETTING = {'budget_minutes': 'minutes', 'train_steps': 'steps'}


def check_settings(work_dir: str, settings: Mapping[str, Any]) -> Dict[str, Any]:
  """Records the settings that make runs comparable; refuses a rerun that changes them.

  The keys are `SweepConfig.fixed_settings`'s (settings.json keeps `budget_minutes`, the flag is
  `--minutes`).

  Raises:
    ValueError: naming the flag, the work dir's value and the value given.
  """
  path = os.path.join(work_dir, 'settings.json')
  recorded = read_json(path)
  if recorded is None:
    write_json(path, dict(settings))
    return dict(settings)
  for key, value in settings.items():
    if key in recorded and recorded[key] != value:
      raise ValueError(f'--{_FLAG_OF_SETTING.get(key, key)}={value} but {work_dir} was made '
                       f'with {recorded[key]} ({path}); use another --work_dir, or --fresh to '
                       'start over')
  if set(settings) - set(recorded):  # settings newer than the work dir: recorded from now on
    recorded = dict(settings, **recorded)
    write_json(path, recorded)
  return recorded
