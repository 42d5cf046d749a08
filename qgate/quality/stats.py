"""Statistics of paired exact-answer results: Wilson intervals, flips, exact McNemar, power.

Everything here is pure and deterministic: `qgate verify` recomputes verdicts
from the raw records with these same functions.

No scipy: importing scipy.stats took most of a second of `qgate verify`, and
its binomial tail was called thousands of times per suite. McNemar p-values
and critical counts are exact (integer sums of binomial coefficients, then
one correctly rounded division), so they are the same on every platform and
library version; they can differ from scipy's in the last bits. The power
behind the minimum detectable drop sums binomial probabilities with numpy
(relative error about 1e-11, far below the 0.1 point a report prints).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable
from statistics import NormalDist

import numpy as np
import numpy.typing as npt
from pydantic import Field

from qgate.core.records import Record


class FlipCounts(Record):
    """The 2x2 table of paired outcomes (reference correct?, candidate correct?)."""

    both_correct: int = Field(description="Items both runtimes answered correctly.")
    lost: int = Field(description="Reference correct, candidate wrong.")
    gained: int = Field(description="Reference wrong, candidate correct.")
    both_wrong: int = Field(description="Items both runtimes answered wrongly.")

    @property
    def n(self) -> int:
        return self.both_correct + self.lost + self.gained + self.both_wrong

    @property
    def discordant(self) -> int:
        return self.lost + self.gained


def wilson(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Two-sided Wilson score interval of a proportion k/n; (0, 1) when n is 0.

    Newcombe's (1998) form, as scipy's `binomtest(k, n).proportion_ci(method="wilson")`
    computes it; the bounds are exactly 0 and 1 when k is 0 and n.
    """
    if n == 0:
        return (0.0, 1.0)
    if not 0 <= k <= n:
        raise ValueError(f"k={k} outside 0..n={n}")
    z = NormalDist().inv_cdf(0.5 + 0.5 * confidence)
    p = k / n
    denom = 2 * (n + z**2)
    center = (2 * n * p + z**2) / denom
    delta = z / denom * math.sqrt(4 * n * p * (1 - p) + z**2)
    low = 0.0 if k == 0 else center - delta
    high = 1.0 if k == n else center + delta
    return (low, high)


def count_flips(pairs: Iterable[tuple[bool, bool]]) -> FlipCounts:
    """Count paired outcomes from (reference_correct, candidate_correct) pairs."""
    both = lost = gained = neither = 0
    for ref_ok, cand_ok in pairs:
        if ref_ok and cand_ok:
            both += 1
        elif ref_ok:
            lost += 1
        elif cand_ok:
            gained += 1
        else:
            neither += 1
    return FlipCounts(both_correct=both, lost=lost, gained=gained, both_wrong=neither)


def mcnemar_p(lost: int, gained: int) -> float:
    """One-sided exact McNemar p-value that the candidate is worse than the reference.

    Conditional on the discordant pairs, `lost ~ Binomial(lost + gained, 1/2)`
    under the null of equal accuracy; the p-value is P(X >= lost). With no
    discordant pairs there is no evidence either way: 1.0.
    """
    d = lost + gained
    if d == 0:
        return 1.0
    return _upper_tail(d, lost) / (1 << d)


def mcnemar_rejects(lost: int, gained: int, alpha: float) -> bool:
    """The significance gate's rule: the candidate is significantly worse when p < alpha.

    A tie (p exactly alpha, which happens at alphas such as 1/32, 0.25 or 0.5)
    passes. Decided exactly, on the integer tail against alpha's exact ratio, so
    that `_critical_lost` (and with it the power, the detectable drop and the
    sizing) draws the very same line as the gate.
    """
    d = lost + gained
    num, den = alpha.as_integer_ratio()
    return _upper_tail(d, lost) * den < num << d


def _upper_tail(d: int, c: int) -> int:
    """sum_{j >= c} C(d, j), exactly; summing the shorter side of the distribution."""
    if c <= 0:
        return 1 << d
    if c > d:
        return 0
    if 2 * c > d:
        term, total = math.comb(d, c), 0
        for j in range(c, d + 1):
            total += term
            term = term * (d - j) // (j + 1)
        return total
    return (1 << d) - _upper_tail(d, d - c + 1)  # symmetry: sum_{j < c} C(d, j)


@functools.lru_cache(maxsize=64)
def _critical_lost(alpha: float, max_d: int) -> tuple[int, ...]:
    """For every discordant count D in 0..max_d, the smallest `lost` that rejects at alpha.

    The smallest c with P(X >= c) < alpha for X ~ Binomial(D, 1/2), the gate's
    rule (`mcnemar_rejects`: a tie at alpha passes); D + 1 (impossible) where no
    count can reject (small D). Exact: with T(D, c) = sum_{j >= c} C(D, j) the
    test is T(D, c) * den < num * 2**D for alpha = num / den. The critical count
    grows by 0 or 1 from D to D + 1 (adding one pair moves each tail up by at
    most one step), and
    T(D + 1, c) = 2 T(D, c) + C(D, c - 1), so one walk over D finds them all.
    Cached: the power search calls it with the same arguments many times.
    """
    num, den = alpha.as_integer_ratio()
    c = 0 if den < num else 1  # D = 0: T(0, 0) = 1, T(0, 1) = 0
    tail = 1 if c == 0 else 0  # T(D, c)
    below = 1 if c == 1 else 0  # C(D, c - 1)
    bound = num  # num * 2**D
    crit = [c]
    for d in range(max_d):
        tail = 2 * tail + below
        bound <<= 1
        if tail * den < bound:
            below = below * (d + 1) // (d + 2 - c)  # C(d + 1, c - 1)
        else:
            below = below * (d + 1) // c if c else 1  # C(d + 1, c)
            tail -= below
            c += 1
        crit.append(c)
    return tuple(crit)


@functools.lru_cache(maxsize=8)
def _log_factorials(n: int) -> npt.NDArray[np.float64]:
    """log(k!) for k in 0..n (read-only: it is cached)."""
    out = np.array([math.lgamma(k + 1.0) for k in range(n + 1)], dtype=np.float64)
    out.flags.writeable = False
    return out


def _binom_pmf(
    k: npt.NDArray[np.int64],
    d: int | npt.NDArray[np.int64],
    p: float,
    log_fact: npt.NDArray[np.float64],
) -> npt.NDArray[np.float64]:
    """Binomial(d, p) probabilities of k, elementwise; 0 outside 0..d."""
    valid = (k >= 0) & (k <= d)
    k = np.where(valid, k, 0)
    rest = np.where(valid, d - k, 0)
    log_p = math.log(p) if p > 0 else -math.inf
    log_q = math.log1p(-p) if p < 1 else -math.inf
    terms = log_fact[d] - log_fact[k] - log_fact[rest]
    # 0 * log(0) is 0 here: a count of zero contributes a factor of one.
    terms += np.multiply(k, log_p, out=np.zeros(terms.shape), where=k > 0)
    terms += np.multiply(rest, log_q, out=np.zeros(terms.shape), where=rest > 0)
    return np.where(valid, np.exp(terms), 0.0)


def mcnemar_power(n: int, drop: float, discordance: float, alpha: float) -> float:
    """Exact (unconditional) power of the one-sided exact McNemar test.

    Model: each of n items is discordant with probability `discordance`; a
    discordant item is a loss with probability q = (1 + drop / discordance) / 2
    (so that P(lost) - P(gained) = drop). Power = sum over D of
    P(D discordant) * P(lost >= critical(D) | D, q).

    The tails R(D) = P(Binomial(D, q) >= critical(D)) come from one recurrence
    over D rather than one incomplete-beta evaluation each: the critical count
    stays at c or moves to c + 1, and R(D + 1) is R(D) + q P(lost = c - 1 | D)
    or R(D) - (1 - q) P(lost = c | D) accordingly, a cumulative sum.
    """
    if n <= 0 or drop <= 0 or discordance <= 0:
        return 0.0
    discordance = min(1.0, max(discordance, drop))
    q = min(1.0, (1.0 + drop / discordance) / 2.0)
    log_fact = _log_factorials(n)
    d_values = np.arange(n + 1)
    p_d = _binom_pmf(d_values, n, discordance, log_fact)
    crit = np.asarray(_critical_lost(alpha, n), dtype=np.int64)
    d_step, c_now = d_values[:-1], crit[:-1]
    stays = crit[1:] == c_now
    step = np.where(
        stays,
        q * _binom_pmf(c_now - 1, d_step, q, log_fact),
        -(1.0 - q) * _binom_pmf(c_now, d_step, q, log_fact),
    )
    start = 1.0 if crit[0] <= 0 else 0.0
    p_reject = np.clip(np.concatenate(([start], start + np.cumsum(step))), 0.0, 1.0)
    return float(np.sum(p_d * p_reject))


def min_detectable_drop(
    n: int, alpha: float, power: float, discordance: float = 0.0
) -> float | None:
    """Smallest accuracy drop the exact McNemar test detects with `power` at level `alpha`.

    Method: the drop d means P(lost) - P(gained) = d. How hard d is to detect
    depends on the discordance rate (share of items that flip either way);
    we assume it is `max(discordance, d)`, where `discordance` is the
    observed rate (lost + gained) / n. The lower bound d is the most
    favourable case (every flip a loss), so with no observed flips the answer
    is optimistic rather than alarmist; with a fragile model that flips many
    answers both ways the detectable drop grows, as it should. Power is the
    exact unconditional power (`mcnemar_power`); bisection on d, whose power
    is monotone under this assumption. Returns None when even d = 1 (every
    item lost) cannot reach the power: the sample is hopeless.
    """
    if n <= 0:
        return None
    if mcnemar_power(n, 1.0, 1.0, alpha) < power:
        return None
    lo, hi = 0.0, 1.0
    # 40 halvings pin d to ~1e-12, far below anything a report prints.
    for _ in range(40):
        mid = (lo + hi) / 2.0
        if mcnemar_power(n, mid, max(discordance, mid), alpha) >= power:
            hi = mid
        else:
            lo = mid
    return hi


def pct(x: float) -> str:
    """A fraction as a percentage with one decimal, for reasons."""
    if math.isnan(x):
        return "n/a"
    return f"{100.0 * x:.1f}%"
