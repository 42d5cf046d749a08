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

Floats = npt.NDArray[np.float64]

# Differences of accuracies are ratios of integers; this absorbs float rounding
# so that a drop exactly at the limit passes (the gates' and the ladder's comparisons).
EPS = 1e-12


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


def _cached_length(n: int) -> int:
    """A power of two above n (at least 64): caches keyed by it serve every shorter request."""
    return max(64, 1 << (n + 1).bit_length())


def _critical_lost(alpha: float, max_d: int) -> tuple[int, ...]:
    """For every discordant count D in 0..max_d, the smallest `lost` that rejects at alpha."""
    return _critical_walk(alpha, _cached_length(max_d))[: max_d + 1]


@functools.lru_cache(maxsize=64)
def _critical_array(alpha: float, length: int) -> npt.NDArray[np.int64]:
    """`_critical_walk` as a read-only array (it is cached)."""
    out = np.asarray(_critical_walk(alpha, length), dtype=np.int64)
    out.flags.writeable = False
    return out


@functools.lru_cache(maxsize=64)
def _critical_walk(alpha: float, max_d: int) -> tuple[int, ...]:
    """For every discordant count D in 0..max_d, the smallest `lost` that rejects at alpha.

    The smallest c with P(X >= c) < alpha for X ~ Binomial(D, 1/2), the gate's
    rule (`mcnemar_rejects`: a tie at alpha passes); D + 1 (impossible) where no
    count can reject (small D). Exact: with T(D, c) = sum_{j >= c} C(D, j) the
    test is T(D, c) * den < num * 2**D for alpha = num / den. The critical count
    grows by 0 or 1 from D to D + 1 (adding one pair moves each tail up by at
    most one step), and
    T(D + 1, c) = 2 T(D, c) + C(D, c - 1), so one walk over D finds them all.
    Cached at lengths that are powers of two: sizing asks for every n in turn.
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


def _log_factorials(n: int) -> npt.NDArray[np.float64]:
    """log(k!) for k in 0..n (read-only: it is cached)."""
    return _log_factorial_table(_cached_length(n))[: n + 1]


@functools.lru_cache(maxsize=8)
def _log_factorial_table(length: int) -> npt.NDArray[np.float64]:
    out = np.array([math.lgamma(k + 1.0) for k in range(length + 1)], dtype=np.float64)
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
    out: Floats = np.exp(np.where(valid, terms, -math.inf))
    return out


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
    check_power_model(drop, discordance, alpha)
    if n <= 0 or drop == 0:
        return 0.0  # nothing to detect (a drop of 0 is the null itself)
    q = min(1.0, (1.0 + drop / discordance) / 2.0)
    log_fact = _log_factorials(n)
    p_d = _binom_pmf(np.arange(n + 1), n, discordance, log_fact)
    return float(np.sum(p_d * _rejection(n, q, alpha, log_fact)))


def check_power_model(drop: float, discordance: float, alpha: float) -> None:
    """ValueError, saying why, for inputs outside the paired model of `mcnemar_power`.

    The drop is P(lost) - P(gained) and the discordance P(lost) + P(gained), so
    0 <= drop <= discordance <= 1; a test level lies strictly between 0 and 1.
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha {alpha!r} is not a test level: it must lie between 0 and 1")
    if not 0.0 <= drop <= 1.0:
        raise ValueError(f"drop {drop!r} is not an accuracy drop: it must lie in [0, 1]")
    if not drop <= discordance <= 1.0:
        raise ValueError(
            f"discordance {discordance!r} must lie in [drop {drop!r}, 1]: a drop of "
            f"{100 * drop:.3g} points needs at least {100 * drop:.3g}% of items to flip"
        )


def _rejection(max_d: int, q: float, alpha: float, log_fact: npt.NDArray[np.float64]) -> Floats:
    """R(D) = P(Binomial(D, q) >= critical(D)) for D in 0..max_d (one cumulative sum)."""
    d_values = np.arange(max_d + 1)
    crit = _critical_array(alpha, _cached_length(max_d))[: max_d + 1]
    d_step, c_now = d_values[:-1], crit[:-1]
    stays = crit[1:] == c_now
    step = np.where(
        stays,
        q * _binom_pmf(c_now - 1, d_step, q, log_fact),
        -(1.0 - q) * _binom_pmf(c_now, d_step, q, log_fact),
    )
    start = 1.0 if crit[0] <= 0 else 0.0
    return np.clip(np.concatenate(([start], start + np.cumsum(step))), 0.0, 1.0)


def _envelope(length: int, q: float, alpha: float) -> tuple[Floats, Floats]:
    """(log factorials, the randomized test's rejection chance at each D) up to `length`.

    The randomized test also rejects at critical - 1 with the chance gamma(D)
    that makes its size exactly alpha.
    """
    log_fact = _log_factorials(length)
    d_values = np.arange(length + 1)
    below = np.maximum(_critical_array(alpha, _cached_length(length))[: length + 1] - 1, 0)
    null_at = _binom_pmf(below, d_values, 0.5, log_fact)
    spare = alpha - _rejection(length, 0.5, alpha, log_fact)
    gamma = np.clip(np.divide(spare, null_at, out=np.ones_like(spare), where=null_at > 0), 0, 1)
    beta = _rejection(length, q, alpha, log_fact) + gamma * _binom_pmf(below, d_values, q, log_fact)
    return log_fact, beta


def smallest_n(
    power: float, drop: float, discordance: float, alpha: float, max_items: int
) -> int | None:
    """The smallest n <= max_items whose `mcnemar_power` reaches `power`; None if none does.

    The exact test's power is a sawtooth in n (the critical count steps), most
    of all when nearly every item flips, so no bisection on it is safe. The
    randomized test of the same level is uniformly most powerful, so its power
    bounds the exact test's from above and never falls as n grows (one more
    pair can always be ignored). Doubling and bisection on that envelope find
    where the exact power can first reach the target; from there a scan of the
    exact power finds the first n that does.
    """
    check_power_model(drop, discordance, alpha)
    if not 0.0 < power < 1.0:
        raise ValueError(f"power {power!r} is not a probability strictly between 0 and 1")
    if max_items < 1:
        raise ValueError(f"max_items {max_items!r}: a sample has at least one item")
    if drop == 0:
        return None
    q = min(1.0, (1.0 + drop / discordance) / 2.0)
    tables: dict[int, tuple[Floats, Floats]] = {}
    slack = 1e-9  # the envelope's rounding: it may only start the scan earlier

    def reaches(n: int) -> bool:
        length = _cached_length(n)
        if length not in tables:
            tables[length] = _envelope(length, q, alpha)
        log_fact, beta = tables[length]
        p_d = _binom_pmf(np.arange(n + 1), n, discordance, log_fact)
        return float(np.sum(p_d * beta[: n + 1])) >= power - slack

    hi = 1
    while hi < max_items and not reaches(hi):
        hi *= 2
    hi = min(hi, max_items)
    if not reaches(hi):
        return None
    lo = hi // 2  # the envelope is below the target at lo (or lo is 0)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if reaches(mid):
            hi = mid
        else:
            lo = mid
    return _first_reaching(hi, max_items, power, drop, discordance, alpha)


def _first_reaching(
    start: int, stop: int, power: float, drop: float, discordance: float, alpha: float
) -> int | None:
    """The first n in start..stop with `mcnemar_power` >= power, 64 values of n at a time.

    The rejection chances R(D) do not depend on n, so a block of n is one
    matrix of binomial probabilities times R; `mcnemar_power` confirms each
    candidate, so rounding can only cost a candidate, never pick a wrong one.
    """
    q = min(1.0, (1.0 + drop / discordance) / 2.0)
    n = start
    while n <= stop:
        ns = np.arange(n, min(n + 64, stop + 1))
        top = int(ns[-1])
        log_fact = _log_factorials(top)
        reject = _rejection(top, q, alpha, log_fact)
        p_d = _binom_pmf(np.arange(top + 1)[None, :], ns[:, None], discordance, log_fact)
        curve = (p_d * reject).sum(axis=1)
        for m in ns[curve >= power - 1e-9].tolist():
            if mcnemar_power(m, drop, discordance, alpha) >= power:
                return int(m)
        n = top + 1
    return None


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
