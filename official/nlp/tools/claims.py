"""How a comparison table words its claims: a verdict per interval, and what the table could see.

A table of differences (two recipes, two models) says one of four things of each row, by one rule
applied alike to every row (`verdict`):

  * `A better` / `B better`: the difference is significant at the table's level after Holm's
    adjustment (`p_holm < alpha`);
  * `tie`: only where an equivalence margin is stated and the whole 95% interval lies inside
    `(-margin, +margin)`;
  * `inconclusive`: anything else (a wide interval is not a tie).

And it states the smallest difference it could detect (`detectable_difference`): the true
difference that a two-sided t-test at the table's strictest Holm level (`alpha / tests`) rejects
with 80% probability, from the spread of the row's own runs (the noncentral t distribution; scipy,
the `[eval]` extra).

Example:
  >>> verdict(difference=1.0, low=-7.8, high=5.9, p_holm=0.95, margin=2.0)
  'inconclusive'
  >>> round(detectable_difference(standard_error=1.0, dof=4.0), 2)   # 80% power, alpha 0.05
  3.76
"""

import math
from typing import Optional, Tuple

from official.nlp.tools import significance

VERDICTS = ('A better', 'B better', 'tie', 'inconclusive')


def verdict(difference: float, low: float, high: float, p_holm: Optional[float],
            margin: Optional[float] = None, alpha: float = 0.05,
            higher_is_better: bool = True) -> str:
  """The claim a row makes: one of `VERDICTS`.

  Args:
    difference: A - B.
    low, high: its 95% interval.
    p_holm: its Holm-adjusted p-value (None: no test, never significant).
    margin: the equivalence margin (same units): a `tie` needs the interval inside it; None (no
      margin stated): never a tie.
    alpha: the table's level.
    higher_is_better: False for a loss (a negative A - B is A's win).

  Example:
    >>> verdict(2.5, 0.5, 4.6, p_holm=0.23)          # interval excludes 0, Holm does not reject
    'inconclusive'
    >>> verdict(0.3, -0.9, 1.2, p_holm=0.8, margin=1.5)
    'tie'
    >>> verdict(1.72, 1.58, 1.86, p_holm=0.0007, higher_is_better=False)  # A's loss is higher
    'B better'
  """
  if p_holm is not None and p_holm < alpha and difference != 0.0:
    return 'A better' if (difference > 0) == higher_is_better else 'B better'
  if margin is not None and -margin < low and high < margin:
    return 'tie'
  return 'inconclusive'


def detectable_difference(standard_error: float, dof: float, alpha: float = 0.05,
                          power: float = 0.8, tests: int = 1) -> float:
  """The smallest true difference a two-sided t-test detects with probability `power`.

  Args:
    standard_error: the standard error of the difference (e.g. Welch's, from the runs' spread).
    dof: its degrees of freedom.
    alpha: the family's level; the test runs at `alpha / tests` (Holm's strictest step).
    power: the probability of rejecting at that difference.
    tests: the number of tests in the table's Holm family.

  Returns:
    The difference (same units as `standard_error`): the root of
    `P(|T| > t_crit | noncentrality d / se) = power` for the noncentral t with `dof`.

  Example:
    >>> round(detectable_difference(1.0, 4.0, tests=3), 2)   # alpha 0.05 / 3
    5.12
  """
  if standard_error <= 0.0 or not math.isfinite(standard_error):
    return 0.0 if standard_error == 0.0 else math.inf
  _, stats = significance._scipy()  # pylint: disable=protected-access
  from scipy import optimize  # Function-level: the optional [eval] extra, as significance's.
  critical = float(stats.t.ppf(1.0 - alpha / tests / 2.0, dof))

  def shortfall(effect: float) -> float:  # effect: difference / standard error
    lower_tail = float(stats.nct.cdf(-critical, dof, effect))  # NaN where it underflows
    rejects = float(stats.nct.sf(critical, dof, effect)) + (
        lower_tail if math.isfinite(lower_tail) else 0.0)
    return rejects - power

  high = critical + float(stats.norm.ppf(power)) + 2.0
  while shortfall(high) < 0:
    high *= 2.0
  return standard_error * float(optimize.brentq(shortfall, 0.0, high, xtol=1e-10))


def standard_error_of(low: float, high: float, dof: float, level: float = 0.95) -> float:
  """The standard error behind a t interval `[low, high]` at `level` with `dof`.

  Example:
    >>> round(standard_error_of(-2.776, 2.776, 4.0), 3)
    1.0
  """
  _, stats = significance._scipy()  # pylint: disable=protected-access
  return (high - low) / (2.0 * float(stats.t.ppf(0.5 + level / 2.0, dof)))


def detectable_with_runs(welch: Tuple[float, float, float], two_level: Tuple[float, float, float],
                         runs: int, planned_runs: float, alpha: float = 0.05,
                         power: float = 0.8, tests: int = 1) -> float:
  """What a two-level comparison could detect with `planned_runs` pretraining runs a recipe.

  The two-level test's variance is the runs' part (Welch's, over the pretraining runs) plus the
  test set's; more runs shrink the first as `runs / planned_runs` and leave the second. Both parts
  and their degrees of freedom are recovered from the two intervals a row stores, so a dated
  page's table can be projected without its runs: `planned_runs=math.inf` gives the test set's
  floor, the difference no number of pretraining seeds gets below.

  Args:
    welch: `(low, high, dof)` of the row's 95% interval over runs (the test set held fixed).
    two_level: `(low, high, dof)` of its 95% interval over runs and test items.
    runs: the runs a side now (each side the same, or B a deterministic baseline).
    planned_runs: the runs a side to project to (`math.inf`: the test set alone).
    alpha, power, tests: as `detectable_difference` (the family's level, `alpha / tests`).

  Returns:
    The smallest difference detected with probability `power`, in the intervals' units.

  Raises:
    ValueError: fewer than 2 runs, or a two-level interval narrower than the runs' alone.

  Example:
    >>> welch, two_level = (-3.70, 3.62, 3.19), (-3.47, 3.39, 7.2)   # points; 3 runs a side
    >>> [round(detectable_with_runs(welch, two_level, 3, n), 1) for n in (3, 5, math.inf)]
    [4.7, 3.7, 2.4]
  """
  if runs < 2 or planned_runs < 2:
    raise ValueError(f'runs and planned_runs need 2 or more a side, found {runs} and '
                     f'{planned_runs}')
  runs_se = standard_error_of(*welch)
  total_se = standard_error_of(*two_level)
  items_var = total_se ** 2 - runs_se ** 2
  if items_var < -1e-12 * total_se ** 2:
    raise ValueError(f'the two-level interval {two_level[:2]} is narrower than the runs\' '
                     f'interval {welch[:2]}: not the same comparison')
  items_var = max(items_var, 0.0)
  # Welch-Satterthwaite: total_se^4 / dof = sum of part^2 / its dof, so the runs' term is
  # runs_se^4 / welch dof and the items' term what remains of the two-level one.
  runs_term = runs_se ** 4 / welch[2]
  items_term = max(total_se ** 4 / two_level[2] - runs_term, 0.0)
  if math.isinf(planned_runs):
    runs_var, planned_runs_term = 0.0, 0.0
  else:  # each side's s^2 / n scales by runs / planned, its dof n - 1 by (planned - 1) / (runs - 1)
    shrink = runs / planned_runs
    runs_var = runs_se ** 2 * shrink
    planned_runs_term = runs_term * shrink ** 2 * (runs - 1) / (planned_runs - 1)
  variance = runs_var + items_var
  if variance == 0.0:
    return 0.0
  terms = planned_runs_term + items_term
  dof = variance ** 2 / terms if terms > 0.0 else math.inf
  return detectable_difference(math.sqrt(variance), min(dof, 1e9), alpha, power, tests)
