"""Ratios over interleaved perf blocks: the point from every request, the interval from the blocks.

Side-by-side runtimes run each scenario in blocks, reference then candidate
(qgate/run/together.py). A block pair sees one machine state; the next pair
may see another. The request bootstrap of qgate/perf/compare.py covers only
the noise between requests, so here each metric's ratio also gets the spread
of its per-block ratios: with B block pairs and r_b = candidate / reference
in pair b, the block interval is exp(mean(log r_b) -/+ t(0.975, B-1) *
sd(log r_b) / sqrt(B)), a Student-t interval on the log ratio (ratios are
multiplicative, and their logs are near normal for small effects). The
reported interval is the union of the request interval and the block
interval, so it never claims less uncertainty than either; the gates judge
it. The point estimate pools every block's requests of a side.

With one block per side nothing changes (the figures equal compare()'s),
which is also how reports without blocks re-derive. The t quantiles are a
table (no scipy at import time): t(0.975, df) for df = 1..19, the most
blocks perf.blocks allows being 20.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from qgate.perf.compare import MetricComparison
from qgate.perf.records import ScenarioRun

__all__ = ["BlockCompare", "block_interval", "by_block", "compare_blocks", "pooled"]

# t(0.975, df), df = 1..19 (two-sided 95%)
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
         2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093)  # fmt: skip

BlockCompare = Callable[..., list[MetricComparison]]


def by_block(runs: Sequence[ScenarioRun]) -> list[ScenarioRun]:
    """One side's runs of one scenario in block order."""
    return sorted(runs, key=lambda r: r.block)


def pooled(runs: Sequence[ScenarioRun]) -> ScenarioRun:
    """One side's blocks as one run: every request, the measured windows summed."""
    ordered = by_block(runs)
    if len(ordered) == 1:
        return ordered[0]
    first = ordered[0]
    return first.model_copy(update={
        "requests": [q for r in ordered for q in r.requests],
        "duration_ns": sum(r.duration_ns for r in ordered),
        "counters_before": {},
        "counters_after": {},
    })  # fmt: skip


def block_interval(ratios: Sequence[float | None]) -> tuple[float | None, float | None]:
    """Student-t 95% interval of the ratio from per-block ratios (None below 2 positive ones)."""
    logs = [math.log(r) for r in ratios if r is not None and r > 0 and math.isfinite(r)]
    if len(logs) < 2:
        return None, None
    n = len(logs)
    mean = sum(logs) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (n - 1))
    half = _T975[min(n - 1, len(_T975)) - 1] * sd / math.sqrt(n)
    return math.exp(mean - half), math.exp(mean + half)


def _union(a: float | None, b: float | None, pick: Callable[[float, float], float]) -> float | None:
    if a is None:
        return b
    return a if b is None else pick(a, b)


def compare_blocks(
    references: Sequence[ScenarioRun],
    candidates: Sequence[ScenarioRun],
    *,
    resamples: int,
    seed: int,
    compare: BlockCompare,
) -> list[MetricComparison]:
    """Per-metric comparison of one scenario's blocks (pure; `verify` recomputes it)."""
    refs, cands = by_block(references), by_block(candidates)
    rows = compare(pooled(refs), pooled(cands), resamples=resamples, seed=seed)
    pairs = list(zip(refs, cands, strict=False))
    if len(pairs) < 2:
        return rows
    per_block = [compare(r, c, resamples=0, seed=seed) for r, c in pairs]
    out: list[MetricComparison] = []
    for k, row in enumerate(rows):
        ratios = [block[k].ratio for block in per_block]
        lo, hi = block_interval(ratios)
        update: dict[str, object] = {"blocks": len(pairs), "block_ratios": ratios,
                                     "block_ci_low": lo, "block_ci_high": hi}  # fmt: skip
        if row.ratio is not None:
            update["ci_low"] = _union(row.ci_low, lo, min)
            update["ci_high"] = _union(row.ci_high, hi, max)
        out.append(row.model_copy(update=update))
    return out
