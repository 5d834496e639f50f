"""Vectorized gathering of variable-length segments from a flat array."""

import numpy as np

# Above this mean segment size, joining byte slices in Python beats building a per-element index
# array.
_JOIN_MIN_BYTES = 24


def gather_segments(pool: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
  """Concatenates `pool[starts[i]:starts[i] + lengths[i]]` for all i.

  Args:
    pool: `[n]` source array.
    starts: `[k]` start of each segment in `pool`.
    lengths: `[k]` length of each segment (0 allowed).

  Returns:
    `[sum(lengths)]` array of `pool`'s dtype (possibly read-only).

  Example:
    gather_segments(np.arange(10), np.array([7, 0]), np.array([2, 3]))  # [7, 8, 0, 1, 2]
  """
  pool = np.ascontiguousarray(pool)
  starts = np.asarray(starts, np.int64)
  lengths = np.asarray(lengths, np.int64)
  keep = lengths > 0
  starts, lengths = starts[keep], lengths[keep]
  if starts.size == 0:
    return pool[:0].copy()
  item = pool.itemsize
  if lengths.mean() * item >= _JOIN_MIN_BYTES:
    blob = pool.tobytes()
    byte_starts = (starts * item).tolist()
    byte_ends = ((starts + lengths) * item).tolist()
    return np.frombuffer(b''.join([blob[s:e] for s, e in zip(byte_starts, byte_ends)]), pool.dtype)
  # The index steps by one inside a segment and jumps at each segment start: a cumulative sum of
  # steps.
  steps = np.ones(int(lengths.sum()), np.int64)
  steps[0] = starts[0]
  steps[np.cumsum(lengths[:-1])] = starts[1:] - (starts[:-1] + lengths[:-1] - 1)
  return pool[np.cumsum(steps)]
