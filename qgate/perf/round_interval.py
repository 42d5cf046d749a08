"""The across-round interval of a ratio (perf.rounds): each round is the unit.

A round is a pair of fresh server lives, one per side; its ratio (its blocks pooled)
already carries every noise within the round: requests, blocks, the machine state of those
lives. So with R rounds and l_r the log of round r's ratio, the ratio's 95% interval is
Student's: mean(l) -/+ t(0.975, R-1) * s / sqrt(R), s the sample standard deviation of the
l_r, and nothing within a round is added to it again (perf derivation 7; derivation 6 used
1.96 * s / sqrt(R) in quadrature with the request and block half-widths, which by simulation
covered 70% at R = 2, 81% at 3, 86% at 4). The reported ratio is exp(mean), the interval's
centre, so a centre can no longer lie outside its own interval. One floor (qgate/perf/
blocks.py): on each side the interval is at least as wide as the noise within one life (the
request bootstrap with the block spread), so rounds that happen to agree do not make a point
of the ratio; a floor takes the larger of the two, it adds nothing.

ABBA order: odd rounds run the sides in the reverse order (`swapped`). When a side that runs
second is favoured (or hurt), the rounds of one order sit apart from the other's. From four
rounds on, with both orders present, the order is fitted: l_r = mu + delta * o_r + e_r, o_r
= +1/2 in rounds of round 0's order and -1/2 in swapped ones; the ratio is exp(mu-hat), mu-hat
the mean of the two orders' means (equal weight whatever their counts), its standard error
sigma-hat * sqrt((1/n_A + 1/n_B) / 4) with sigma-hat^2 = the within-order sum of squares / (R -
2), and the quantile t(0.975, R - 2). An order effect then moves neither the centre nor the
width; with fewer rounds it is left in s (the interval widens, it does not shift by more than
it widens). tests/unit/perf/test_round_interval.py shows the coverage by simulation at every R
a profile accepts (2 .. 10), with and without an order effect.

Two rounds hold one degree of freedom: t(0.975, 1) = 12.7, so the interval is the mean -/+
about 9 round standard deviations and bounds nothing; a profile with speed gates must ask for
3 rounds or more (qgate/profile/scenarios.py refuses 2 at validate).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

from qgate.core.plan import swapped

__all__ = ["FIT_ORDER_FROM", "T975", "RoundInterval", "round_interval", "t975"]

# Student's t 97.5th percentile by degrees of freedom. A table, not scipy: qgate's own
# dependencies do not include scipy (it is a test dependency; tests/unit/perf/
# test_round_interval.py checks this table against scipy.stats.t). perf.rounds is at most 10.
T975 = {
    1: 12.706204736,
    2: 4.302652730,
    3: 3.182446305,
    4: 2.776445105,
    5: 2.570581836,
    6: 2.446911851,
    7: 2.364624252,
    8: 2.306004135,
    9: 2.262157163,
    10: 2.228138852,
    11: 2.200985160,
    12: 2.178812830,
    13: 2.160368656,
    14: 2.144786688,
    15: 2.131449546,
    16: 2.119905299,
    17: 2.109815578,
    18: 2.100922040,
    19: 2.093024054,
    20: 2.085963447,
}

FIT_ORDER_FROM = 4
"""Rounds from which the ABBA order is fitted (both orders present): two parameters, and at
least two degrees of freedom left for the spread."""


def t975(dof: int) -> float:
    """t(0.975, dof); beyond the table its last entry (wider than the true quantile)."""
    return T975[min(dof, max(T975))]


class RoundInterval(NamedTuple):
    """The round-unit estimate of a log ratio: centre, half-width, degrees of freedom, and
    whether the ABBA order was fitted."""

    centre: float
    half: float
    dof: int
    order_fitted: bool

    @property
    def low(self) -> float:
        return math.exp(self.centre - self.half)

    @property
    def high(self) -> float:
        return math.exp(self.centre + self.half)


def round_interval(ratios: Sequence[float | None], rounds: Sequence[int]) -> RoundInterval | None:
    """The across-round 95% interval from each round's ratio (`rounds`: their 0-based round
    numbers, for the ABBA order); None below two positive finite ratios."""
    pairs = [
        (math.log(r), swapped(k))
        for r, k in zip(ratios, rounds, strict=True)
        if r is not None and r > 0 and math.isfinite(r)
    ]
    n = len(pairs)
    if n < 2:
        return None
    first = [x for x, s in pairs if not s]
    second = [x for x, s in pairs if s]
    if n >= FIT_ORDER_FROM and first and second:
        mean_a, mean_b = sum(first) / len(first), sum(second) / len(second)
        squares = sum((x - mean_a) ** 2 for x in first) + sum((x - mean_b) ** 2 for x in second)
        dof = n - 2
        se = math.sqrt(squares / dof) * math.sqrt((1 / len(first) + 1 / len(second)) / 4)
        return RoundInterval((mean_a + mean_b) / 2, t975(dof) * se, dof, True)
    logs = [x for x, _ in pairs]
    mean = sum(logs) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (n - 1))
    return RoundInterval(mean, t975(n - 1) * sd / math.sqrt(n), n - 1, False)
