from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from qgate.quality.stats import (
    _critical_lost,
    count_flips,
    mcnemar_p,
    mcnemar_power,
    min_detectable_drop,
    wilson,
)


def _wilson_closed_form(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


def test_wilson_textbook_value() -> None:
    low, high = wilson(81, 263)
    assert low == pytest.approx(0.2553, abs=1e-4)
    assert high == pytest.approx(0.3662, abs=1e-4)


@pytest.mark.parametrize(("k", "n"), [(0, 10), (10, 10), (3, 40), (20, 40), (999, 1000)])
def test_wilson_matches_closed_form(k: int, n: int) -> None:
    low, high = wilson(k, n)
    ref_low, ref_high = _wilson_closed_form(k, n)
    assert low == pytest.approx(max(0.0, ref_low), abs=1e-9)
    assert high == pytest.approx(min(1.0, ref_high), abs=1e-9)
    assert low <= k / n <= high


def test_wilson_empty_and_invalid() -> None:
    assert wilson(0, 0) == (0.0, 1.0)
    with pytest.raises(ValueError):
        wilson(5, 3)


def test_wilson_narrower_at_lower_confidence() -> None:
    wide = wilson(30, 100, 0.99)
    narrow = wilson(30, 100, 0.90)
    assert wide[0] < narrow[0] < narrow[1] < wide[1]


def test_count_flips_both_directions() -> None:
    pairs = [(True, True)] * 5 + [(True, False)] * 3 + [(False, True)] * 2 + [(False, False)] * 4
    flips = count_flips(pairs)
    assert (flips.both_correct, flips.lost, flips.gained, flips.both_wrong) == (5, 3, 2, 4)
    assert flips.n == 14
    assert flips.discordant == 5


def test_mcnemar_exact_sums() -> None:
    # P(X >= k), X ~ Bin(d, 1/2), summed by hand.
    assert mcnemar_p(5, 0) == pytest.approx(1 / 32)
    assert mcnemar_p(3, 1) == pytest.approx((4 + 1) / 16)
    assert mcnemar_p(8, 2) == pytest.approx((45 + 10 + 1) / 1024)
    assert mcnemar_p(0, 6) == pytest.approx(1.0)
    assert mcnemar_p(0, 0) == 1.0


def test_mcnemar_more_losses_smaller_p() -> None:
    assert mcnemar_p(9, 1) < mcnemar_p(6, 4) < mcnemar_p(4, 6)


def test_power_increases_with_drop_and_n() -> None:
    assert mcnemar_power(100, 0.05, 0.1, 0.05) < mcnemar_power(100, 0.10, 0.1, 0.05)
    assert mcnemar_power(100, 0.05, 0.1, 0.05) < mcnemar_power(400, 0.05, 0.1, 0.05)
    assert mcnemar_power(100, 0.0, 0.1, 0.05) == 0.0


def test_power_best_case_is_binomial_tail() -> None:
    # discordance == drop: every flip is a loss; rejecting needs >= 5 losses at
    # alpha 0.05 (0.5**5 = 0.031 <= 0.05 < 0.5**4), so power = P(Bin(n, d) >= 5).
    n, d = 40, 0.1
    tail = sum(math.comb(n, j) * d**j * (1 - d) ** (n - j) for j in range(5, n + 1))
    assert mcnemar_power(n, d, d, 0.05) == pytest.approx(tail, rel=1e-9)


def test_min_detectable_drop_reaches_power_and_is_minimal() -> None:
    d = min_detectable_drop(100, 0.05, 0.8)
    assert d is not None
    assert mcnemar_power(100, d, d, 0.05) >= 0.8
    assert mcnemar_power(100, d * 0.98, d * 0.98, 0.05) < 0.8


def test_min_detectable_drop_shrinks_with_n_grows_with_discordance() -> None:
    small = min_detectable_drop(40, 0.05, 0.8)
    large = min_detectable_drop(1000, 0.05, 0.8)
    fragile = min_detectable_drop(1000, 0.05, 0.8, discordance=0.3)
    assert small is not None and large is not None and fragile is not None
    assert large < small
    assert fragile > large
    assert small > 0.01  # 40 items cannot detect a one-point drop


def test_min_detectable_drop_hopeless_sample() -> None:
    assert min_detectable_drop(3, 0.05, 0.8) is None
    assert min_detectable_drop(0, 0.05, 0.8) is None


def _tail(d: int, c: int) -> Fraction:
    return Fraction(sum(math.comb(d, j) for j in range(max(c, 0), d + 1)), 2**d)


@pytest.mark.parametrize("alpha", [0.05, 0.01, 0.5, 0.3])
def test_critical_lost_is_the_smallest_rejecting_count(alpha: float) -> None:
    crit = _critical_lost(alpha, 80)
    for d, c in enumerate(crit):
        assert c > d or _tail(d, c) < Fraction(alpha)  # exact: a tie at alpha 0.5 passes
        assert c == 0 or _tail(d, c - 1) >= Fraction(alpha)


def test_mcnemar_p_is_the_exact_tail_correctly_rounded() -> None:
    for lost, gained in [(1700, 1300), (1300, 1700), (2999, 1), (40, 41)]:
        assert mcnemar_p(lost, gained) == float(_tail(lost + gained, lost))


@pytest.mark.parametrize(("n", "drop", "disc"), [(30, 0.1, 0.3), (25, 0.02, 0.5), (12, 0.3, 0.3)])
def test_power_equals_the_direct_double_sum(n: int, drop: float, disc: float) -> None:
    q = (1 + drop / disc) / 2
    crit = _critical_lost(0.05, n)
    want = sum(
        math.comb(n, d)
        * disc**d
        * (1 - disc) ** (n - d)
        * sum(math.comb(d, j) * q**j * (1 - q) ** (d - j) for j in range(crit[d], d + 1))
        for d in range(n + 1)
    )
    assert mcnemar_power(n, drop, disc, 0.05) == pytest.approx(want, rel=1e-12, abs=1e-15)


def test_agrees_with_scipy() -> None:
    stats = pytest.importorskip("scipy.stats")
    for k, n in [(81, 263), (0, 7), (7, 7), (4000, 5000)]:
        ci = stats.binomtest(k, n).proportion_ci(method="wilson")
        assert wilson(k, n) == pytest.approx((ci.low, ci.high), rel=1e-14, abs=1e-15)
    for n, drop, disc in [(5000, 0.02, 0.3), (400, 0.05, 0.05), (1000, 0.01, 0.2)]:
        q = (1 + drop / disc) / 2
        d = np.arange(n + 1)
        crit = np.asarray(_critical_lost(0.05, n))
        want = float(np.sum(stats.binom.pmf(d, n, disc) * stats.binom.sf(crit - 1, d, q)))
        assert mcnemar_power(n, drop, disc, 0.05) == pytest.approx(want, rel=1e-10)
