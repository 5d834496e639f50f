"""Paired significance tests for comparing two models on the same examples and seeds.

  * `paired_t_test`: over seeds (seed i of model A against seed i of model B: the same data order
    and head initialisation), two-sided, Student's t with n - 1 degrees of freedom.
  * `paired_permutation_test`: over test examples (each example's score, e.g. its correctness
    averaged over seeds), two-sided, random sign flips of the per-example differences.

The first sees the seed-to-seed spread, the second the test set's sampling spread; a difference
is called significant in the tables only when both p-values are below 0.05.

Example:
  >>> paired_t_test([0.71, 0.73, 0.72], [0.69, 0.70, 0.70])
  (7.0, 0.0198...)
  >>> paired_permutation_test([1, 1, 0, 1], [0, 1, 0, 0], rounds=1000)
  0.5...
"""

import math
from typing import Sequence, Tuple

import numpy as np


def _incomplete_beta_fraction(a: float, b: float, x: float) -> float:
  """The continued fraction of the regularised incomplete beta function (modified Lentz)."""
  tiny = 1e-300
  c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
  d = 1.0 / (d if abs(d) > tiny else tiny)
  result = d
  for m in range(1, 300):
    for numerator in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                      -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
      d = 1.0 + numerator * d
      d = 1.0 / (d if abs(d) > tiny else tiny)
      c = 1.0 + numerator / c
      c = c if abs(c) > tiny else tiny
      result *= d * c
    if abs(d * c - 1.0) < 1e-15:
      break
  return result


def regularized_incomplete_beta(a: float, b: float, x: float) -> float:
  """I_x(a, b), for a, b > 0 and 0 <= x <= 1.

  Example:
    >>> regularized_incomplete_beta(1.0, 1.0, 0.3)  # the uniform distribution's CDF
    0.3
  """
  if not 0.0 <= x <= 1.0:
    raise ValueError(f'x must be in [0, 1], found {x}')
  if x in (0.0, 1.0):
    return x
  log_front = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x)
               + b * math.log1p(-x))
  if x < (a + 1.0) / (a + b + 2.0):
    return math.exp(log_front) * _incomplete_beta_fraction(a, b, x) / a
  return 1.0 - math.exp(log_front) * _incomplete_beta_fraction(b, a, 1.0 - x) / b


def student_t_two_sided_p(t: float, dof: int) -> float:
  """P(|T| >= |t|) for Student's t with `dof` degrees of freedom.

  Example:
    >>> round(student_t_two_sided_p(2.776, 4), 3)
    0.05
  """
  if dof < 1:
    raise ValueError(f'degrees of freedom must be >= 1, found {dof}')
  if math.isinf(t):
    return 0.0
  return regularized_incomplete_beta(dof / 2.0, 0.5, dof / (dof + t * t))


def paired_t_test(a: Sequence[float], b: Sequence[float]) -> Tuple[float, float]:
  """`(t, two-sided p)` of the mean of `a - b` against 0 (pairs in the same order).

  Identical pairs give `(0.0, 1.0)`; a constant non-zero difference gives `(+-inf, 0.0)`.

  Raises:
    ValueError: fewer than 2 pairs, or `a` and `b` of different lengths.
  """
  if len(a) != len(b):
    raise ValueError(f'paired samples must have the same length, found {len(a)} and {len(b)}')
  if len(a) < 2:
    raise ValueError(f'a paired t-test needs at least 2 pairs, found {len(a)}')
  diffs = np.asarray(a, np.float64) - np.asarray(b, np.float64)
  mean = float(diffs.mean())
  spread = float(diffs.std(ddof=1))
  if spread == 0.0:
    return (0.0, 1.0) if mean == 0.0 else (math.copysign(math.inf, mean), 0.0)
  t = mean / (spread / math.sqrt(len(diffs)))
  return t, student_t_two_sided_p(t, len(diffs) - 1)


def paired_permutation_test(a: Sequence[float], b: Sequence[float], rounds: int = 10000,
                            seed: int = 0) -> float:
  """Two-sided p of the mean difference `a - b` under random sign flips of each pair.

  `(count of |flipped mean| >= |observed mean|) + 1) / (rounds + 1)`: never 0, exact in
  expectation; pairs with no difference change nothing.

  Raises:
    ValueError: empty or unequal samples.
  """
  if len(a) != len(b) or not len(a):
    raise ValueError(f'paired samples must be non-empty and of one length, found {len(a)} and '
                     f'{len(b)}')
  diffs = np.asarray(a, np.float64) - np.asarray(b, np.float64)
  observed = abs(diffs.sum())
  if observed == 0.0:
    return 1.0
  rng = np.random.default_rng(seed)
  hits = 0
  for start in range(0, rounds, 1000):
    signs = rng.choice((-1.0, 1.0), size=(min(1000, rounds - start), len(diffs)))
    hits += int(np.sum(np.abs(signs @ diffs) >= observed - 1e-12))
  return (hits + 1) / (rounds + 1)
