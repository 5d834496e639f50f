"""Tests of the paired tests against closed forms, table values and exact enumeration."""

import itertools
import math
import re
import sys

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


# ---- intervals, clustered tests, Holm ---------------------------------------------------------
def test_t_quantiles_match_the_tables():
  # Student's t tables: t_{0.975} for 1, 4 and 30 degrees of freedom; the normal's 1.95996.
  for dof, expected in ((1, 12.706), (4, 2.776), (30, 2.042), (10**7, 1.960)):
    assert significance.t_quantile(0.975, dof) == pytest.approx(expected, abs=1e-3)
  assert significance.t_quantile(0.95, 4) == pytest.approx(2.132, abs=1e-3)


def test_paired_t_interval_is_mean_plus_minus_t_times_standard_error():
  # differences 2, 3, 4: mean 3, sd 1, se 1/sqrt(3); t_{0.975, 2} = 4.303.
  mean, low, high = significance.paired_t_interval([3, 4, 5], [1, 1, 1])
  assert mean == 3.0
  assert (low, high) == pytest.approx((3 - 4.303 / 3 ** 0.5, 3 + 4.303 / 3 ** 0.5), abs=1e-3)


def test_welch_t_test_worked_example():
  # means 2 and 5, variances 1 and 1: se = sqrt(1/3 + 1/3), t = -3 / se, dof 4 (equal sizes and
  # variances), p from the table: 0.0213; interval -3 -+ 2.776 se.
  result = significance.welch_t_test([1, 2, 3], [4, 5, 6])
  se = (2 / 3) ** 0.5
  assert result['t'] == pytest.approx(-3 / se) and result['dof'] == pytest.approx(4.0)
  assert result['p'] == pytest.approx(0.0213, abs=1e-4)
  assert (result['low'], result['high']) == pytest.approx((-3 - 2.776 * se, -3 + 2.776 * se),
                                                          abs=1e-3)
  # Unequal variances: Welch-Satterthwaite dof between the smaller n - 1 and n_a + n_b - 2.
  unequal = significance.welch_t_test([1.0, 1.1, 0.9, 1.0], [2, 5, 8, 3])
  assert 3 < unequal['dof'] < 6
  with pytest.raises(ValueError, match='2 or more values a sample'):
    significance.welch_t_test([1.0], [2.0, 3.0])


def test_welch_against_a_number_is_the_one_sample_t_test():
  # [1, 2, 3] against 4: mean 2, sd 1, se 1/sqrt(3), t = -2 sqrt(3) = -3.464 on 2 dof; the t
  # distribution with 2 dof has F(t) = 1/2 + t / (2 sqrt(2 + t^2)): p = 1 - 3.464 / sqrt(14)
  # = 0.0742; the interval -2 -+ 4.303 / sqrt(3) (t table, 97.5%, 2 dof).
  result = significance.welch_t_test([1, 2, 3], 4)
  t = -2 * 3 ** 0.5
  assert (result['t'], result['dof']) == pytest.approx((t, 2.0))
  assert result['p'] == pytest.approx(1 - abs(t) / (2 + t * t) ** 0.5)
  assert (result['low'], result['high']) == pytest.approx((-2 - 4.303 / 3 ** 0.5,
                                                           -2 + 4.303 / 3 ** 0.5), abs=1e-3)
  assert significance.welch_t_test([5, 5], 4.0)['p'] == 0.0  # no spread, a difference
  assert significance.welch_t_test([4, 4], 4)['dof'] == 1.0
  with pytest.raises(ValueError, match='found 1 and a number'):
    significance.welch_t_test([1.0], 4)
  family = significance.welch_family([({'b': 'baseline'}, [1, 2, 3], 4.0)])
  assert family[0]['p'] == pytest.approx(result['p']) == pytest.approx(family[0]['p_holm'])


def test_cluster_variance_worked_example():
  # Differences by cluster: d1 [1, 0, 1] (sum 2), d2 [1] (sum 1), d3 [0, 0] (sum 0); n = 6,
  # D = 0.5; T_g - D n_g = 0.5, 0.5, -1; C / (C - 1) * 1.5 / 36 = 1.5 * 1.5 / 36 = 0.0625.
  a = [1, 0, 1, 1, 0, 0]
  clusters = ['d1', 'd1', 'd1', 'd2', 'd3', 'd3']
  assert significance.cluster_variance(a, [0] * 6, clusters) == (pytest.approx(0.0625), 3)
  # Equal sizes: the variance of the cluster means over the count of clusters.
  means = np.array([1.0, 0.5, 0.0, 0.5])
  items = np.repeat(means, 2)
  assert significance.cluster_variance(items, np.zeros(8), np.repeat(np.arange(4), 2))[0] == (
      pytest.approx(means.var(ddof=1) / 4))
  assert significance.cluster_variance([1, 0], [0, 0], ['one', 'one']) == (0.0, 1)


def test_two_level_test_adds_the_runs_and_the_test_sets_variance():
  # Runs 0.7 and 0.8 against a deterministic 0: var_runs 0.005 / 2 = 0.0025; items as in the
  # cluster example with two clusters: var_items 0.0625; dof = 0.065^2 / (0.0025^2 + 0.0625^2).
  result = significance.two_level_test([0.7, 0.8], 0.0, [1, 1, 0, 1], [0, 0, 0, 0],
                                       ['d1', 'd1', 'd2', 'd2'])
  assert (result['var_runs'], result['var_items']) == pytest.approx((0.0025, 0.0625))
  assert result['t'] == pytest.approx(0.75 / 0.065 ** 0.5)
  assert result['dof'] == pytest.approx(0.065 ** 2 / (0.0025 ** 2 + 0.0625 ** 2))
  half = significance.t_quantile(0.975, result['dof']) * 0.065 ** 0.5
  assert (result['low'], result['high']) == pytest.approx((0.75 - half, 0.75 + half))
  # The same difference on every item: no test-set part, Welch's test of the runs.
  welch = significance.welch_t_test([1, 2, 3], [4, 5, 6])
  same = significance.two_level_test([1, 2, 3], [4, 5, 6], [0.5, 0.5], [0.2, 0.2], [0, 1])
  assert same['var_items'] == 0.0
  for key in ('difference', 't', 'dof', 'p', 'low', 'high'):
    assert same[key] == pytest.approx(welch[key])
  # Runs without spread against a number: the test set's t on clusters - 1 dof.
  items = significance.two_level_test([0.75, 0.75], 0.0, [1, 1, 0, 1], [0] * 4, [0, 0, 1, 1])
  assert (items['dof'], items['t']) == pytest.approx((1.0, 0.75 / 0.25))
  with pytest.raises(ValueError, match='2 or more runs a side, found 1 and a number'):
    significance.two_level_test([0.7], 0.0, [1], [0], [0])


def test_clustered_permutation_flips_whole_sentences():
  # Sentence 1's three words all favour A; sentence 2's one word too. Over sentences: 2 of the 4
  # sign patterns reach |3 + 1| (p = 0.5); over words (4 independent items) only 2 of 16 do.
  a, b, sentences = [1, 1, 1, 1], [0, 0, 0, 0], ['s1', 's1', 's1', 's2']
  assert significance.clustered_permutation_test(a, b, sentences) == 0.5
  assert significance.clustered_permutation_test(a, b, [0, 1, 2, 3]) == 2 / 16
  # One cluster per item gives the item-level test's answer (here exact against sampled).
  rng = np.random.default_rng(1)
  x, y = rng.integers(0, 2, 40), rng.integers(0, 2, 40)
  items = significance.clustered_permutation_test(x, y, list(range(40)), rounds=20000)
  assert items == pytest.approx(significance.paired_permutation_test(x, y, rounds=20000),
                                abs=0.02)
  assert significance.clustered_permutation_test([1, 0], [1, 0], [0, 1]) == 1.0
  with pytest.raises(ValueError, match='one length'):
    significance.clustered_permutation_test([1, 0], [1, 0], [0])


def test_clustered_bootstrap_interval_resamples_clusters():
  # Two clusters with differences (1, 1) and (-1, -1): resampled means are 1, 0 or -1 with
  # probabilities 1/4, 1/2, 1/4, so the 95% interval spans [-1, 1] around 0.
  mean, low, high = significance.clustered_bootstrap_interval([1, 1, 0, 0], [0, 0, 1, 1],
                                                              ['a', 'a', 'b', 'b'])
  assert (mean, low, high) == (0.0, -1.0, 1.0)
  # Many independent clusters: close to the normal interval of the mean.
  rng = np.random.default_rng(0)
  diffs = rng.normal(0.5, 1.0, 400)
  mean, low, high = significance.clustered_bootstrap_interval(diffs, np.zeros(400),
                                                              list(range(400)))
  half = 1.96 * diffs.std(ddof=1) / 20
  assert (low, high) == pytest.approx((mean - half, mean + half), abs=0.02)


def test_holm_adjust_worked_example():
  # Sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1 = 0.02, 0.03, 0.06, 0.04 -> running max.
  assert significance.holm_adjust([0.01, 0.04, 0.03, 0.005]) == pytest.approx(
      [0.03, 0.06, 0.06, 0.02])
  assert significance.holm_adjust([0.5, 0.9]) == [1.0, 1.0]  # capped at 1
  assert significance.holm_adjust([0.04]) == [0.04]  # one test: unchanged
  assert significance.holm_adjust([]) == []


def test_welch_family_skips_small_samples_and_holm_adjusts():
  tests = significance.welch_family([({'name': 'a'}, [1, 2, 3], [4, 5, 6]),
                                     ({'name': 'one'}, [1.0], [2.0, 3.0]),
                                     ({'name': 'b'}, [1, 2, 3], [1.5, 2.5, 3.5])])
  assert [t['name'] for t in tests] == ['a', 'b']
  single = significance.welch_t_test([1, 2, 3], [4, 5, 6])
  assert (tests[0]['difference'], tests[0]['p']) == pytest.approx((single['difference'],
                                                                   single['p']))
  assert [t['p_holm'] for t in tests] == significance.holm_adjust([t['p'] for t in tests])


@pytest.mark.parametrize('p, text', [(0.01202, '0.0120'), (1e-4, '0.0001'), (9.9e-5, '< 0.0001'),
                                     (None, 'n/a')])
def test_format_p_for_tables(p, text):
  assert significance.format_p(p) == text


# ---- scipy's distributions against independent routes -----------------------------------------
def _t_tail(t, dof):
  """P(T >= t) by integrating Student's t density (written out from its formula) with quad."""
  log_norm = math.lgamma((dof + 1) / 2) - math.lgamma(dof / 2) - 0.5 * math.log(dof * math.pi)
  density = lambda x: math.exp(log_norm - (dof + 1) / 2 * math.log1p(x * x / dof))  # noqa: E731
  # Split at t + 1 so that quad sees the peak region on a finite interval.
  head = integrate.quad(density, t, t + 1, epsabs=0, epsrel=1e-13, limit=200)[0]
  return head + integrate.quad(density, t + 1, math.inf, epsabs=0, epsrel=1e-13, limit=200)[0]


integrate = pytest.importorskip('scipy.integrate')


@pytest.mark.parametrize('t, dof', [(0.3, 3), (2.776, 4), (4.604, 4), (2.0, 4.37), (50.46, 2.05),
                                    (1.5, 30), (3.0, 2.5)])
def test_two_sided_p_equals_the_integrated_density(t, dof):
  expected = 2 * _t_tail(t, dof)
  assert significance._two_sided_p(t, dof) == pytest.approx(expected, rel=1e-9)
  assert significance._two_sided_p(-t, dof) == pytest.approx(expected, rel=1e-9)
  if dof == int(dof):
    assert significance.student_t_two_sided_p(t, int(dof)) == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize('probability', [0.9, 0.95, 0.975, 0.995])
def test_t_quantiles_against_closed_forms(probability):
  # 1 dof (Cauchy): tan(pi (p - 1/2)); 2 dof: (2p - 1) / sqrt(2 p (1 - p)); 4 dof: the two-sided
  # p is 1 - 3u/2 + u^3/2 with u = t / sqrt(4 + t^2), so the quantile's u solves that cubic.
  assert significance.t_quantile(probability, 1) == pytest.approx(
      math.tan(math.pi * (probability - 0.5)), rel=1e-9)
  assert significance.t_quantile(probability, 2) == pytest.approx(
      (2 * probability - 1) / math.sqrt(2 * probability * (1 - probability)), rel=1e-9)
  roots = np.roots([0.5, 0.0, -1.5, 1 - 2 * (1 - probability)])
  u = float(min(r.real for r in roots if abs(r.imag) < 1e-12 and 0 < r.real < 1))
  assert significance.t_quantile(probability, 4) == pytest.approx(2 * u / math.sqrt(1 - u * u),
                                                                   rel=1e-9)


@pytest.mark.parametrize('dof', [2.05, 4.37, 30.0])
def test_t_quantile_inverts_the_integrated_density(dof):
  for probability in (0.9, 0.975):
    assert _t_tail(significance.t_quantile(probability, dof), dof) == pytest.approx(
        1 - probability, rel=1e-9)


def test_welch_t_test_against_the_formulas():
  # Unequal sizes and variances: t, Welch-Satterthwaite dof, p and interval written out.
  a, b = np.array([0.81, 0.84, 0.80, 0.83]), np.array([0.75, 0.79, 0.70])
  va, vb = a.var(ddof=1) / 4, b.var(ddof=1) / 3
  se = math.sqrt(va + vb)
  dof = (va + vb) ** 2 / (va ** 2 / 3 + vb ** 2 / 2)
  difference = a.mean() - b.mean()
  result = significance.welch_t_test(a, b, level=0.9)
  assert result['difference'] == pytest.approx(difference, rel=1e-12)
  assert (result['t'], result['dof']) == pytest.approx((difference / se, dof), rel=1e-12)
  assert result['p'] == pytest.approx(2 * _t_tail(difference / se, dof), rel=1e-9)
  assert _t_tail((result['high'] - difference) / se, dof) == pytest.approx(0.05, rel=1e-9)
  assert difference - result['low'] == pytest.approx(result['high'] - difference, rel=1e-12)


def test_welch_the_documented_bert_against_modern_example():
  # official/projects/recipe_comparison/results/2026-12-01_brown_pretraining_avx2.md: held-out
  # loss of three BERT and three modern pretraining seeds (Brown, AVX2 EPYC), BERT minus
  # modern: in-domain +1.720 [+1.576, +1.864], out of domain +1.500 [+1.370, +1.629],
  # p = 0.0007 both after Holm over the two. The table's losses are rounded to 3 decimals (a
  # mean difference off by up to 1e-3), the docs' figures are of the unrounded ones, rounded
  # again: agreement to 1.5e-3.
  family = significance.welch_family([
      ({'set': 'in'}, [6.445, 6.434, 6.434], [4.768, 4.653, 4.731]),
      ({'set': 'out'}, [6.920, 6.920, 6.914], [5.456, 5.359, 5.442])])
  for test, (difference, low, high) in zip(family, ((1.720, 1.576, 1.864),
                                                    (1.500, 1.370, 1.629))):
    assert (test['difference'], test['low'], test['high']) == pytest.approx(
        (difference, low, high), abs=1.5e-3)
    assert significance.format_p(test['p_holm']) == '0.0007'


def test_paired_t_against_the_formulas():
  a, b = [0.71, 0.73, 0.72, 0.74], [0.69, 0.70, 0.70, 0.73]
  diffs = np.subtract(a, b)
  se = diffs.std(ddof=1) / 2
  t, p = significance.paired_t_test(a, b)
  assert t == pytest.approx(diffs.mean() / se, rel=1e-12)
  assert p == pytest.approx(2 * _t_tail(t, 3), rel=1e-9)
  mean, low, high = significance.paired_t_interval(a, b, level=0.9)
  assert _t_tail((high - mean) / se, 3) == pytest.approx(0.05, rel=1e-9)
  assert mean - low == pytest.approx(high - mean, rel=1e-12)
  assert significance.paired_t_interval([2, 3], [1, 2]) == (1.0, 1.0, 1.0)  # no spread


@pytest.mark.parametrize('a, b, x', [(2.0, 0.5, 0.9), (15, 0.5, 0.01), (0.5, 7, 0.99)])
def test_incomplete_beta_equals_the_integrated_density(a, b, x):
  log_beta = math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)
  density = lambda u: math.exp((a - 1) * math.log(u) + (b - 1) * math.log1p(-u)  # noqa: E731
                               - log_beta)
  expected = integrate.quad(density, 0, x, epsabs=0, epsrel=1e-13, limit=200)[0]
  assert significance.regularized_incomplete_beta(a, b, x) == pytest.approx(expected, rel=1e-9)
  assert significance.regularized_incomplete_beta(a, b, 0.0) == 0.0
  with pytest.raises(ValueError, match=r'x must be in \[0, 1\], found 1.5'):
    significance.regularized_incomplete_beta(a, b, 1.5)


def test_clustered_bootstrap_draws_are_scipys():
  stats = pytest.importorskip('scipy.stats')
  rng = np.random.default_rng(4)
  a, b = rng.integers(0, 2, 60), rng.integers(0, 2, 60)
  clusters = rng.integers(0, 15, 60)
  mean, low, high = significance.clustered_bootstrap_interval(a, b, clusters, level=0.9,
                                                              rounds=500, seed=7)
  sums, counts = significance._cluster_sums(a, b, clusters)
  reference = stats.bootstrap((sums, counts), lambda s, c, axis: s.sum(axis) / c.sum(axis),
                              paired=True, vectorized=True, n_resamples=500,
                              confidence_level=0.9, method='percentile',
                              rng=np.random.default_rng(7)).confidence_interval
  assert mean == pytest.approx(np.mean(a - b))
  assert (low, high) == pytest.approx((reference.low, reference.high), rel=1e-12)


def test_without_scipy_the_error_names_the_extra(monkeypatch):
  for name in ('scipy', 'scipy.stats', 'scipy.special'):
    monkeypatch.setitem(sys.modules, name, None)
  with pytest.raises(ImportError, match=re.escape("pip install 'mlm-garden[eval]'")):
    significance.welch_t_test([1, 2, 3], [4, 5, 6])
  assert significance.holm_adjust([0.01, 0.02]) == [0.02, 0.02]  # numpy only: unaffected
