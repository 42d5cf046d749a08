"""The significance gate and the power behind sizing decide every table by one rule.

Exhaustive over every paired table of n <= 40 items, at alphas the exact test
can hit (1/2^k, 0.25, 0.5, 0.375) and at alphas it cannot: the gate's verdict
on each table must be the rejection region the power function integrates over.
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from qgate.gates.suite import _outcomes
from qgate.profile import AccuracyPolicy, Detect
from qgate.quality.sizing import items_needed
from qgate.quality.stats import FlipCounts, _critical_lost, mcnemar_power

N_MAX = 40
# every p-value the exact test takes with at most 6 discordant pairs, and 1/2^k: p = alpha happens
TIED = sorted(
    {
        sum(math.comb(d, j) for j in range(c, d + 1)) / 2**d
        for d in range(1, 7)
        for c in range(1, d + 1)
    }
    | {2.0**-k for k in range(1, 11)}
)
UNTIED = [0.05, 0.01, 0.0167, 0.1, 0.3, 0.2]


def _gate_rejects(lost: int, gained: int, n: int, alpha: float | AccuracyPolicy) -> bool:
    policy = alpha if isinstance(alpha, AccuracyPolicy) else AccuracyPolicy(alpha=alpha)
    table = FlipCounts(both_correct=n - lost - gained, lost=lost, gained=gained, both_wrong=0)
    return _outcomes(policy, table)["significance"] == "fail"


def _gate_power(n: int, drop: float, disc: float, alpha: float) -> float:
    """P(the gate rejects) under the power model, summed over every table of n items."""
    p_lost, p_gained = (disc + drop) / 2, (disc - drop) / 2
    total = 0.0
    for lost in range(n + 1):
        for gained in range(n - lost + 1):
            if _gate_rejects(lost, gained, n, alpha):
                rest = n - lost - gained
                ways = math.comb(n, lost) * math.comb(n - lost, gained)
                total += ways * p_lost**lost * p_gained**gained * (1 - disc) ** rest
    return total


@pytest.mark.parametrize("alpha", TIED + UNTIED)
def test_the_gate_rejects_exactly_the_power_functions_region(alpha: float) -> None:
    crit = _critical_lost(alpha, N_MAX)
    policy = AccuracyPolicy(alpha=alpha)
    tables = contradictions = 0
    for n in range(N_MAX + 1):
        for lost in range(n + 1):
            for gained in range(n - lost + 1):
                tables += 1
                region = lost >= crit[lost + gained]
                contradictions += region != _gate_rejects(lost, gained, n, policy)
    assert tables == math.comb(N_MAX + 3, 3)
    assert contradictions == 0


@pytest.mark.parametrize("alpha", TIED + UNTIED)
def test_the_critical_count_is_the_smallest_with_p_below_alpha(alpha: float) -> None:
    for d, c in enumerate(_critical_lost(alpha, N_MAX)):
        tail = [Fraction(sum(math.comb(d, j) for j in range(k, d + 1)), 2**d) for k in (c, c - 1)]
        assert c > d or tail[0] < Fraction(alpha)  # strictly: a tie at alpha passes
        assert c == 0 or tail[1] >= Fraction(alpha)


@pytest.mark.parametrize("alpha", [0.03125, 0.25, 0.5, 0.05, 0.0167])
@pytest.mark.parametrize(("drop", "disc"), [(0.1, 0.3), (0.4, 1.0), (1.0, 1.0), (0.05, 0.05)])
def test_the_power_is_the_gates_rejection_probability(
    alpha: float, drop: float, disc: float
) -> None:
    for n in range(1, N_MAX + 1):
        want = _gate_power(n, drop, disc, alpha)
        assert mcnemar_power(n, drop, disc, alpha) == pytest.approx(want, rel=1e-9, abs=1e-12)


def test_five_items_lost_at_alpha_one_32nd_do_not_fail_the_gate_so_have_no_power() -> None:
    assert not _gate_rejects(5, 0, 5, 0.03125)
    assert mcnemar_power(5, 1.0, 1.0, 0.03125) == 0.0
    assert items_needed(Detect(drop=1.0, power=0.9), 0.03125).used == 6


def test_the_claimed_power_at_a_tied_alpha_is_the_gates() -> None:
    sizing = items_needed(Detect(drop=0.1, power=0.8), 0.5)
    assert sizing.power_at_used >= 0.8
    gate = _gate_power(sizing.used, 0.1, sizing.discordance, 0.5)
    assert sizing.power_at_used == pytest.approx(gate, rel=1e-9)
