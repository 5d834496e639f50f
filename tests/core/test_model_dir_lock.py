"""Tests for official/core/model_dir_lock.py: one writer per model_dir."""

import json
import os
import socket
import subprocess
import sys

import pytest

from official.core import model_dir_lock
from tests.processes import subprocess_env


def _write_lock(model_dir, **holder):
  os.makedirs(model_dir, exist_ok=True)
  path = os.path.join(model_dir, model_dir_lock.LOCK_NAME)
  with open(path, 'w') as f:
    json.dump(holder, f)
  return path


@pytest.fixture
def other_process():
  """A live process that is not this one (a lock holder that never took the flock)."""
  process = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])
  yield process
  process.kill()
  process.wait()


@pytest.fixture
def dead_pid():
  process = subprocess.Popen([sys.executable, '-c', 'pass'])
  process.wait()
  return process.pid


def test_lock_records_the_holder_and_is_removed_on_release(tmp_path):
  lock = model_dir_lock.ModelDirLock(str(tmp_path / 'run'))
  with lock:
    record = json.loads((tmp_path / 'run' / model_dir_lock.LOCK_NAME).read_text())
    assert record['host'] == socket.gethostname() and record['pid'] == os.getpid()
    assert record['started'] and lock.held
  assert not (tmp_path / 'run' / model_dir_lock.LOCK_NAME).exists() and not lock.held


def test_a_live_holder_is_refused_naming_it(tmp_path, other_process):
  path = _write_lock(str(tmp_path), host=socket.gethostname(), pid=other_process.pid,
                     started='2026-11-24T05:00:00+00:00')
  with pytest.raises(model_dir_lock.ModelDirLocked) as e:
    model_dir_lock.ModelDirLock(str(tmp_path)).acquire()
  message = str(e.value)
  assert '\n' not in message
  assert f'--model_dir={tmp_path} is in use by another training run' in message
  assert f'pid {other_process.pid}' in message and '2026-11-24T05:00:00' in message
  assert path in message
  assert json.loads(open(path).read())['pid'] == other_process.pid  # left alone


def test_a_stale_lock_is_taken_over_with_a_warning(tmp_path, dead_pid, caplog):
  _write_lock(str(tmp_path), host=socket.gethostname(), pid=dead_pid, started='yesterday')
  with model_dir_lock.ModelDirLock(str(tmp_path)):
    record = json.loads((tmp_path / model_dir_lock.LOCK_NAME).read_text())
    assert record['pid'] == os.getpid()
  out = '\n'.join(r.getMessage() for r in caplog.records if r.levelname == 'WARNING')
  assert 'taking over the stale lock' in out and f'pid {dead_pid}' in out


def test_a_reused_pid_is_stale(tmp_path, other_process):
  # The pid runs, but it started after the lock was written: another process got the pid.
  _write_lock(str(tmp_path), host=socket.gethostname(), pid=other_process.pid, pid_start=1)
  with model_dir_lock.ModelDirLock(str(tmp_path)):
    pass


def test_another_hosts_lock_is_refused(tmp_path):
  _write_lock(str(tmp_path), host='elsewhere.example', pid=1234, started='today')
  with pytest.raises(model_dir_lock.ModelDirLocked, match='locked by a run of another host '
                     r'\(host elsewhere.example, pid 1234.*delete the lock file'):
    model_dir_lock.ModelDirLock(str(tmp_path)).acquire()


@pytest.mark.slow
def test_a_second_process_is_refused_while_the_first_holds_the_flock(tmp_path):
  with model_dir_lock.ModelDirLock(str(tmp_path)):
    code = ('import sys; from official.core import model_dir_lock as m\n'
            'try:\n  m.ModelDirLock(sys.argv[1]).acquire()\n'
            'except m.ModelDirLocked as e:\n  print(e); sys.exit(3)\n')
    result = subprocess.run([sys.executable, '-c', code, str(tmp_path)], capture_output=True,
                            text=True, timeout=60, check=False,
                            env=subprocess_env())
  assert result.returncode == 3, result.stderr
  assert f'pid {os.getpid()}' in result.stdout


def test_reentrant_in_one_process_and_released_by_the_outermost(tmp_path):
  path = tmp_path / model_dir_lock.LOCK_NAME
  outer = model_dir_lock.ModelDirLock(str(tmp_path)).acquire()
  with model_dir_lock.ModelDirLock(str(tmp_path)):
    assert path.exists()
  assert path.exists()
  outer.release()
  assert not path.exists()


def test_released_when_the_body_raises(tmp_path):
  with pytest.raises(ZeroDivisionError):
    with model_dir_lock.ModelDirLock(str(tmp_path)):
      raise ZeroDivisionError()
  assert not (tmp_path / model_dir_lock.LOCK_NAME).exists()
  with model_dir_lock.ModelDirLock(str(tmp_path)):  # free again
    pass


def test_holder_is_running():
  assert model_dir_lock.holder_is_running({'host': socket.gethostname(), 'pid': os.getpid()})
  assert model_dir_lock.holder_is_running({'host': 'elsewhere.example', 'pid': 1}) is None
