"""One-sided confidence bounds on a candidate's paired loss (issue 53: a PASS that shows
something).

A paired accuracy gate sees, over `n` items both sides answered, `lost` items the reference
had right and the candidate wrong and `gained` the other way. The candidate's loss is
Δ = p_lost - p_gained (its accuracy drop). A non-inferiority verdict PASSes only when the
upper confidence bound on Δ lies within the margin; a point estimate, or an interval that
is empty when nothing flips (the paired Wald interval NeMo Evaluator's gate uses), passes a
candidate whose true loss is the margin far more often than α.

- `score_upper` / `score_lower`: Tango's score bound for the difference of two correlated
  proportions (Tango 1998, Statistics in Medicine 17:891; the interval Newcombe 1998 ranks
  best of ten): the score statistic with the nuisance (the gained rate) at its maximum
  likelihood under Δ, inverted by bisection. With nothing flipped it is z^2 / (n + z^2),
  not 0: 8 clean items bound the loss at 25 points, 81 at 3.2 (one-sided 95%).
- `exact_upper`: the exact unconditional bound up to `EXACT_MAX` items, where the score
  bound's level can slip: the largest Δ whose exact p-value (Tango's statistic as the
  ordering, the supremum over the nuisance on a grid and its ends, Berger & Boos style
  without the confidence-set restriction) exceeds α; from quality derivation 7 (`refined`)
  the supremum searched past the grid (qgate/core/exact_bound.py). Its cost grows as n^2 per
  p-value (on a 2-core EPYC: ~10 ms a bound at 40 items on the grid, about twice refined;
  ~25 at 60, 50-80 at 100, ~300 at 200).
- `corrected_upper`: above `EXACT_MAX`, Tango's bound corrected to keep its level (the plain
  one lets a PASS at the margin through up to 1.9 α past 40 items): qgate/core/
  corrected_score.py says how, and what it was measured to hold. 81 clean items: 3.8 points.
- `loss_upper`: the one a gate uses: exact up to `EXACT_MAX` items, the corrected score
  bound above (the plain one with `corrected=False`: quality derivations before 6; the
  exact one's supremum on the grid with `refined=False`: derivations before 7);
  `loss_lower`: its lower bound from derivation 7 (the mirrored table's upper, negated);
  `clean_items_to_show`: the fewest items with which a clean candidate can PASS a margin.
- `rate_upper` / `rate_lower` / `clean_asks_to_show`: the pooled envelope gate's one-sample
  rate of broken answers (Clopper & Pearson 1934, exact, one-sided): 4 clean asks bound the
  rate at 52.7%, 59 at 4.95% (95%).
- `show_power` / `items_to_show`: sizing to *show*, not only to detect (issue 53 item 2): the
  chance a candidate with no true loss PASSes at n items and a flip rate (each table judged
  by the test `loss_upper` inverts, at the margin: `exact_shows`, `corrected_rejects`), and
  the fewest items that reach a power for it.
- `mean_loss_upper`: fractional scores (lm-eval metrics in [0, 1]): the paired t bound on
  the mean per-item difference.

Written here rather than taken from a library: statsmodels has no score or exact interval
for a paired difference (its `mcnemar` tests, its `confint_proportions_2indep` is unpaired),
scipy none, and `qgate verify` re-derives every bound with qgate's own dependencies (numpy,
no scipy: Student's t comes from its closed form for integer degrees of freedom). Tested
against their defining properties: coverage computed exactly over the trinomial, scipy's t.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import lru_cache
from statistics import NormalDist

import numpy as np
import numpy.typing as npt

from qgate.core.corrected_score import corrected_rejects
from qgate.core.exact_bound import exact_p as exact_p
from qgate.core.exact_bound import exact_shows as exact_shows
from qgate.core.exact_bound import tango_statistic as _score

EXACT_MAX = 40  # items: exact bound at or below, score bound above
_TOL = 1e-6

Floats = npt.NDArray[np.float64]


def _z(confidence: float) -> float:
    return NormalDist().inv_cdf(confidence)


def _check(lost: int, gained: int, n: int) -> None:
    if n <= 0 or lost < 0 or gained < 0 or lost + gained > n:
        raise ValueError(f"need 0 <= lost + gained <= n, n > 0 (lost {lost}, gained {gained})")


def _bisect(low: float, high: float, inside: Callable[[float], bool]) -> float:
    """The boundary between `low` (inside the confidence set) and `high` (outside)."""
    if inside(high):
        return high
    while high - low > _TOL:
        mid = (low + high) / 2
        if inside(mid):
            low = mid
        else:
            high = mid
    return high


def score_upper(lost: int, gained: int, n: int, confidence: float = 0.95) -> float:
    """Tango's one-sided upper bound on the paired loss Δ."""
    _check(lost, gained, n)
    z = _z(confidence)
    point = (lost - gained) / n
    if point >= 1:
        return 1.0
    return _bisect(point, 1.0, lambda d: float(_score(lost, gained, n, d)) > -z)


def score_rejects(
    lost: Floats | float, gained: Floats | float, n: int, delta: float, z: float
) -> npt.NDArray[np.bool_]:
    """Whether each table shows a loss below `delta` by Tango's plain score test at the
    one-sided level of `z` (its `score_upper` within `delta`)."""
    return np.asarray(_score(lost, gained, n, delta) <= -z)


def score_lower(lost: int, gained: int, n: int, confidence: float = 0.95) -> float:
    """Tango's one-sided lower bound on the paired loss Δ (harm shown when above a margin)."""
    return -score_upper(gained, lost, n, confidence)


@lru_cache(maxsize=65536)
def exact_upper(
    lost: int, gained: int, n: int, confidence: float = 0.95, *, refined: bool = False
) -> float:
    """The exact unconditional one-sided upper bound on Δ (for n up to EXACT_MAX); `refined`:
    its p-value's supremum searched past the grid (quality derivation 7, exact_bound.py)."""
    _check(lost, gained, n)
    alpha = 1 - confidence
    point = (lost - gained) / n
    if point >= 1:
        return 1.0
    return _bisect(point, 1.0, lambda d: exact_p(lost, gained, n, d, refined=refined) > alpha)


def corrected_upper(lost: int, gained: int, n: int, confidence: float = 0.95) -> float:
    """Tango's score bound corrected to keep its level (qgate/core/corrected_score.py): the
    largest loss its corrected test does not reject."""
    _check(lost, gained, n)
    z = _z(confidence)
    point = (lost - gained) / n
    if point >= 1:
        return 1.0
    return _bisect(point, 1.0, lambda d: not corrected_rejects(lost, gained, n, d, z))


def loss_upper(
    lost: int,
    gained: int,
    n: int,
    confidence: float = 0.95,
    *,
    corrected: bool = True,
    refined: bool = True,
) -> float:
    """The upper bound a paired 0/1 gate reads: exact at or below EXACT_MAX items (`refined`
    from quality derivation 7, on the grid before); above, the corrected score bound, or
    Tango's plain one with `corrected=False` (what quality derivations before 6 judged by)."""
    if n <= EXACT_MAX:
        return exact_upper(lost, gained, n, confidence, refined=refined)
    if corrected:
        return corrected_upper(lost, gained, n, confidence)
    return score_upper(lost, gained, n, confidence)


def loss_lower(lost: int, gained: int, n: int, confidence: float = 0.95) -> float:
    """The lower bound a paired 0/1 gate reads from quality derivation 7: the upper bound of
    the mirrored table (gained for lost), negated, so exact at or below EXACT_MAX items and
    the corrected score bound above; Tango's plain one (`score_lower`, derivations 6 and
    before) FAILs at the margin up to 1.6 α (perf/bench_level.py)."""
    return -loss_upper(gained, lost, n, confidence)


def clean_items_to_show(
    margin: float, confidence: float = 0.95, *, corrected: bool = True, refined: bool = True
) -> int:
    """The fewest paired items whose bound, with nothing lost or gained, is within `margin`:
    below it a non-inferiority gate can never PASS (`corrected`, `refined`: as `loss_upper`)."""
    if not 0 < margin < 1:
        raise ValueError("margin must lie in (0, 1)")
    for n in range(1, EXACT_MAX + 1):
        if exact_upper(0, 0, n, confidence, refined=refined) <= margin + _TOL:
            return n
    z = _z(confidence)
    if corrected:  # its clean statistic (correction 1/2) is a quadratic in sqrt(n): its root
        v, lean = margin * (1 - margin), (1 - 2 * margin) * (z * z - 1) / 6
        disc = z * z * v + 4 * margin * (0.5 - lean)
        root = (z * math.sqrt(v) + math.sqrt(max(disc, 0.0))) / (2 * margin)
        n = max(EXACT_MAX + 1, math.floor(root * root) - 2)
        while n > EXACT_MAX + 1 and corrected_upper(0, 0, n - 1, confidence) <= margin + _TOL:
            n -= 1
    else:  # the plain bound with nothing flipped is z^2 / (n + z^2)
        n = max(EXACT_MAX + 1, math.ceil(z * z * (1 - margin) / margin) - 1)
    while loss_upper(0, 0, n, confidence, corrected=corrected, refined=refined) > margin + _TOL:
        n += 1
    return n


def _binom_cdf(k: int, n: int, p: float) -> float:
    """P(X <= k) for X ~ Binomial(n, p), summed in log space."""
    if p <= 0:
        return 1.0
    if p >= 1:
        return 1.0 if k >= n else 0.0
    lf = math.lgamma(n + 1)
    lp, lq = math.log(p), math.log1p(-p)
    return min(
        1.0,
        sum(
            math.exp(lf - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * lp + (n - i) * lq)
            for i in range(k + 1)
        ),
    )


def _check_rate(k: int, n: int) -> None:
    if n <= 0 or not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n, n > 0 (k {k}, n {n})")


@lru_cache(maxsize=4096)
def rate_upper(k: int, n: int, confidence: float = 0.95) -> float:
    """Clopper-Pearson's one-sided upper bound on a rate seen `k` times in `n`: the largest p
    with P(X <= k | p) > 1 - confidence."""
    _check_rate(k, n)
    if k == n:
        return 1.0
    alpha = 1 - confidence
    if k == 0:  # closed form: 1 - alpha^(1/n)
        return float(1 - alpha ** (1 / n))
    return _bisect(k / n, 1.0, lambda p: _binom_cdf(k, n, p) > alpha)


@lru_cache(maxsize=4096)
def rate_lower(k: int, n: int, confidence: float = 0.95) -> float:
    """Clopper-Pearson's one-sided lower bound: the smallest p with P(X >= k | p) > 1 -
    confidence (0 when k is 0)."""
    _check_rate(k, n)
    if k == 0:
        return 0.0
    return 1 - rate_upper(n - k, n, confidence)


def clean_asks_to_show(max_rate: float, confidence: float = 0.95) -> int:
    """The fewest asks with none broken whose upper bound is within `max_rate`: n >=
    log(1 - confidence) / log(1 - max_rate)."""
    if not 0 < max_rate < 1:
        raise ValueError("max_rate must lie in (0, 1)")
    n = max(1, math.ceil(math.log(1 - confidence) / math.log1p(-max_rate) - 1e-9))
    while rate_upper(0, n, confidence) > max_rate + _TOL:
        n += 1
    return n


def show_power(
    n: int,
    margin: float,
    discordance: float,
    confidence: float = 0.95,
    *,
    corrected: bool = True,
    refined: bool = True,
) -> float:
    """The chance that a candidate with no true loss PASSes a non-inferiority gate of `margin`
    at `n` items: its upper bound (`loss_upper`'s) within the margin, when items flip either
    way at `discordance` (half lost, half gained), summed exactly over the trinomial's cells
    that weigh anything (each side's flips up to 12 standard deviations past their mean). Each
    cell is judged by the test the bound inverts, at the margin: the exact one at or below
    EXACT_MAX items, the corrected score test above (`corrected`, `refined`: as
    `loss_upper`, the bound of the run's quality derivation)."""
    if not 0 < margin < 1 or not 0 < discordance <= 1 or n < 1:
        raise ValueError("need n >= 1, margin in (0, 1) and discordance in (0, 1]")
    mean = n * discordance / 2
    top = min(n, math.ceil(mean + 12 * math.sqrt(mean) + 20))
    b, c = np.meshgrid(np.arange(top + 1), np.arange(top + 1), indexing="ij")
    keep = b + c <= n
    bi, ci = b[keep], c[keep]
    bb, cc = bi.astype(np.float64), ci.astype(np.float64)
    rest = n - bb - cc
    lf = np.array([math.lgamma(k + 1) for k in range(n + 1)])
    log_pmf = lf[n] - lf[bi] - lf[ci] - lf[rest.astype(int)]
    log_pmf = log_pmf + (bb + cc) * math.log(discordance / 2)
    if discordance < 1:
        log_pmf = log_pmf + rest * math.log1p(-discordance)
    else:
        log_pmf = np.where(rest == 0, log_pmf, -np.inf)
    weigh = log_pmf > -40  # the rest weighs less than 1e-17 in all
    if n <= EXACT_MAX:  # (b, c) is `_cells(n)`'s entry b (n + 1) - b (b - 1) / 2 + c
        at = bi * (n + 1) - bi * (bi - 1) // 2 + ci
        shown = exact_shows(n, margin, confidence, refined=refined)[at[weigh]]
    elif corrected:
        shown = corrected_rejects(bb[weigh], cc[weigh], n, margin, _z(confidence))
    else:
        shown = score_rejects(bb[weigh], cc[weigh], n, margin, _z(confidence))
    return float(np.exp(log_pmf[weigh])[shown].sum())


def items_to_show(
    margin: float,
    discordance: float,
    confidence: float = 0.95,
    power: float = 0.8,
    max_items: int = 2000,
    *,
    corrected: bool = True,
    refined: bool = True,
) -> int | None:
    """The fewest items (from the fewest that can ever show the margin) at which a candidate
    with no true loss PASSes with `power` (None: more than `max_items`). The chance rises with
    n in a sawtooth: this is the first n reaching it, found by doubling then bisection
    (`corrected`, `refined`: the bound judged by, as `loss_upper`)."""

    def power_at(n: int) -> float:
        return show_power(n, margin, discordance, confidence, corrected=corrected, refined=refined)

    lo = clean_items_to_show(margin, confidence, corrected=corrected, refined=refined)
    if power_at(lo) >= power:
        return lo
    hi = lo
    while power_at(hi) < power:
        if hi >= max_items:
            return None
        lo, hi = hi, min(max_items, hi * 2)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if power_at(mid) >= power:
            hi = mid
        else:
            lo = mid
    return hi


def t_cdf(t: float, df: int) -> float:
    """Student's t distribution function for integer `df` (Abramowitz & Stegun 26.7.3-4)."""
    if df < 1:
        raise ValueError("df must be >= 1")
    theta = math.atan(t / math.sqrt(df))
    s, c2 = math.sin(theta), math.cos(theta) ** 2
    if df % 2:
        term, total = 1.0, 0.0
        if df > 1:
            total = 1.0
            for k in range(1, (df - 3) // 2 + 1):
                term *= c2 * (2 * k) / (2 * k + 1)
                total += term
            total *= s * math.cos(theta)
        a = 2 / math.pi * (theta + total)
    else:
        term, total = 1.0, 1.0
        for k in range(1, (df - 2) // 2 + 1):
            term *= c2 * (2 * k - 1) / (2 * k)
            total += term
        a = s * total
    return 0.5 + a / 2


def t_ppf(p: float, df: int) -> float:
    """The `p` quantile of Student's t with integer `df` (bisection on `t_cdf`)."""
    low, high = -1e3, 1e3
    for _ in range(200):
        mid = (low + high) / 2
        if t_cdf(mid, df) < p:
            low = mid
        else:
            high = mid
        if high - low < 1e-10:
            break
    return (low + high) / 2


def mean_loss_upper(
    reference: Sequence[float], candidate: Sequence[float], confidence: float = 0.95
) -> float:
    """The paired t upper bound on the mean per-item loss (reference - candidate) of
    fractional scores; with every difference equal the bound is that difference."""
    if len(reference) != len(candidate) or len(reference) < 2:
        raise ValueError("need two or more paired scores")
    d = np.asarray(reference, dtype=np.float64) - np.asarray(candidate, dtype=np.float64)
    n = len(d)
    sd = float(d.std(ddof=1))
    return float(d.mean() + t_ppf(confidence, n - 1) * sd / math.sqrt(n))
