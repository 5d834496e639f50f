"""Input text on any filesystem: local paths, and URLs TensorFlow or Apache Beam read (gs://).

A path with a scheme (`gs://bucket/text/*.txt`, `hdfs://...`, `s3://...`, `ram://...`) is matched,
sized and read through TensorFlow's `tf.io.gfile` (imported only for such a path), or through
Beam's `FileSystems` for a scheme TensorFlow does not register (with the extra `mlm-garden[beam]`
and the scheme's Beam package, e.g. `apache-beam[gcp]`, `apache-beam[aws]`). A local path never
imports either.

Example:
  >>> match('gs://my-bucket/text/*.txt')      # sorted
  ['gs://my-bucket/text/a.txt', 'gs://my-bucket/text/b.txt']
  >>> with open_binary('gs://my-bucket/text/a.txt') as f: f.read(10)
"""

import glob
import io
import os
import re
from typing import Any, BinaryIO, Dict, List

_SCHEME = re.compile(r'^[A-Za-z][A-Za-z0-9+.-]*://')


def has_scheme(path: str) -> bool:
  """Whether `path` is a URL (`gs://...`), not a local path.

  Example:
    >>> has_scheme('gs://b/x.txt'), has_scheme('/data/x.txt')
    (True, False)
  """
  return bool(_SCHEME.match(path))


def _gfile():
  """`tf.io.gfile` (TensorFlow is a dependency; imported only for URLs)."""
  # Function-level: reading local text never imports TensorFlow.
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return tf.io.gfile


def _beam_filesystems():
  """Beam's `FileSystems` (the extra's; present once `_reader` chose it)."""
  # Function-level: Beam is an extra.
  from apache_beam.io.filesystems import FileSystems  # pylint: disable=g-import-not-at-top
  return FileSystems


# URL scheme -> 'tensorflow' or 'beam': found once per scheme (the probe may be a remote call).
_READERS: Dict[str, str] = {}


def _reader(path: str) -> str:
  """Who reads `path`: 'local', 'tensorflow' (its filesystems) or 'beam' (a scheme TensorFlow
  does not register).

  Raises:
    ValueError: neither reads the scheme here.
  """
  if not has_scheme(path):
    return 'local'
  scheme = path.split('://', 1)[0]
  if scheme not in _READERS:
    # Function-level: TensorFlow's error classes, only for URLs.
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    try:
      tf.io.gfile.exists(path)
      _READERS[scheme] = 'tensorflow'
    except tf.errors.UnimplementedError:
      try:
        _beam_filesystems().get_filesystem(path)
        _READERS[scheme] = 'beam'
      except (ImportError, ValueError):
        raise ValueError(
            f'input_file: {path!r}: neither TensorFlow nor Apache Beam reads the scheme '
            f"{scheme!r} here (for Beam: pip install 'mlm-garden[beam]' and the scheme's "
            "package, e.g. 'apache-beam[gcp]')") from None
  return _READERS[scheme]


def match(pattern: str) -> List[str]:
  """The files `pattern` names (a path or a glob), sorted; [] when none.

  Example:
    >>> match('text/*.txt')
    ['text/a.txt', 'text/b.txt']
  """
  reader = _reader(pattern)
  if reader == 'beam':
    return sorted(m.path for m in _beam_filesystems().match([pattern])[0].metadata_list)
  if reader == 'local':
    if glob.has_magic(pattern):
      return sorted(glob.glob(pattern))
    return [pattern] if os.path.isfile(pattern) else []
  gfile = _gfile()
  if glob.has_magic(pattern):
    return sorted(gfile.glob(pattern))
  return [pattern] if gfile.exists(pattern) and not gfile.isdir(pattern) else []


def size(path: str) -> int:
  """The file's size in bytes."""
  reader = _reader(path)
  if reader == 'local':
    return os.path.getsize(path)
  if reader == 'beam':
    return _beam_filesystems().match([path])[0].metadata_list[0].size_in_bytes
  return _gfile().stat(path).length


class _RawStream(io.RawIOBase):
  """A remote file object (`tf.io.gfile.GFile`, Beam's stream) as a raw binary stream, so that
  `io.BufferedReader` gives it the whole file API (`readline(limit)`, `seek`, ...)."""

  def __init__(self, stream: Any):
    super().__init__()
    self._stream = stream

  def readable(self) -> bool:
    return True

  def readinto(self, buffer) -> int:
    data = self._stream.read(len(buffer))
    buffer[:len(data)] = data
    return len(data)

  def seekable(self) -> bool:
    return True

  def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
    self._stream.seek(offset, whence)
    return self._stream.tell()

  def tell(self) -> int:
    return self._stream.tell()

  def close(self) -> None:
    if not self.closed:
      self._stream.close()
    super().close()


def open_binary(path: str) -> BinaryIO:
  """The file opened for reading bytes (`read`, `readline`, `seek`), a context manager."""
  reader = _reader(path)
  if reader == 'local':
    return open(path, 'rb')
  stream = (_beam_filesystems().open(path) if reader == 'beam'
            else _gfile().GFile(path, 'rb'))
  return io.BufferedReader(_RawStream(stream), buffer_size=1 << 20)
