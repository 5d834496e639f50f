"""Tests for official/nlp/data/parallel.py's worker pool: how its workers start."""

import multiprocessing
import sys

import pytest
import tensorflow as tf  # noqa: F401  (loaded, as in any process that trains)

from official.nlp.data import parallel


@pytest.mark.skipif('fork' not in multiprocessing.get_all_start_methods(), reason='no fork here')
def test_workers_are_spawned_once_tensorflow_is_loaded_and_forked_without_it(monkeypatch):
  """A forked child of a process running TensorFlow's threads can hang on a lock one of them
  held; the command-line tools (no TensorFlow) keep the faster fork."""
  with parallel.worker_pool(2, {}) as pool:
    assert pool._ctx.get_start_method() == 'spawn'  # pylint: disable=protected-access
  monkeypatch.delitem(sys.modules, 'tensorflow')
  with parallel.worker_pool(2, {}) as pool:
    assert pool._ctx.get_start_method() == 'fork'  # pylint: disable=protected-access
  with parallel.worker_pool(1, {}) as pool:
    assert pool is None  # one worker: in-process
