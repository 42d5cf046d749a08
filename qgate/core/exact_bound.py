"""The exact unconditional p-value behind `bounds.exact_upper` (issue 53), and its supremum
over the nuisance refined to keep its level (quality derivation 7).

The p-value of H0: Δ >= δ for a table of `n` items is the largest, over the gained rate q,
of the chance of a table at least as extreme by Tango's statistic. Derivations 6 and before
took that largest on 61 evenly spaced values of q (both ends among them). Between two of
them the chance can be a little higher, so the p-value read a hair low and the test slipped
past its level: 1.0002 α at n 27, δ 0.20, α 0.0167 (perf/bench_level.py). From derivation 7
(`refined`) the supremum is searched further around the grid's largest: 41 points across the
two grid steps beside it, then 41 across the two fine steps beside the best of those, so the
step at the top is 1/400 of the grid's; and q starts at max(0, -δ), where the lost rate
q + δ is a rate (a negative δ is asked of the lower bound). The refined p-value is never
below the grid's (the grid is kept), so the refined bound is never below derivation 6's.
This is a numerical search, not a proof: its level is measured, exactly over the trinomial
and on a nuisance grid of its own, by perf/bench_level.py.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import numpy.typing as npt

__all__ = ["GRID", "REFINE", "exact_p", "exact_shows", "tango_statistic"]

GRID = 60  # nuisance steps for the supremum (61 points with both ends)
REFINE = 40  # steps of each refining pass across two steps of the pass before (41 points)

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.intp]


def tango_statistic(lost: Floats | float, gained: Floats | float, n: int, delta: float) -> Floats:
    """Tango's statistic for H0: Δ = delta (negative when the data show less loss)."""
    b = np.asarray(lost, dtype=np.float64)
    c = np.asarray(gained, dtype=np.float64)
    w = -b - c + (2 * n - b + c) * delta
    q = (np.sqrt(np.maximum(w * w + 8 * n * c * delta * (1 - delta), 0.0)) - w) / (4 * n)
    var = n * (2 * q + delta * (1 - delta))
    num = b - c - n * delta
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(var > 0, num / np.sqrt(np.where(var > 0, var, 1.0)), np.sign(num) * np.inf)
    return np.where(num == 0, 0.0, z)


@lru_cache(maxsize=4096)
def _cells(n: int) -> tuple[Floats, Floats, Floats]:
    """Every (lost, gained) with lost + gained <= n, and the log multinomial coefficient."""
    b, c = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    keep = b + c <= n
    bb, cc = b[keep].astype(np.float64), c[keep].astype(np.float64)
    lf = np.array([math.lgamma(k + 1) for k in range(n + 1)])
    coef = lf[n] - lf[bb.astype(int)] - lf[cc.astype(int)] - lf[(n - bb - cc).astype(int)]
    return bb, cc, coef


def _log_rates(count: Floats, rates: Floats) -> Floats:
    """count x log(rate) over a column of rates, with 0 x log(0) = 0."""
    rates = np.maximum(rates, 0.0)
    out = count * np.log(rates)
    return np.where(count == 0, 0.0, out)


def _pmf(n: int, delta: float, qs: Floats, b: Floats, c: Floats, coef: Floats) -> Floats:
    """The chance of each table (columns) at each gained rate (rows: `qs`)."""
    q = qs[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = coef + _log_rates(b, q + delta) + _log_rates(c, q)
        logs = logs + _log_rates(n - b - c, 1 - 2 * q - delta)
    return np.exp(logs)


def _span(delta: float, refined: bool) -> tuple[float, float]:
    return (max(0.0, -delta) if refined else 0.0), (1 - delta) / 2


def _around(low: float, high: float, at: float, step: float) -> Floats:
    """REFINE steps across [at - step, at + step], clipped to [low, high]."""
    return np.linspace(max(low, at - step), min(high, at + step), REFINE + 1)


def exact_p(lost: int, gained: int, n: int, delta: float, *, refined: bool = False) -> float:
    """The exact unconditional p-value of H0: Δ >= delta against Δ < delta: the supremum over
    the gained rate q of P(Z <= z_observed), Z Tango's statistic at delta; on the grid, or
    (`refined`, derivation 7) searched further around its largest."""
    b, c, coef = _cells(n)
    tail = tango_statistic(b, c, n, delta) <= float(tango_statistic(lost, gained, n, delta)) + 1e-12
    bt, ct, kt = b[tail], c[tail], coef[tail]
    low, high = _span(delta, refined)
    qs = np.linspace(low, high, GRID + 1)
    sizes = _pmf(n, delta, qs, bt, ct, kt).sum(axis=1)
    best = float(sizes.max())
    if refined:
        at, step = float(qs[int(sizes.argmax())]), (high - low) / GRID
        for _ in range(2):
            fine = _around(low, high, at, step)
            sizes = _pmf(n, delta, fine, bt, ct, kt).sum(axis=1)
            best = max(best, float(sizes.max()))
            at, step = float(fine[int(sizes.argmax())]), 2 * step / REFINE
    return min(best, 1.0)


def exact_shows(
    n: int, margin: float, confidence: float, *, refined: bool = False
) -> npt.NDArray[np.bool_]:
    """Whether each (lost, gained) table of `n` items (lost-major, lost + gained <= n) shows a
    loss below `margin` by the exact bound (its exact p-value at the margin at most
    1 - confidence): every table's p-value at once, the tables summed in the order of
    Tango's statistic for each nuisance value on `exact_p`'s grid; with `refined`, the tables
    the grid shows searched further as `exact_p` searches them (grouped by where they look)."""
    b, c, coef = _cells(n)
    z = tango_statistic(b, c, n, margin)
    order = np.argsort(z, kind="stable")
    ranked = z[order]
    last = np.searchsorted(ranked, ranked + 1e-12, side="right") - 1  # ties as exact_p's
    low, high = _span(margin, refined)
    qs = np.linspace(low, high, GRID + 1)
    tails = np.cumsum(_pmf(n, margin, qs, b, c, coef)[:, order], axis=1)[:, last]
    p = tails.max(axis=0)  # in rank order
    if refined:
        alpha = 1 - confidence
        rank = np.flatnonzero(p <= alpha)
        at = qs[tails[:, rank].argmax(axis=0)]
        step = (high - low) / GRID
        for _ in range(2):
            best = np.empty(len(rank))
            where = np.empty(len(rank))
            for centre in np.unique(at):
                group = at == centre
                fine = _around(low, high, float(centre), step)
                cum = np.cumsum(_pmf(n, margin, fine, b, c, coef)[:, order], axis=1)
                sizes = cum[:, last[rank[group]]]
                best[group] = sizes.max(axis=0)
                where[group] = fine[sizes.argmax(axis=0)]
            p[rank] = np.maximum(p[rank], best)
            at, step = where, 2 * step / REFINE
    shows = np.empty(len(b), dtype=bool)
    shows[order] = p <= 1 - confidence
    return shows
