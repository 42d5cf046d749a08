"""Statistics of paired exact-answer results: Wilson intervals, flips, exact McNemar, power.

Everything here is pure and deterministic: `qgate verify` recomputes verdicts
from the raw records with these same functions.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable

import numpy as np
from pydantic import Field
from scipy.stats import binom, binomtest

from qgate.models import Record


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
    """Two-sided Wilson score interval of a proportion k/n; (0, 1) when n is 0."""
    if n == 0:
        return (0.0, 1.0)
    if not 0 <= k <= n:
        raise ValueError(f"k={k} outside 0..n={n}")
    ci = binomtest(k, n).proportion_ci(confidence_level=confidence, method="wilson")
    return (float(ci.low), float(ci.high))


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
    return float(binomtest(lost, d, 0.5, alternative="greater").pvalue)


@functools.lru_cache(maxsize=64)
def _critical_lost(alpha: float, max_d: int) -> tuple[int, ...]:
    """For every discordant count D in 0..max_d, the smallest `lost` that rejects at alpha.

    Returns D + 1 (impossible) where no count can reject (small D). Cached:
    the power search calls it with the same arguments many times.
    """
    crit = np.empty(max_d + 1, dtype=np.int64)
    for d in range(max_d + 1):
        # sf(c - 1) = P(X >= c); find the smallest c with P(X >= c) <= alpha.
        c_values = np.arange(d + 2)
        tail = binom.sf(c_values - 1, d, 0.5)
        ok = np.nonzero(tail <= alpha)[0]
        crit[d] = int(c_values[ok[0]]) if ok.size else d + 1
    return tuple(int(c) for c in crit)


def mcnemar_power(n: int, drop: float, discordance: float, alpha: float) -> float:
    """Exact (unconditional) power of the one-sided exact McNemar test.

    Model: each of n items is discordant with probability `discordance`; a
    discordant item is a loss with probability q = (1 + drop / discordance) / 2
    (so that P(lost) - P(gained) = drop). Power = sum over D of
    P(D discordant) * P(lost >= critical(D) | D, q).
    """
    if n <= 0 or drop <= 0 or discordance <= 0:
        return 0.0
    discordance = min(1.0, max(discordance, drop))
    q = min(1.0, (1.0 + drop / discordance) / 2.0)
    d_values = np.arange(n + 1)
    p_d = binom.pmf(d_values, n, discordance)
    crit = np.asarray(_critical_lost(alpha, n), dtype=np.int64)
    p_reject = binom.sf(crit - 1, d_values, q)
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
