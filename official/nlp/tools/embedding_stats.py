"""Per-dimension z-score standardisation of embeddings: fit on a corpus, save, load, apply.

Raw BERT vectors share a few large "rogue" dimensions and a common offset, so cosine similarity
between any two of them is high. Subtracting the corpus mean and dividing by the corpus standard
deviation, per dimension, makes every dimension count alike (the MLM lecture's recipe before
comparing contextual embeddings).

The stats file is an `.npz` with `mean` and `std` (float32 [hidden]), `count` (vectors fitted
on), and what they were fitted on: `pooling` (`mean`, `cls`, `pooled`, or for token-level
vectors the sub-word pooling `first`/`mean`), `token_level`, `model` and `input_file`.

Example:
  >>> stats = fit_zscore(corpus_vectors, pooling='first', token_level=True, model='runs/tiny')
  >>> save_zscore(stats, 'stats.npz')
  >>> standardised = apply_zscore(new_vectors, load_zscore('stats.npz'))
"""

import dataclasses
import os
from typing import Optional

import numpy as np

# Dimensions whose standard deviation is at most this are only centred (divided by 1, not ~0).
EPSILON = 1e-6
_ARRAYS = ('mean', 'std', 'count', 'pooling', 'token_level', 'model', 'input_file')


@dataclasses.dataclass
class ZScoreStats:
  """Mean and standard deviation per dimension of the vectors they were fitted on.

  Attributes:
    mean: float32 [hidden].
    std: float32 [hidden] (population standard deviation, ddof=0).
    count: how many vectors they were fitted on.
    pooling: the pooling of those vectors (`mean`, `cls`, `pooled`; token level: `first`, `mean`).
    token_level: whether they were one vector per word (True) or per line (False).
    model: the model_dir that produced them.
    input_file: the corpus they came from.
  """
  mean: np.ndarray
  std: np.ndarray
  count: int
  pooling: str = ''
  token_level: bool = False
  model: str = ''
  input_file: str = ''

  @property
  def hidden_size(self) -> int:
    return int(self.mean.shape[0])

  def describe(self) -> str:
    """E.g. `token-level (first sub-word)` or `sentence (mean)`: what the vectors were."""
    return describe_pooling(self.pooling, self.token_level)


def describe_pooling(pooling: str, token_level: bool) -> str:
  """A short name of a kind of embedding, for messages."""
  if token_level:
    return f'token-level ({"first sub-word" if pooling == "first" else pooling + " of sub-words"})'
  return f'sentence ({pooling})'


def fit_zscore(vectors: np.ndarray, pooling: str = '', token_level: bool = False,
               model: str = '', input_file: str = '') -> ZScoreStats:
  """Fits per-dimension mean and standard deviation (in float64) on `vectors`.

  Args:
    vectors: float [n, hidden], n >= 1.
    pooling, token_level, model, input_file: recorded with the stats (see `ZScoreStats`).

  Returns:
    The stats (mean and std as float32 [hidden]).

  Raises:
    ValueError: `vectors` is not 2-D or has no rows.

  Example:
    >>> stats = fit_zscore(np.array([[1., 2.], [3., 2.]]))
    >>> stats.mean, stats.std, stats.count
    (array([2., 2.], dtype=float32), array([1., 0.], dtype=float32), 2)
  """
  vectors = np.asarray(vectors)
  if vectors.ndim != 2 or vectors.shape[0] == 0:
    raise ValueError(f'fit_zscore: expected vectors [n >= 1, hidden]; found shape '
                     f'{list(vectors.shape)}')
  as64 = vectors.astype(np.float64)
  return ZScoreStats(mean=as64.mean(axis=0).astype(np.float32),
                     std=as64.std(axis=0).astype(np.float32), count=int(vectors.shape[0]),
                     pooling=pooling, token_level=bool(token_level), model=model,
                     input_file=input_file)


def apply_zscore(vectors: np.ndarray, stats: ZScoreStats) -> np.ndarray:
  """`(vectors - mean) / std` per dimension, float32; a dimension with std <= EPSILON is only
  centred (so a constant dimension gives 0, not a division by zero).

  Args:
    vectors: float [n, hidden] (or any shape ending in hidden).
    stats: from `fit_zscore` or `load_zscore`.

  Raises:
    ValueError: the last dimension of `vectors` is not the stats' hidden size.

  Example:
    >>> stats = fit_zscore(np.array([[1., 2.], [3., 2.]]))
    >>> apply_zscore(np.array([[1., 2.], [3., 5.]]), stats)
    array([[-1.,  0.],
           [ 1.,  3.]], dtype=float32)
  """
  vectors = np.asarray(vectors)
  if vectors.shape[-1:] != stats.mean.shape:
    raise ValueError(f'apply_zscore: vectors of size {vectors.shape[-1]}; expected the stats\' '
                     f'hidden size {stats.hidden_size}')
  std = np.where(stats.std > EPSILON, stats.std, 1.0).astype(np.float64)
  return ((vectors.astype(np.float64) - stats.mean) / std).astype(np.float32)


def save_zscore(stats: ZScoreStats, path: str) -> None:
  """Writes `stats` as an `.npz` at `path` exactly (no suffix added), its directory created."""
  parent = os.path.dirname(path)
  if parent:
    os.makedirs(parent, exist_ok=True)
  with open(path, 'wb') as f:  # a handle: np.savez would add `.npz` to other names
    np.savez(f, mean=stats.mean.astype(np.float32), std=stats.std.astype(np.float32),
             count=np.int64(stats.count), pooling=np.str_(stats.pooling),
             token_level=np.bool_(stats.token_level), model=np.str_(stats.model),
             input_file=np.str_(stats.input_file))


def load_zscore(path: str, flag: str = 'zscore') -> ZScoreStats:
  """Reads stats written by `save_zscore`.

  Raises:
    ValueError: `path` is missing, not an `.npz`, or lacks a field (the message names `flag` and
      `path`).
  """
  where = f'{flag}={path}'
  if not os.path.isfile(path):
    raise ValueError(f'{where}: no such file; expected z-score stats written by --fit_zscore')
  try:
    with np.load(path, allow_pickle=False) as data:
      missing = [k for k in _ARRAYS if k not in data.files]
      if missing:
        raise ValueError(f'{where}: lacks {", ".join(missing)}; expected z-score stats written '
                         'by --fit_zscore')
      fields = {k: data[k] for k in _ARRAYS}
  except (OSError, EOFError) as e:
    raise ValueError(f'{where}: not an .npz file ({e}); expected z-score stats written by '
                     '--fit_zscore') from None
  except ValueError as e:
    if str(e).startswith(where):
      raise
    raise ValueError(f'{where}: not an .npz file ({e}); expected z-score stats written by '
                     '--fit_zscore') from None
  mean, std = fields['mean'].astype(np.float32), fields['std'].astype(np.float32)
  if mean.ndim != 1 or mean.shape != std.shape:
    raise ValueError(f'{where}: mean {list(mean.shape)} and std {list(std.shape)}; expected two '
                     'vectors [hidden] of the same size')
  return ZScoreStats(mean=mean, std=std, count=int(fields['count']),
                     pooling=str(fields['pooling']), token_level=bool(fields['token_level']),
                     model=str(fields['model']), input_file=str(fields['input_file']))


def check_compatible(stats: ZScoreStats, path: str, hidden_size: Optional[int], pooling: str,
                     token_level: bool, flag: str = '--zscore') -> None:
  """Refuses stats fitted on another kind of vector than the ones to standardise.

  Args:
    stats: the loaded stats.
    path: their file (named in the message).
    hidden_size: of the vectors to standardise (None: not known yet, not checked).
    pooling, token_level: of the vectors to standardise.
    flag: named in the message.

  Raises:
    ValueError: another hidden size, or another pooling / token level.
  """
  if stats.pooling != pooling or stats.token_level != token_level:
    raise ValueError(f'{flag}={path}: stats fitted on {stats.describe()} embeddings; these are '
                     f'{describe_pooling(pooling, token_level)} embeddings; expected stats fitted '
                     'with the same pooling (refit with --fit_zscore)')
  if hidden_size is not None and stats.hidden_size != hidden_size:
    raise ValueError(f'{flag}={path}: stats of hidden size {stats.hidden_size}; these embeddings '
                     f'have {hidden_size}; expected stats fitted with this model (refit with '
                     '--fit_zscore)')
