"""Tests of official/nlp/tools/claims.py: one verdict rule for every row, and the smallest
difference a table could detect (checked against the normal limit and by simulation)."""

import numpy as np
import pytest
from scipy import stats

from official.nlp.tools import claims
from official.nlp.tools import significance


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


def _two_level(runs_a, runs_b, items_a, items_b, clusters):
  """(welch, two_level) as `detectable_with_runs` takes them, from significance's own tests."""
  welch = significance.welch_t_test(runs_a, runs_b)
  both = significance.two_level_test(runs_a, runs_b, items_a, items_b, clusters)
  return (welch['low'], welch['high'], welch['dof']), (both['low'], both['high'], both['dof']), both


def _items(seed):
  rng = np.random.default_rng(seed)
  clusters = np.repeat(np.arange(12), 5)   # 12 documents of 5 items
  return (rng.random(60) < 0.7).astype(float), (rng.random(60) < 0.6).astype(float), clusters


def test_detectable_with_the_runs_at_hand_is_the_two_level_rows():
  items_a, items_b, clusters = _items(0)
  welch, two_level, _ = _two_level([0.70, 0.74, 0.69], [0.61, 0.66, 0.60], items_a, items_b,
                                   clusters)
  now = claims.detectable_difference(claims.standard_error_of(*two_level), two_level[2], tests=4)
  assert claims.detectable_with_runs(welch, two_level, 3, 3, tests=4) == pytest.approx(now)


def test_the_floor_is_the_test_sets_own_detectable_difference():
  # With runs without end only the test set's sampling is left: its variance and its
  # clusters - 1 degrees of freedom, both recovered from the two stored intervals.
  items_a, items_b, clusters = _items(1)
  welch, two_level, both = _two_level([0.70, 0.74, 0.69], [0.61, 0.66, 0.60], items_a, items_b,
                                      clusters)
  floor = claims.detectable_difference(np.sqrt(both['var_items']), 11.0)
  assert claims.detectable_with_runs(welch, two_level, 3, float('inf')) == pytest.approx(floor)


def test_more_runs_project_to_what_the_two_level_test_finds_with_them():
  # Six runs a side with the three runs' means and sample variances: the test run on them
  # detects what the projection from three runs says it would.
  items_a, items_b, clusters = _items(2)
  three_a, three_b = [0.66, 0.70, 0.74], [0.58, 0.61, 0.64]    # sample variances 0.0016, 0.0009
  six_a = [0.70 + s * 0.04 * np.sqrt(5 / 6) for s in (-1, 1) * 3]
  six_b = [0.61 + s * 0.03 * np.sqrt(5 / 6) for s in (-1, 1) * 3]
  welch, two_level, _ = _two_level(three_a, three_b, items_a, items_b, clusters)
  _, six, _ = _two_level(six_a, six_b, items_a, items_b, clusters)
  expected = claims.detectable_difference(claims.standard_error_of(*six), six[2], tests=3)
  assert claims.detectable_with_runs(welch, two_level, 3, 6, tests=3) == pytest.approx(expected)
  # A deterministic side (a baseline's one score) scales the same way.
  welch, two_level, _ = _two_level(three_a, 0.6, items_a, items_b, clusters)
  _, six, _ = _two_level(six_a, 0.6, items_a, items_b, clusters)
  expected = claims.detectable_difference(claims.standard_error_of(*six), six[2])
  assert claims.detectable_with_runs(welch, two_level, 3, 6) == pytest.approx(expected)


def test_detectable_with_runs_refuses_what_is_not_one_comparison():
  with pytest.raises(ValueError, match='narrower than the runs'):
    claims.detectable_with_runs((-3.0, 3.0, 4.0), (-1.0, 1.0, 30.0), 3, 5)
  with pytest.raises(ValueError, match='2 or more'):
    claims.detectable_with_runs((-3.0, 3.0, 4.0), (-4.0, 4.0, 30.0), 1, 5)
