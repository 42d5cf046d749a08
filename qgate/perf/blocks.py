"""Ratios over interleaved perf blocks: the point from every request, the interval from both.

Side-by-side runtimes run each scenario in blocks, reference then candidate
(qgate/run/together.py). A block pair sees one machine state; the next pair
may see another. The request bootstrap of qgate/perf/compare.py covers only
the noise between requests, so each metric's ratio also gets the spread of
its per-block ratios. On the log scale (ratios are multiplicative), with B
block pairs, l_b = log(candidate / reference) in pair b and s their sample
standard deviation, the between-block half-width is h_b = 1.96 * s / sqrt(B)
(the block interval stored beside the ratio is exp(mean(l) -/+ h_b)). The
reported interval adds it to the request bootstrap's half-widths in
quadrature, each side apart: exp(log r - sqrt(h_lo^2 + h_b^2)) to
exp(log r + sqrt(h_hi^2 + h_b^2)), so it is never narrower than either part
and a machine that drifts between blocks widens it; the gates judge it. The
point estimate pools every block's requests of a side.

Why 1.96 and not Student's t(0.975, B-1): with the default 2 blocks t is
12.7 (4.3 with 3), which turns every interval into "anything from x0.2 to
x5" and measures nothing. The normal quantile understates the uncertainty
of a spread estimated from few blocks; a gate near its limit should ask for
more blocks (perf.blocks). With one block per side nothing changes (the
figures equal compare()'s), which is also how reports without blocks
re-derive.

Rounds (perf.rounds) repeat the perf in fresh server lives of both sides
(ScenarioRun.round), because a restart can move a ratio by more than the
noise within one life (two H200 runs of one profile: x0.75 [0.69, 0.83] and
x0.98 [0.61, 1.58], each interval excluding the other's point). With R >= 2
rounds, each round's ratio pools that round's blocks as `pooled` does, and the
round is the unit (perf derivation 7, qgate/perf/round_interval.py): the
ratio is the centre of the across-round interval, exp(mean of the round log
ratios) (the ABBA order fitted from 4 rounds), and its interval is Student's
over the R round ratios alone, since each round ratio already carries the
request and block noise of its round. The block figures stay for the views
(their spread taken within each round). Here the normal quantile is not
good enough: rounds are few and gates judge the interval (with 2 rounds t is
12.7, and a profile with speed gates must ask for 3 or more).

Perf derivation 6 (`legacy_rounds`) stored h_r = 1.96 * s / sqrt(R) around
mean(l) as the round interval and added it to the request and block
half-widths in quadrature around the pooled point; verify recomputes such a
report that way. With one round every figure is as before.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from qgate.perf.compare import MetricComparison
from qgate.perf.records import ScenarioRun
from qgate.perf.round_interval import RoundInterval, round_interval

__all__ = [
    "BlockCompare",
    "block_interval",
    "by_block",
    "compare_blocks",
    "pooled",
    "rounds_of",
    "widened",
]

Z975 = 1.959963984540054  # the normal 97.5th percentile

BlockCompare = Callable[..., list[MetricComparison]]


def by_block(runs: Sequence[ScenarioRun]) -> list[ScenarioRun]:
    """One side's runs of one scenario in round and block order."""
    return sorted(runs, key=lambda r: (r.round, r.block))


def pooled(runs: Sequence[ScenarioRun], counters: bool = True) -> ScenarioRun:
    """One side's blocks as one run: every request, the measured windows and the counter
    deltas summed (`counters=False`: dropped, as perf derivation 4 pooled them)."""
    ordered = by_block(runs)
    if len(ordered) == 1:
        return ordered[0]
    first = ordered[0]
    # the engine's counters (prefix-cache hits, preemptions) as the sum of each block's delta
    keys = set.intersection(*(set(r.counters_before) & set(r.counters_after) for r in ordered))
    keys = keys if counters else set()
    deltas = {k: sum(r.counters_after[k] - r.counters_before[k] for r in ordered) for k in keys}
    return first.model_copy(
        update={
            "requests": [q for r in ordered for q in r.requests],
            "duration_ns": sum(r.duration_ns for r in ordered),
            "counters_before": dict.fromkeys(deltas, 0.0),
            "counters_after": deltas,
        }
    )


def _logs(ratios: Sequence[float | None]) -> list[float]:
    return [math.log(r) for r in ratios if r is not None and r > 0 and math.isfinite(r)]


def _half_width(ratios: Sequence[float | None]) -> tuple[float, float] | None:
    """(mean log ratio, between-block half-width) from per-block ratios; None below 2."""
    logs = _logs(ratios)
    if len(logs) < 2:
        return None
    n = len(logs)
    mean = sum(logs) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (n - 1))
    return mean, Z975 * sd / math.sqrt(n)


def _within_half_width(groups: Sequence[Sequence[float | None]]) -> tuple[float, float] | None:
    """(mean log ratio, half-width) of block ratios grouped by round, the spread taken within
    each round (pooled SD, one degree of freedom lost per round); None without any."""
    logs = [_logs(g) for g in groups]
    if len(logs) == 1:
        return _half_width(groups[0])
    n = sum(len(g) for g in logs)
    dof = n - sum(1 for g in logs if g)
    if dof < 1:
        return None
    squares = sum((x - sum(g) / len(g)) ** 2 for g in logs if g for x in g)
    mean = sum(x for g in logs for x in g) / n
    return mean, Z975 * math.sqrt(squares / dof) / math.sqrt(n)


def _interval(found: tuple[float, float] | None) -> tuple[float | None, float | None]:
    if found is None:
        return None, None
    mean, half = found
    return math.exp(mean - half), math.exp(mean + half)


def block_interval(ratios: Sequence[float | None]) -> tuple[float | None, float | None]:
    """The between-block 95% interval of the ratio (None below 2 positive block ratios)."""
    return _interval(_half_width(ratios))


def widened(
    ratio: float, lo: float | None, hi: float | None, block_half: float
) -> tuple[float, float]:
    """The request interval [lo, hi] around `ratio`, widened by `block_half` in quadrature."""
    if ratio <= 0:
        return (lo if lo is not None else ratio), (hi if hi is not None else ratio)
    centre = math.log(ratio)
    h_lo = centre - math.log(lo) if lo is not None and lo > 0 else 0.0
    h_hi = math.log(hi) - centre if hi is not None and hi > 0 else 0.0
    return (
        math.exp(centre - math.hypot(max(h_lo, 0.0), block_half)),
        math.exp(centre + math.hypot(max(h_hi, 0.0), block_half)),
    )


def _at_least_within(
    row: MetricComparison, unit: RoundInterval, block_halves: Sequence[float]
) -> tuple[float, float]:
    """The across-round interval, never narrower on a side than the noise within one life
    (the request bootstrap's half-width with the block spread in quadrature): a floor, not
    a sum, so within-round noise is not counted twice; rounds that happen to agree do not
    make a point of the ratio."""
    lo, hi = unit.centre - unit.half, unit.centre + unit.half
    if row.ratio is not None and row.ratio > 0:
        within_lo, within_hi = widened(
            row.ratio, row.ci_low, row.ci_high, math.hypot(*block_halves)
        )
        point = math.log(row.ratio)
        lo = min(lo, unit.centre - (point - math.log(within_lo)))
        hi = max(hi, unit.centre + (math.log(within_hi) - point))
    return math.exp(lo), math.exp(hi)


def rounds_of(runs: Sequence[ScenarioRun]) -> list[int]:
    """The rounds `runs` hold, in order."""
    return sorted({r.round for r in runs})


def compare_blocks(
    references: Sequence[ScenarioRun],
    candidates: Sequence[ScenarioRun],
    *,
    resamples: int,
    seed: int,
    compare: BlockCompare,
    legacy_rounds: bool = False,
) -> list[MetricComparison]:
    """Per-metric comparison of one scenario's blocks and rounds (pure; `verify` recomputes
    it). `legacy_rounds`: the across-round figures of perf derivation 6 (normal quantile, in
    quadrature with the request and block half-widths, around the pooled point)."""
    refs, cands = by_block(references), by_block(candidates)
    rows = compare(pooled(refs), pooled(cands), resamples=resamples, seed=seed)
    rounds = rounds_of([*refs, *cands])
    sides = [
        ([r for r in refs if r.round == k], [c for c in cands if c.round == k]) for k in rounds
    ]
    pairs = [list(zip(r, c, strict=False)) for r, c in sides]
    flat = [pair for in_round in pairs for pair in in_round]
    blocked = any(len(p) >= 2 for p in pairs)  # some life ran several blocks
    if not blocked and len(rounds) < 2:
        return rows
    pairs = pairs if blocked else []
    per_block = [[compare(r, c, resamples=0, seed=seed) for r, c in p] for p in pairs]
    per_round = [
        compare(pooled(r), pooled(c), resamples=0, seed=seed) if r and c else None
        for r, c in (sides if len(rounds) >= 2 else [])
    ]
    out: list[MetricComparison] = []
    for k, row in enumerate(rows):
        update: dict[str, object] = {}
        halves: list[float] = []  # the block and the round half-widths found
        if blocked:
            grouped = [[block[k].ratio for block in in_round] for in_round in per_block]
            found = _within_half_width(grouped)
            lo, hi = _interval(found)
            update |= {
                "blocks": len(flat),
                "block_ratios": [r for g in grouped for r in g],
                "block_ci_low": lo,
                "block_ci_high": hi,
            }
            halves += [found[1]] if found is not None else []
        if len(rounds) >= 2:
            ratios = [got[k].ratio if got is not None else None for got in per_round]
            update |= {"rounds": len(rounds), "round_ratios": ratios}
            if not legacy_rounds:  # each round the unit: its interval is the ratio's
                unit = round_interval(ratios, rounds)
                lo, hi = (unit.low, unit.high) if unit is not None else (None, None)
                update |= {"round_ci_low": lo, "round_ci_high": hi, "ci_low": lo, "ci_high": hi}
                if unit is not None:
                    update["ratio"] = math.exp(unit.centre)
                    update["ci_low"], update["ci_high"] = _at_least_within(row, unit, halves)
                out.append(row.model_copy(update=update))
                continue
            found = _half_width(ratios)
            lo, hi = _interval(found)
            update |= {"round_ci_low": lo, "round_ci_high": hi}
            halves += [found[1]] if found is not None else []
        if row.ratio is not None and halves:
            update["ci_low"], update["ci_high"] = widened(
                row.ratio, row.ci_low, row.ci_high, math.hypot(*halves)
            )
        out.append(row.model_copy(update=update))
    return out
