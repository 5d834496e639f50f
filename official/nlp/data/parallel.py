"""Worker processes for the data pipeline: an ordered map with a bounded number of tasks in flight.

Workers read shared read-only inputs (the tokenizer, the token arrays) from `state()`: with the
`fork` start method they inherit it copy-on-write (nothing is pickled); elsewhere it is sent once to
each worker.

Example:
  with worker_pool(2, {'scale': 3}) as pool:
    # _times_scale reads state()['scale'].
    results = list(ordered_map(pool, _times_scale, range(10)))
"""

import collections
import contextlib
import multiprocessing
import multiprocessing.pool
import os
import sys
from typing import Any, Callable, Dict, Iterable, Iterator, Optional

_STATE: Dict[str, Any] = {}


def state() -> Dict[str, Any]:
  """The state given to the innermost `worker_pool` (in workers and in the parent)."""
  return _STATE


def _set_state(new_state: Dict[str, Any]) -> None:
  _STATE.clear()
  _STATE.update(new_state)


@contextlib.contextmanager
def tokenizers_parallelism(enabled: bool) -> Iterator[None]:
  """Sets `TOKENIZERS_PARALLELISM` (threads of Rust `tokenizers`) in the block, then restores it."""
  previous = os.environ.get('TOKENIZERS_PARALLELISM')
  os.environ['TOKENIZERS_PARALLELISM'] = 'true' if enabled else 'false'
  try:
    yield
  finally:
    if previous is None:
      os.environ.pop('TOKENIZERS_PARALLELISM', None)
    else:
      os.environ['TOKENIZERS_PARALLELISM'] = previous


def _fork_is_unsafe() -> bool:
  """Whether TensorFlow is loaded in this process: then the workers are spawned, not forked.

  A fork copies only the calling thread; a lock that one of TensorFlow's pool threads held stays
  locked in the child forever (seen: a forked worker of a test process hung for good). The
  command-line tools do not load TensorFlow and keep the fast fork.
  """
  return 'tensorflow' in sys.modules


@contextlib.contextmanager
def worker_pool(num_workers: int,
                shared: Dict[str, Any]) -> Iterator[Optional[multiprocessing.pool.Pool]]:
  """A pool of `num_workers` processes seeing `shared` through `state()`; None (in-process) for one.

  The pool is terminated if the block raises (e.g. KeyboardInterrupt): no worker outlives the run.
  """
  _set_state(shared)
  pool = None
  try:
    # Workers use one thread each; no fork warning from `tokenizers`.
    with tokenizers_parallelism(False):
      if num_workers > 1:
        if 'fork' in multiprocessing.get_all_start_methods() and not _fork_is_unsafe():
          pool = multiprocessing.get_context('fork').Pool(num_workers)
        else:
          pool = multiprocessing.get_context('spawn').Pool(num_workers, initializer=_set_state,
                                                           initargs=(shared,))
      yield pool
    if pool is not None:
      pool.close()
  except BaseException:
    if pool is not None:
      pool.terminate()
    raise
  finally:
    if pool is not None:
      pool.join()
    _STATE.clear()


def ordered_map(pool: Optional[multiprocessing.pool.Pool], function: Callable[[Any], Any],
                items: Iterable[Any], window: Optional[int] = None) -> Iterator[Any]:
  """`map(function, items)` in order on `pool`, with at most `window` tasks in flight."""
  if pool is None:
    yield from map(function, items)
    return
  window = window or 2 * pool._processes  # pylint: disable=protected-access
  pending = collections.deque()
  items = iter(items)
  for item in items:
    pending.append(pool.apply_async(function, (item,)))
    if len(pending) >= window:
      break
  while pending:
    result = pending.popleft().get()
    item = next(items, _DONE)
    if item is not _DONE:
      pending.append(pool.apply_async(function, (item,)))
    yield result


_DONE = object()
