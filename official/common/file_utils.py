"""File operations on local paths and on URLs (`gs://...`), for modules that must stay TF-free.

The data-creation programs and their worker processes never import TensorFlow, yet the model_dirs
that training and serving write may be remote. Each helper therefore takes either kind of path: a
local one goes through the standard library, a URL (`scheme://...`) through `tf.io.gfile`, which
is imported only then.

Example:
  >>> atomic_write_text('runs/tiny/tokenizer_config.json', '{"do_lower_case": true}\\n')
  >>> read_text('runs/tiny/tokenizer_config.json')
  '{"do_lower_case": true}\\n'
"""

import os
from typing import Any, List

# Suffix of the temporary file that `atomic_write_text` writes beside its target.
PARTIAL_SUFFIX = '.partial'


def is_remote(path: str) -> bool:
  """Whether `path` is a URL (`gs://bucket/x`) rather than a local path.

  Example:
    >>> is_remote('gs://bucket/model'), is_remote('/tmp/model')
    (True, False)
  """
  return '://' in path


def _gfile() -> Any:
  """`tf.io.gfile`, for remote paths."""
  # Function-level: keeps TensorFlow out of the start-up of the CLIs (and data-creation workers)
  # that only ever touch local paths.
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return tf.io.gfile


def exists(path: str) -> bool:
  """Whether the file or directory `path` exists (local or remote).

  Example:
    >>> exists('runs/tiny/vocab.txt')
    True
  """
  return _gfile().exists(path) if is_remote(path) else os.path.exists(path)


def isdir(path: str) -> bool:
  """Whether `path` is an existing directory (local or remote).

  Example:
    >>> isdir('runs/tiny')
    True
  """
  return _gfile().isdir(path) if is_remote(path) else os.path.isdir(path)


def listdir(path: str) -> List[str]:
  """The entry names of the directory `path` (a remote subdirectory may end in `/`).

  Example:
    >>> sorted(listdir('runs/tiny'))
    ['checkpoint', 'params.yaml', 'vocab.txt']
  """
  return _gfile().listdir(path) if is_remote(path) else os.listdir(path)


def makedirs(path: str) -> None:
  """Creates the directory `path` and its missing parents (an existing one is kept).

  Example:
    >>> makedirs('runs/tiny/assets')
  """
  if is_remote(path):
    _gfile().makedirs(path)
  else:
    os.makedirs(path, exist_ok=True)


def read_text(path: str) -> str:
  """The UTF-8 text of the file `path` (local or remote).

  Raises:
    OSError (or TensorFlow's `NotFoundError` for a URL): the file cannot be read.
    UnicodeDecodeError: the file is not UTF-8 text.

  Example:
    >>> read_text('runs/tiny/vocab.txt').splitlines()[:2]
    ['[PAD]', '[UNK]']
  """
  if is_remote(path):
    with _gfile().GFile(path, 'r') as f:
      return f.read()
  with open(path, 'r', encoding='utf-8') as f:
    return f.read()


def atomic_write_text(path: str, text: str) -> None:
  """Writes `text` (UTF-8) to `path` so that readers see the old file or the new one, never a part.

  The text goes to `path + '.partial'` beside the target, which is then renamed over `path`; on
  any failure (a full disk, an interrupt) the partial file is removed and the error re-raised, so
  `path` keeps its earlier content.

  Args:
    path: the file to write (local or remote); its directory must exist.
    text: the whole new content.

  Example:
    >>> atomic_write_text('out/train.metadata.json', json.dumps(metadata, indent=2) + '\\n')
  """
  partial = path + PARTIAL_SUFFIX
  try:
    if is_remote(path):
      with _gfile().GFile(partial, 'w') as f:
        f.write(text)
      _gfile().rename(partial, path, overwrite=True)
    else:
      with open(partial, 'w', encoding='utf-8') as f:
        f.write(text)
      os.replace(partial, path)
  except BaseException:
    _remove_quietly(partial)
    raise


def _remove_quietly(path: str) -> None:
  """Removes `path` if it exists; a failure here must not hide the error being handled."""
  try:
    if is_remote(path):
      if _gfile().exists(path):
        _gfile().remove(path)
    elif os.path.exists(path):
      os.remove(path)
  except Exception:  # pylint: disable=broad-except
    pass
