"""Tests of the paired tests against closed forms, table values and exact enumeration."""

import itertools
import math

import numpy as np
import pytest

from official.nlp.tools import significance


@pytest.mark.parametrize('t, dof, p', [
    (2.776, 4, 0.05), (2.228, 10, 0.05), (4.604, 4, 0.01), (1.96, 10 ** 6, 0.05),
    (0.0, 3, 1.0)])
def test_student_t_against_table_values(t, dof, p):
  assert significance.student_t_two_sided_p(t, dof) == pytest.approx(p, abs=2e-4)


@pytest.mark.parametrize('t', [0.3, 1.0, 3.0, 40.0])
def test_student_t_one_dof_is_the_cauchy_closed_form(t):
  assert significance.student_t_two_sided_p(t, 1) == pytest.approx(
      1 - 2 / math.pi * math.atan(t), rel=1e-9)


@pytest.mark.parametrize('a, b, x', [(2, 3, 0.4), (0.5, 0.5, 0.2), (5, 1, 0.7)])
def test_incomplete_beta_closed_forms(a, b, x):
  closed = {(2, 3, 0.4): 6 * x ** 2 - 8 * x ** 3 + 3 * x ** 4,  # the integral of 12 x (1-x)^2
            (0.5, 0.5, 0.2): 2 / math.pi * math.asin(math.sqrt(x)),
            (5, 1, 0.7): x ** 5}[(a, b, x)]
  assert significance.regularized_incomplete_beta(a, b, x) == pytest.approx(closed, rel=1e-10)


def test_paired_t_test_by_hand():
  a, b = [0.71, 0.73, 0.72, 0.74], [0.69, 0.70, 0.70, 0.73]
  diffs = np.subtract(a, b)
  t_hand = diffs.mean() / (diffs.std(ddof=1) / 2)
  t, p = significance.paired_t_test(a, b)
  assert t == pytest.approx(t_hand)
  assert p == pytest.approx(significance.student_t_two_sided_p(t_hand, 3))
  assert significance.paired_t_test(b, a)[1] == pytest.approx(p)
  assert significance.paired_t_test(a, a) == (0.0, 1.0)
  assert significance.paired_t_test([2, 3], [1, 2]) == (math.inf, 0.0)
  with pytest.raises(ValueError, match='at least 2 pairs, found 1'):
    significance.paired_t_test([1], [2])
  with pytest.raises(ValueError, match='same length, found 2 and 3'):
    significance.paired_t_test([1, 2], [1, 2, 3])


def test_permutation_test_against_exact_enumeration():
  a = [1, 1, 0, 1, 1, 0, 1, 1, 0.6]
  b = [0, 1, 0, 0, 1, 1, 0, 0, 0.2]
  diffs = np.subtract(a, b)
  flips = np.array(list(itertools.product((-1, 1), repeat=len(diffs))))
  exact = np.mean(np.abs(flips @ diffs) >= abs(diffs.sum()) - 1e-12)
  p = significance.paired_permutation_test(a, b, rounds=20000, seed=3)
  assert p == pytest.approx(exact, abs=0.01)
  assert significance.paired_permutation_test(a, a) == 1.0
  assert significance.paired_permutation_test([1] * 30, [0] * 30, rounds=999) == 1 / 1000
  with pytest.raises(ValueError, match='non-empty and of one length'):
    significance.paired_permutation_test([], [])
