"""What quality derivation 7's refined exact bound costs: time per bound and power (issue 53).

    PYTHONPATH=$PWD .venv/bin/python perf/bench_refined.py     # ~1-2 minutes of one core

Derivation 7 searches the exact bound's supremum over the nuisance past its 61-point grid
(qgate/core/exact_bound.py), at 40 paired items or fewer. This prints how close that search
comes to a supremum on 20,001 points; and beside derivation 6's grid, for the same tables:
the wall time of one bound (its bisection, cache cleared), the fewest clean items that show
a margin, the chance that a candidate with no true loss PASSes (`show_power`, summed
exactly), the items `show` sizes for 80% of it, and the FAIL side's power (derivation 7's
mirrored lower bound against Tango's plain one). The level itself is perf/bench_level.py's.
"""

from __future__ import annotations

import math
import random
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from qgate.core import bounds, exact_bound  # noqa: E402
from qgate.core.corrected_score import corrected_rejects  # noqa: E402

TABLES = ((0, 0), (1, 0), (2, 1), (3, 3), (5, 2), (4, 6))
NS = (10, 20, 30, 40)
MARGINS = (0.05, 0.10, 0.15, 0.20, 0.25, 0.30)
ALPHAS = (0.05, 0.0167)
POWER_AT = (
    (27, 0.20, 0.3, 0.0167),
    (30, 0.25, 0.4, 0.05),
    (40, 0.15, 0.1, 0.05),
    (40, 0.20, 0.4, 0.05),
)
SIZE_AT = ((0.20, 0.1, 0.05), (0.25, 0.2, 0.05), (0.30, 0.3, 0.0167), (0.20, 0.3, 0.05))


GAINED = 0.05
FAIL_AT = (
    (20, 0.15, 0.45, 0.05),
    (30, 0.10, 0.30, 0.05),
    (40, 0.15, 0.40, 0.0167),
    (81, 0.10, 0.25, 0.05),
    (200, 0.05, 0.12, 0.05),
)


def fail_power(n: int, margin: float, loss: float, alpha: float) -> tuple[float, float]:
    """The chance of a FAIL (lower bound above the margin) at a true loss `loss`, items gained
    at GAINED: by Tango's plain lower bound (derivation 6) and the mirrored one (derivation 7)."""
    b, c, coef = exact_bound._cells(n)
    z = bounds._z(1 - alpha)
    plain = bounds.score_rejects(c, b, n, -margin, z)
    if n <= bounds.EXACT_MAX:
        bi, ci = c.astype(int), b.astype(int)
        mirror = bi * (n + 1) - bi * (bi - 1) // 2 + ci
        mirrored = exact_bound.exact_shows(n, -margin, 1 - alpha, refined=True)[mirror]
    else:
        mirrored = corrected_rejects(c, b, n, -margin, z)
    rates = ((b, loss + GAINED), (c, GAINED), (n - b - c, 1 - loss - 2 * GAINED))
    logs = coef + sum(exact_bound._log_rates(k, np.full_like(k, r)) for k, r in rates)
    p = [math.exp(v) for v in logs]
    return (
        sum(pi for pi, f in zip(p, plain, strict=True) if f),
        sum(pi for pi, f in zip(p, mirrored, strict=True) if f),
    )


def dense_shortfall() -> tuple[float, float, int]:
    """The largest relative shortfall of the grid's and the refined supremum against one on
    20,001 evenly spaced nuisance values, over 8 random tables (seed 7) at each n 10, 20, 27,
    33, 40 and δ 0.02-0.30 (and -0.1, -0.2 for the refined one: the mirrored lower bound's)."""
    rng = random.Random(7)
    grid_worst = fine_worst = 0.0
    count = 0
    for n in (10, 20, 27, 33, 40):
        b, c, coef = exact_bound._cells(n)
        for delta in (0.02, 0.05, 0.1, 0.2, 0.3, -0.1, -0.2):
            for _ in range(8):
                i = rng.randrange(len(b))
                lost, gained = int(b[i]), int(c[i])
                fine = exact_bound.exact_p(lost, gained, n, delta, refined=True)
                stat = exact_bound.tango_statistic
                tail = stat(b, c, n, delta) <= float(stat(lost, gained, n, delta)) + 1e-12
                qs = np.linspace(max(0.0, -delta), (1 - delta) / 2, 20001)
                pmf = exact_bound._pmf(n, delta, qs, b[tail], c[tail], coef[tail])
                dense = min(float(pmf.sum(axis=1).max()), 1.0)
                fine_worst = max(fine_worst, (dense - fine) / dense)
                if delta > 0:
                    grid = exact_bound.exact_p(lost, gained, n, delta)
                    grid_worst = max(grid_worst, (dense - grid) / dense)
                count += 1
    return grid_worst, fine_worst, count


def per_bound(refined: bool) -> dict[int, float]:
    """Milliseconds per bound at each n, the mean over TABLES at 95%."""
    out = {}
    for n in NS:
        bounds.exact_upper.cache_clear()
        start = time.perf_counter()
        for lost, gained in TABLES:
            bounds.exact_upper(lost, gained, n, 0.95, refined=refined)
        out[n] = 1000 * (time.perf_counter() - start) / len(TABLES)
    return out


def main() -> None:
    grid_short, fine_short, tables = dense_shortfall()
    print(
        f"supremum against 20,001 points, {tables} random tables: the grid up to "
        f"{100 * grid_short:.2f}% low, the refined {fine_short:.1e}\n"
    )
    grid, fine = per_bound(False), per_bound(True)
    print("| n | ms per bound, derivation 6 (grid) | derivation 7 (refined) | ratio |")
    print("|---|---|---|---|")
    for n in NS:
        print(f"| {n} | {grid[n]:.1f} | {fine[n]:.1f} | {fine[n] / grid[n]:.2f} |")
    print("\n| α | margin | clean items to show, derivation 6 | derivation 7 |")
    print("|---|---|---|---|")
    for alpha in ALPHAS:
        for m in MARGINS:
            a = bounds.clean_items_to_show(m, 1 - alpha, refined=False)
            b = bounds.clean_items_to_show(m, 1 - alpha, refined=True)
            print(f"| {alpha:g} | {m:g} | {a} | {b} |")
    print("\n| n, δ, d, α | show power, derivation 6 | derivation 7 |")
    print("|---|---|---|")
    for n, m, d, alpha in POWER_AT:
        a = bounds.show_power(n, m, d, 1 - alpha, refined=False)
        b = bounds.show_power(n, m, d, 1 - alpha, refined=True)
        print(f"| {n}, {m:g}, {d:g}, {alpha:g} | {a:.4f} | {b:.4f} |")
    print("\n| δ, d, α | items for 80% show power, derivation 6 | derivation 7 |")
    print("|---|---|---|")
    for m, d, alpha in SIZE_AT:
        a = bounds.items_to_show(m, d, 1 - alpha, refined=False)
        b = bounds.items_to_show(m, d, 1 - alpha, refined=True)
        print(f"| {m:g}, {d:g}, {alpha:g} | {a} | {b} |")
    print("\n| n, δ, true loss, α | FAIL power, derivation 6 (plain lower) | derivation 7 |")
    print("|---|---|---|")
    for n, m, loss, alpha in FAIL_AT:
        a, b = fail_power(n, m, loss, alpha)
        print(f"| {n}, {m:g}, {loss:g}, {alpha:g} | {a:.4f} | {b:.4f} |")


if __name__ == "__main__":
    main()
