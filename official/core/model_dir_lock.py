"""One writer per model_dir: a lock file (`model_dir/.mlm_garden.lock`) naming its holder.

Training takes the lock before writing anything into its `model_dir` and releases it when it
ends (also on an exception, and at interpreter exit). A second training run on the same
directory is refused with one line naming the holder (host, pid, start time). A lock left by a
process of this host that is no longer running (killed, crashed) is stale: it is taken over with
a warning. The lock is re-entrant within one process (e.g. `run_continuous_finetune` holds it
around the fine-tuning runs, which take it too).

Besides the holder's record, an advisory `flock` on the file closes the race between two runs
starting at the same moment (or taking over the same stale lock).

Example:
  >>> lock = ModelDirLock('/tmp/run')
  >>> lock.acquire()         # ModelDirLocked if another live run holds it
  >>> ...                    # write checkpoints
  >>> lock.release()
  >>> with ModelDirLock('/tmp/run'):
  ...   pass
"""

import atexit
import datetime
import errno
import json
import logging
import os
import socket
import threading
from typing import Any, Dict, Optional

try:
  import fcntl
except ImportError:  # not POSIX: the holder's record alone decides
  fcntl = None

LOCK_NAME = '.mlm_garden.lock'

# Locks held by this process: realpath of the lock file -> [fd, count].
_held: Dict[str, list] = {}
_held_mutex = threading.Lock()


class ModelDirLocked(RuntimeError):
  """Another live run holds the lock of a model_dir (the message names it)."""


def _is_local(path: str) -> bool:
  return '://' not in path


def _process_start_ticks(pid: int) -> Optional[int]:
  """The start time of process `pid` in clock ticks since boot (Linux), or None."""
  try:
    with open(f'/proc/{pid}/stat', 'rb') as f:
      stat = f.read().decode('utf-8', 'replace')
  except OSError:
    return None
  # The command name (field 2) may hold spaces and parentheses: split after its last ')'.
  fields = stat[stat.rfind(')') + 2:].split()
  try:
    return int(fields[19])  # field 22 of the whole line
  except (IndexError, ValueError):
    return None


def _pid_alive(pid: int) -> bool:
  try:
    os.kill(pid, 0)
  except ProcessLookupError:
    return False
  except PermissionError:  # alive, another user's process
    return True
  except OSError:
    return False
  return True


def _describe(holder: Dict[str, Any]) -> str:
  return (f'host {holder.get("host", "?")}, pid {holder.get("pid", "?")}, started '
          f'{holder.get("started", "?")}')


def holder_is_running(holder: Dict[str, Any]) -> Optional[bool]:
  """Whether the lock holder recorded in `holder` still runs: True/False on this host, None for
  another host (which cannot be checked from here).

  Args:
    holder: the lock file's record ({'host', 'pid', 'pid_start', 'started'}).

  Example:
    >>> holder_is_running({'host': socket.gethostname(), 'pid': os.getpid()})   # True
  """
  if holder.get('host') != socket.gethostname():
    return None
  try:
    pid = int(holder.get('pid'))
  except (TypeError, ValueError):
    return False
  if not _pid_alive(pid):
    return False
  recorded, current = holder.get('pid_start'), _process_start_ticks(pid)
  if recorded is not None and current is not None and int(recorded) != current:
    return False  # the pid was reused by a newer process
  return True


class ModelDirLock:
  """The writer lock of one `model_dir` (a context manager too).

  Args:
    model_dir: the directory (created if missing). Remote paths (`gs://...`) are not locked.

  Example:
    >>> with ModelDirLock('/tmp/run'):
    ...   train()
  """

  def __init__(self, model_dir: str):
    self.model_dir = model_dir
    self.path = os.path.join(model_dir, LOCK_NAME)
    self._key: Optional[str] = None

  def __enter__(self) -> 'ModelDirLock':
    self.acquire()
    return self

  def __exit__(self, *exc) -> None:
    self.release()

  @property
  def held(self) -> bool:
    return self._key is not None

  def acquire(self) -> 'ModelDirLock':
    """Takes the lock (a no-op for remote paths and when this object holds it already).

    Raises:
      ModelDirLocked: another live run holds it, or a run of another host left it.
      OSError: the lock file cannot be created (e.g. a read-only directory).
    """
    if self._key is not None or not _is_local(self.model_dir):
      return self
    os.makedirs(self.model_dir, exist_ok=True)
    key = os.path.realpath(self.path)
    with _held_mutex:
      if key in _held:  # re-entrant within this process
        _held[key][1] += 1
        self._key = key
        return self
      fd = self._lock_file()
      _held[key] = [fd, 1]
    self._key = key
    return self

  def _lock_file(self) -> int:
    """Opens and locks the lock file, checks its previous holder, and records this process."""
    while True:
      fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
      try:
        if fcntl is not None:
          try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
          except OSError as e:
            if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
              raise
            raise ModelDirLocked(self._refusal(self._read(fd), live=True)) from None
          # The file may have been removed (released) between open and flock: lock the new one.
          try:
            same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
          except FileNotFoundError:
            same = False
          if not same:
            os.close(fd)
            continue
        previous = self._read(fd)
        if previous and previous.get('pid') is not None and not (
            previous.get('host') == socket.gethostname() and previous.get('pid') == os.getpid()):
          running = holder_is_running(previous)
          if running is None or running:
            raise ModelDirLocked(self._refusal(previous, live=bool(running)))
          logging.warning('--model_dir=%s: taking over the stale lock of a run that is no '
                          'longer running (%s)', self.model_dir, _describe(previous))
        self._write(fd)
        return fd
      except BaseException:
        os.close(fd)
        raise

  def _refusal(self, holder: Optional[Dict[str, Any]], live: bool) -> str:
    who = _describe(holder) if holder else 'another process'
    if live:
      return (f'--model_dir={self.model_dir} is in use by another training run ({who}; lock '
              f'file {self.path}); wait for it to end or choose another --model_dir')
    return (f'--model_dir={self.model_dir} is locked by a run of another host ({who}; lock '
            f'file {self.path}); if that run has ended, delete the lock file')

  @staticmethod
  def _read(fd: int) -> Optional[Dict[str, Any]]:
    os.lseek(fd, 0, os.SEEK_SET)
    data = b''
    while True:
      chunk = os.read(fd, 65536)
      if not chunk:
        break
      data += chunk
    if not data.strip():
      return None
    try:
      holder = json.loads(data.decode('utf-8', 'replace'))
    except ValueError:
      return {'host': '?', 'pid': None}
    return holder if isinstance(holder, dict) else None

  @staticmethod
  def _write(fd: int) -> None:
    record = {'host': socket.gethostname(), 'pid': os.getpid(),
              'pid_start': _process_start_ticks(os.getpid()),
              'started': datetime.datetime.now(datetime.timezone.utc).isoformat(
                  timespec='seconds')}
    os.ftruncate(fd, 0)
    os.lseek(fd, 0, os.SEEK_SET)
    os.write(fd, (json.dumps(record) + '\n').encode())
    os.fsync(fd)

  def release(self) -> None:
    """Releases the lock (the file is removed when the outermost holder releases it)."""
    key, self._key = self._key, None
    if key is None:
      return
    with _held_mutex:
      entry = _held.get(key)
      if entry is None:
        return
      entry[1] -= 1
      if entry[1] > 0:
        return
      del _held[key]
      _unlock(key, entry[0])


def _unlock(path: str, fd: int) -> None:
  try:
    os.remove(path)  # before unlocking: a waiting run then locks a new file
  except OSError:
    pass
  try:
    os.close(fd)
  except OSError:
    pass


@atexit.register
def _release_all() -> None:
  with _held_mutex:
    for key, (fd, _) in list(_held.items()):
      _unlock(key, fd)
    _held.clear()
