"""Fixtures of the trainer tests: the toy experiment's uninterrupted one-device run, trained once
per test session and shared (a test must not change its model_dir), and a garbage collection after
a test file when threads pile up."""

import gc
import os
import threading

import pytest

from tests.core import toy_task


@pytest.fixture(scope='session')
def toy_reference_run(tmp_path_factory):
  """The toy experiment trained on one device as the default config says (`train_and_eval`, 20
  steps, evaluated at steps 10 and 20 and once more at the end): the run other runs (resumed,
  two replicas, two workers) must match.

  Returns:
    `{'model_dir': pathlib.Path, 'kernel': the trained [4, 1] kernel (numpy), 'logs': the final
    evaluation's metrics}`.

  Example:
    >>> def test_resumed_run(tmp_path, toy_reference_run):
    ...   np.testing.assert_allclose(kernel, toy_reference_run['kernel'], rtol=1e-5)
  """
  model_dir = tmp_path_factory.mktemp('toy_reference')
  model, logs = toy_task.run_in_process(model_dir, mode='train_and_eval', run_post_eval=True)
  return {'model_dir': model_dir, 'kernel': model.get_weights()[0], 'logs': logs}


# Threads in this process above which a test file's end triggers a full garbage collection.
THREAD_LIMIT = 200


def _threads() -> int:
  """Threads of this process (native ones included, where /proc tells)."""
  try:
    return len(os.listdir('/proc/self/task'))
  except OSError:
    return threading.active_count()


@pytest.fixture(autouse=True, scope='module')
def _collect_garbage_when_threads_pile_up():
  """Frees the runs of earlier test files once their threads pile up. A trainer sits in
  reference cycles, which only Python's full collections free; until then its input pipelines
  keep their threads (5 per toy run: 15 runs took a process from 30 to 95 threads, a
  `gc.collect()` back to 30). A full collection costs up to ~50 s late in the suite, so it runs
  only above `THREAD_LIMIT` threads, not after every file."""
  yield
  if _threads() > THREAD_LIMIT:
    gc.collect()
