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

import glob as glob_module
import os
import posixpath
import shutil
import stat
from typing import Any, List, Optional, Tuple

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


def isfile(path: str) -> bool:
  """Whether `path` is an existing file, not a directory (local or remote).

  Example:
    >>> isfile('runs/tiny/vocab.txt'), isfile('runs/tiny')
    (True, False)
  """
  return file_size(path) is not None


def file_size(path: str) -> Optional[int]:
  """The size in bytes of the file `path`, or None where there is no file (missing, or a
  directory; locally, any path `os.path.isfile` says no to): one metadata request for a URL.

  Example:
    >>> file_size('out/train.tfrecord'), file_size('out/missing'), file_size('out')
    (1843200, None, None)
  """
  if not is_remote(path):
    try:
      found = os.stat(path)
    except (OSError, ValueError):  # as os.path.isfile: missing, beneath a file, unreadable
      return None
    return found.st_size if stat.S_ISREG(found.st_mode) else None
  # Function-level: as _gfile, TensorFlow only for a URL.
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  try:
    found = _gfile().stat(path)
  except tf.errors.NotFoundError:
    return None
  return None if found.is_directory else found.length


def glob(pattern: str) -> List[str]:
  """The paths matching `pattern` (`*`, `?`, `[...]`), sorted (local or remote).

  Example:
    >>> glob('gs://bucket/data/train.tfrecord-*')
    ['gs://bucket/data/train.tfrecord-00000-of-00002', 'gs://bucket/data/train.tfrecord-00001-of-00002']
  """
  if is_remote(pattern):
    return sorted(_gfile().glob(pattern))
  return sorted(glob_module.glob(pattern))


def open_file(path: str, mode: str = 'rb') -> Any:
  """`path` opened in `mode` ('rb', 'wb', 'r', 'w'): a local file object, or a `tf.io.gfile.GFile`
  for a URL. Text modes read and write UTF-8.

  Example:
    >>> with open_file('gs://bucket/run/shared.pkl', 'wb') as f:
    ...   pickle.dump(state, f)
  """
  if is_remote(path):
    return _gfile().GFile(path, mode)
  return open(path, mode) if 'b' in mode else open(path, mode, encoding='utf-8')


def replace(source: str, destination: str) -> None:
  """Renames `source` over `destination` (on one filesystem; a remote rename may be a copy and a
  delete, as on Cloud Storage).

  Example:
    >>> replace('out/.tmp/train.tfrecord', 'out/train.tfrecord')
  """
  if is_remote(source):
    _gfile().rename(source, destination, overwrite=True)
  else:
    os.replace(source, destination)


def remove(path: str) -> None:
  """Deletes the file `path` (local or remote).

  Example:
    >>> remove('out/train.tfrecord.spill')
  """
  if is_remote(path):
    _gfile().remove(path)
  else:
    os.remove(path)


def rmtree(path: str) -> None:
  """Deletes the directory `path` and everything in it; a missing directory or a failure is
  ignored (for cleaning up).

  Example:
    >>> rmtree('out/.create_pretraining_data-123.tmp')
  """
  if not is_remote(path):
    shutil.rmtree(path, ignore_errors=True)
    return
  try:
    if _gfile().exists(path):
      _gfile().rmtree(path)
  except Exception:  # pylint: disable=broad-except
    pass


def copy_to(local_path: str, path: str) -> None:
  """Copies the local file `local_path` to `path` (local or remote), replacing it.

  Example:
    >>> copy_to('/tmp/train.tfrecord-00000-of-00004', 'gs://bucket/data/train.tfrecord-00000-of-00004')
  """
  if is_remote(path):
    _gfile().copy(local_path, path, overwrite=True)
  else:
    shutil.copyfile(local_path, path)


def is_tensorflow_error(error: BaseException) -> bool:
  """Whether `error` is one of TensorFlow's (`tf.errors.*`, raised by `tf.io.gfile` for a URL:
  not an OSError, its message naming the path).

  Example:
    >>> is_tensorflow_error(tf.errors.PermissionDeniedError(None, None, 'gs://b/x: denied'))
    True
  """
  return type(error).__module__.startswith('tensorflow')


def _split_scheme(path: str) -> Tuple[str, str]:
  """`('gs://', 'bucket/a/b')` for a URL, `('', path)` for a local path."""
  if not is_remote(path):
    return '', path
  scheme, rest = path.split('://', 1)
  return scheme + '://', rest


def absolute(path: str) -> str:
  """`path` made absolute and normalized: `os.path.abspath` for a local path; a URL keeps its
  scheme and bucket, its `.` and `..` resolved (`os.path.abspath` would prefix a URL with the
  working directory).

  Example:
    >>> absolute('gs://bucket/data/../train.tfrecord')
    'gs://bucket/train.tfrecord'
  """
  scheme, rest = _split_scheme(path)
  if not scheme:
    return os.path.abspath(path)
  return scheme + posixpath.normpath(rest)


def relative(path: str, start: str) -> str:
  """`path` relative to the directory `start` (both local, or both URLs of one scheme).

  Example:
    >>> relative('gs://bucket/data/valid/v.tfrecord', 'gs://bucket/data')
    'valid/v.tfrecord'
  """
  (scheme, rest), (start_scheme, start_rest) = _split_scheme(path), _split_scheme(start)
  if not scheme and not start_scheme:
    return os.path.relpath(os.path.abspath(path), os.path.abspath(start))
  if scheme != start_scheme:
    raise ValueError(f'{path!r} is not on the filesystem of {start!r}')
  return posixpath.relpath('/' + posixpath.normpath(rest), '/' + posixpath.normpath(start_rest))


def join_relative(directory: str, name: str) -> str:
  """`directory/name` normalized (`name` relative to `directory`, `..` allowed), local or URL.

  Example:
    >>> join_relative('gs://bucket/data', '../valid/v.tfrecord')
    'gs://bucket/valid/v.tfrecord'
  """
  scheme, rest = _split_scheme(directory)
  if not scheme:
    return os.path.normpath(os.path.join(directory, name))
  return scheme + posixpath.normpath(posixpath.join(rest, name))


def read_text(path: str) -> str:
  """The UTF-8 text of the file `path` (local or remote).

  Raises:
    OSError (or TensorFlow's `NotFoundError` for a URL): the file cannot be read.
    UnicodeDecodeError: the file is not UTF-8 text.

  Example:
    >>> read_text('runs/tiny/vocab.txt').splitlines()[:2]
    ['[PAD]', '[UNK]']
  """
  with open_file(path, 'r') as f:
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
    with open_file(partial, 'w') as f:
      f.write(text)
    replace(partial, path)
  except BaseException:
    _remove_quietly(partial)
    raise


def _remove_quietly(path: str) -> None:
  """Removes `path` if it exists; a failure here must not hide the error being handled."""
  try:
    if exists(path):
      remove(path)
  except Exception:  # pylint: disable=broad-except
    pass
