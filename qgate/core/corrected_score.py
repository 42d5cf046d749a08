"""Tango's score bound corrected to keep its level above the exact range (issue 53: a false
PASS at the margin at most α at every n).

Tango's plain score bound (bounds.score_upper) is asymptotic. Summed exactly over the
trinomial of lost and gained items, the true loss at the margin δ and the nuisance (the rate
of items that flip) at its worst, its false-PASS rate past the exact range is above α at
nearly every n, δ and α the profiles use: up to 1.39 α at α 0.05 (0.069 at n 52, δ 0.05) and
1.95 α at α 0.10 (n 81, δ 0.02, where a table with nothing gained passes on z^2 / (n + z^2)).
Two things slip: the lattice (lost − gained moves in steps of 1, of 2 once every item flips)
and the skew of lost − gained near the ends of the nuisance. The statistic gets a correction
for each, the bound's form kept:

- continuity: (1 + (lost + gained) / n) / 2 added to lost − gained, half its step: 1/2 where
  few items flip, 1 where all do (1/2 alone slips to 1.16 α there; 1 alone costs a third
  more clean items: 79 to show 5 points at 95%, against 59 exact and 61 with this one);
- skew: the Cornish-Fisher term in the critical value, −z + γ(z² − 1)/6, γ the skewness of
  lost − gained at Tango's constrained estimate of the nuisance (the second-order term of
  the Edgeworth expansion; without it a correction of 1 still slips to 1.12 α where every
  item flips).

Measured exactly (perf/bench_level.py, docs/measurements.md): at most α at every n from 41
to 300 and a sample to 2,000, every margin 0.02-0.30 and α 0.0025-0.10; the worst 0.9994 α
(n 268, δ 0.20, α 0.10, every item flipping). Its power is close to the exact bound's where
both are computed (n 41-120: 0-3 points below at 20-40% churn; a margin's fewest clean
items one or two later). A bound costs about what the plain one does (0.6-1 ms against
0.4-0.6 on a 2-core EPYC); the exact bound's cost grows as n^2 per p-value (~25 ms a bound at
60 items, ~300 ms at 200), so it stays at or below `EXACT_MAX`.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

__all__ = ["corrected_rejects"]

Floats = npt.NDArray[np.float64]


def _margin(lost: Floats | float, gained: Floats | float, n: int, delta: float, z: float) -> Floats:
    """The corrected statistic less its critical value at `delta` (at or below 0: the data
    show a loss below `delta`); a table whose loss is within the correction of `delta` never
    does."""
    b = np.asarray(lost, dtype=np.float64)
    c = np.asarray(gained, dtype=np.float64)
    w = -b - c + (2 * n - b + c) * delta
    q = (np.sqrt(np.maximum(w * w + 8 * n * c * delta * (1 - delta), 0.0)) - w) / (4 * n)
    var = 2 * q + delta * (1 - delta)  # per item, at Tango's constrained estimate
    num = b - c - n * delta + (1 + (b + c) / n) / 2  # half the step of lost - gained
    lost_rate, same = q + delta, np.maximum(1 - 2 * q - delta, 0.0)
    third = lost_rate * (1 - delta) ** 3 - q * (1 + delta) ** 3 - same * delta**3
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(var > 0, num / np.sqrt(n * np.where(var > 0, var, 1.0)), -np.inf)
        skew = np.where(var > 0, third / (math.sqrt(n) * np.where(var > 0, var, 1.0) ** 1.5), 0)
    return np.where(num >= 0, np.inf, t + z - skew * (z * z - 1) / 6)


def corrected_rejects(
    lost: Floats | float, gained: Floats | float, n: int, delta: float, z: float
) -> npt.NDArray[np.bool_]:
    """Whether each table shows a loss below `delta` at the one-sided level of `z` (its
    corrected upper bound within `delta`): one evaluation, no inversion."""
    return np.asarray(_margin(lost, gained, n, delta, z) <= 0)
