"""Tests of official/nlp/tools/claims.py: one verdict rule for every row, and the smallest
difference a table could detect (checked against the normal limit and by simulation)."""

import numpy as np
import pytest
from scipy import stats

from official.nlp.tools import claims


def test_a_wide_interval_is_inconclusive_not_a_tie():
  # The MR row pretrained in-domain: -0.98 [-7.84, +5.88], p = 0.95, once called "a tie".
  assert claims.verdict(-0.98, -7.84, 5.88, p_holm=0.95) == 'inconclusive'
  assert claims.verdict(-0.98, -7.84, 5.88, p_holm=0.95, margin=2.0) == 'inconclusive'
  assert claims.verdict(-0.98, -7.84, 5.88, p_holm=0.95, margin=8.0) == 'tie'


def test_significance_is_holms_and_the_interval_alone_claims_nothing():
  # Hedge: +2.54 [+0.49, +4.59], Holm p = 0.23: the unadjusted interval excludes 0.
  assert claims.verdict(2.54, 0.49, 4.59, p_holm=0.23) == 'inconclusive'
  assert claims.verdict(10.54, 9.79, 11.28, p_holm=0.0003) == 'A better'
  assert claims.verdict(-1.72, -1.86, -1.58, p_holm=0.0007) == 'B better'
  # A loss: BERT's minus the modern recipe's, +1.72 nats, is the modern recipe's win.
  assert claims.verdict(1.72, 1.58, 1.86, p_holm=0.0007, higher_is_better=False) == 'B better'
  assert claims.verdict(-1.72, -1.86, -1.58, p_holm=0.0007, higher_is_better=False) == 'A better'
  assert claims.verdict(0.0, 0.0, 0.0, p_holm=None) == 'inconclusive'
  assert set(claims.VERDICTS) == {'A better', 'B better', 'tie', 'inconclusive'}


def test_the_detectable_difference_reaches_the_normal_limit():
  # With many degrees of freedom the t-test is the z-test: (z_{1 - alpha/2} + z_power) * se.
  for alpha, power, tests in ((0.05, 0.8, 1), (0.05, 0.9, 1), (0.05, 0.8, 4)):
    z = stats.norm.ppf(1 - alpha / tests / 2) + stats.norm.ppf(power)
    assert claims.detectable_difference(2.0, 1e6, alpha, power, tests) == pytest.approx(2 * z,
                                                                                      rel=1e-4)


def test_the_detectable_difference_has_its_power_by_simulation():
  # At the difference returned, t statistics of 4 dof are beyond the critical value 80% of the
  # time: 40,000 draws give the rate within 0.006 (3 binomial standard deviations).
  se, dof = 1.5, 4.0
  delta = claims.detectable_difference(se, dof)
  rng = np.random.default_rng(0)
  t = (rng.standard_normal(40000) + delta / se) / np.sqrt(rng.chisquare(dof, 40000) / dof)
  critical = stats.t.ppf(0.975, dof)
  assert np.mean(np.abs(t) > critical) == pytest.approx(0.8, abs=0.006)
  # More tests in the family: a stricter level, a larger difference.
  assert claims.detectable_difference(se, dof, tests=3) > delta
  assert claims.detectable_difference(0.0, dof) == 0.0


def test_standard_error_of_inverts_a_t_interval():
  result = stats.ttest_ind([1.0, 2.5, 3.0], [4.0, 5.5, 6.1], equal_var=False)
  interval = result.confidence_interval(0.95)
  se = claims.standard_error_of(interval.low, interval.high, result.df)
  assert se == pytest.approx(np.sqrt(np.var([1.0, 2.5, 3.0], ddof=1) / 3
                                     + np.var([4.0, 5.5, 6.1], ddof=1) / 3))
