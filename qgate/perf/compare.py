"""Candidate versus reference, metric by metric, with bootstrap confidence intervals.

Both runtimes run the same scenarios in the same session. For each per-request
metric the ratio of medians (candidate / reference) gets a percentile bootstrap
95% interval over `resamples` resamples. A resample draws as many requests as
the run completed, with replacement, each runtime independently
(`numpy.random.default_rng` on the two children of `SeedSequence(seed)`, PCG64,
reproducible), and every metric is the median over that same set of requests,
so `qgate verify` recomputes the very same intervals. ITL pools every gap of
the drawn requests; a drawn request without a value for a metric (TPOT of a
one-token answer) adds nothing to that metric's median. Aggregate throughputs
(tokens/s over the measured window) are one number per run; their ratio is
given without an interval rather than with a made-up one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np
import numpy.typing as npt
from pydantic import Field

from qgate.models import Record
from qgate.perf.metrics import (
    e2e_ms,
    itl_gaps_ms,
    output_len,
    succeeded,
    throughputs,
    tpot_ms,
    ttft_ms,
    workload_requests,
)
from qgate.perf.records import RequestRecord, ScenarioRun


class MetricComparison(Record):
    """One metric on both runtimes and their ratio."""

    scenario: str = Field(description="Scenario name.")
    metric: str = Field(description="e.g. 'ttft_ms.p50', 'output_throughput'.")
    unit: str = Field(description="ms, tok/s, req/s.")
    better: Literal["lower", "higher"] = Field(description="Which direction is an improvement.")
    reference: float | None = Field(description="Reference value (median, or aggregate).")
    candidate: float | None = Field(description="Candidate value (median, or aggregate).")
    ratio: float | None = Field(description="candidate / reference; None if not computable.")
    ci_low: float | None = Field(description="Bootstrap 2.5th percentile of the ratio.")
    ci_high: float | None = Field(description="Bootstrap 97.5th percentile of the ratio.")
    resamples: int = Field(description="Bootstrap resamples (0 for aggregate metrics).")
    seed: int = Field(description="Seed of the bootstrap generator.")


# A metric's values request by request, and how many each request has.
Values = tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]
PerRequest = Callable[[Sequence[RequestRecord]], Values]


def _one(f: Callable[[RequestRecord], float | None]) -> PerRequest:
    def g(requests: Sequence[RequestRecord]) -> Values:
        values = [f(r) for r in requests]
        lens = np.fromiter((v is not None for v in values), np.int64, len(values))
        kept = np.fromiter((v for v in values if v is not None), np.float64, int(lens.sum()))
        return kept, lens

    return g


def _rate(r: RequestRecord) -> float | None:
    e = e2e_ms(r)
    return output_len(r) / (e / 1000.0) if e > 0 else None


# name, unit, better, values per request (ITL pools several values per request)
PER_REQUEST: list[tuple[str, str, Literal["lower", "higher"], PerRequest]] = [
    ("ttft_ms.p50", "ms", "lower", _one(ttft_ms)),
    ("tpot_ms.p50", "ms", "lower", _one(tpot_ms)),
    ("itl_ms.p50", "ms", "lower", itl_gaps_ms),
    ("e2e_ms.p50", "ms", "lower", _one(e2e_ms)),
    ("request_output_tok_s.p50", "tok/s", "higher", _one(_rate)),
]


# Resamples are drawn and evaluated in blocks of about this many counts, so
# memory stays bounded; the draws do not depend on the block size.
_BLOCK = 1 << 20
# Half-width of the window of sorted values searched first, in standard
# deviations of the resampled median's position; rows outside it are redone
# over all values, so the width changes the speed, never the result.
_WINDOW_SD = 4.0

Counts = npt.NDArray[np.float64]


class _Pooled:
    """One metric's values per request, sorted, so a resample's pooled median is a weighted median.

    A resample is given as counts: how often each request was drawn. The
    median is then the middle value (or the mean of the two middle ones) of
    the sorted values weighted by their request's count, which equals
    np.median of the drawn requests' values expanded with repeats.
    """

    def __init__(self, values: npt.NDArray[np.float64], lens: npt.NDArray[np.int64]) -> None:
        """`values` request by request, `lens[j]` of them for request j."""
        total = values.size
        owner = np.repeat(np.arange(lens.size), lens)
        order = np.argsort(values, kind="stable")
        self.values = values[order]
        self.owner = owner[order]
        self.lens = lens.astype(np.float64)
        self.groups = lens.size
        # The window of sorted positions around the middle, and per request how
        # many of its values lie before the window. The resampled median's
        # position moves with sum(count_j * (before_middle_j - len_j / 2)),
        # whose standard deviation over multinomial counts sets the width.
        mid = total // 2
        before_mid = np.bincount(self.owner[:mid], minlength=self.groups).astype(np.float64)
        spread = float(np.sqrt(self.groups * np.var(before_mid - self.lens / 2))) if total else 0.0
        half = int(np.ceil(_WINDOW_SD * spread)) + 2
        self.lo, self.hi = max(0, mid - half), min(total, mid + half + 1)
        self.before = np.bincount(self.owner[: self.lo], minlength=self.groups).astype(np.float64)

    def median(self) -> float | None:
        return float(np.median(self.values)) if self.values.size else None

    def resampled_medians(self, counts: Counts) -> npt.NDArray[np.float64]:
        """Pooled medians of a (resamples x requests) matrix of draw counts; NaN where empty."""
        return self.medians_given(counts, counts @ self.lens, counts @ self.before)

    def medians_given(
        self, counts: Counts, n: npt.NDArray[np.float64], below: npt.NDArray[np.float64]
    ) -> npt.NDArray[np.float64]:
        """resampled_medians with n = counts @ lens and below = counts @ before already known."""
        hi_pos = np.floor(n / 2)  # 0-based positions of the middle values
        lo_pos = np.floor((n - 1) / 2)
        out = np.full(counts.shape[0], np.nan)
        inside = np.zeros(counts.shape[0], dtype=bool)
        if self.lo < self.hi:
            cum = np.cumsum(np.take(counts, self.owner[self.lo : self.hi], axis=1), axis=1)
            cum += below[:, None]
            inside = (n > 0) & (below <= lo_pos) & (cum[:, -1] > hi_pos)
            rows = np.nonzero(inside)[0]
            if rows.size < inside.size:
                cum = cum[rows]
            # the first position whose cumulative weight exceeds p holds the p-th value
            hi_i = np.count_nonzero(cum <= hi_pos[rows, None], axis=1)
            lo_i = np.count_nonzero(cum <= lo_pos[rows, None], axis=1)
            out[rows] = self._middle(self.lo + lo_i, self.lo + hi_i, n[rows])
        for r in np.nonzero(~inside & (n > 0))[0]:
            cum_r = np.cumsum(counts[r, self.owner])
            lo_r = np.searchsorted(cum_r, lo_pos[r : r + 1], side="right")
            hi_r = np.searchsorted(cum_r, hi_pos[r : r + 1], side="right")
            out[r] = self._middle(lo_r, hi_r, n[r : r + 1])[0]
        return out

    def _middle(
        self, lo: npt.NDArray[np.int64], hi: npt.NDArray[np.int64], n: npt.NDArray[np.float64]
    ) -> npt.NDArray[np.float64]:
        # as np.median: the middle value, or the mean of the two middle values
        a, b = self.values[lo], self.values[hi]
        return np.where(n % 2 == 1, b, (a + b) / 2.0)


def _bootstrap_medians(
    pools: Sequence[_Pooled], requests: int, resamples: int, rng: np.random.Generator
) -> npt.NDArray[np.float64]:
    """(metrics x resamples) medians; resample r draws `requests` indices from `rng`."""
    out = np.full((len(pools), resamples), np.nan)
    if requests == 0:
        return out
    # Per block, one product of the counts with every pool's per-request
    # weights: its number of values, unless that is one for every request (then
    # a resample has `requests` values), and its values before the window.
    # einsum rather than a BLAS product: OpenBLAS's threads spin after the call
    # and, on a busy two-core machine, cost far more than the product itself.
    columns: list[npt.NDArray[np.float64]] = []
    slots: list[tuple[int | None, int]] = []
    for p in pools:
        n_col = None if bool(np.all(p.lens == 1)) else len(columns)
        if n_col is not None:
            columns.append(p.lens)
        slots.append((n_col, len(columns)))
        columns.append(p.before)
    weights = np.stack(columns)
    block = max(1, _BLOCK // requests)
    counts = np.empty((min(block, resamples), requests))
    for start in range(0, resamples, block):
        rows = min(block, resamples - start)
        for i in range(rows):
            counts[i] = np.bincount(rng.integers(0, requests, size=requests), minlength=requests)
        sums = np.einsum("ij,kj->ik", counts[:rows], weights)
        for m, (pool, (n_col, below_col)) in enumerate(zip(pools, slots, strict=True)):
            n = np.full(rows, float(requests)) if n_col is None else sums[:, n_col]
            out[m, start : start + rows] = pool.medians_given(counts[:rows], n, sums[:, below_col])
    return out


def _ratio_ci(
    rmeds: npt.NDArray[np.float64], cmeds: npt.NDArray[np.float64]
) -> tuple[float | None, float | None]:
    """Percentile 95% interval of the resampled ratios (resamples without a ratio dropped)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(rmeds != 0, cmeds / np.where(rmeds != 0, rmeds, 1.0), np.nan)
    ratios = ratios[np.isfinite(ratios)]
    if ratios.size == 0:
        return None, None
    lo, hi = np.percentile(ratios, [2.5, 97.5])
    return float(lo), float(hi)


def compare(
    reference: ScenarioRun, candidate: ScenarioRun, *, resamples: int, seed: int = 0
) -> list[MetricComparison]:
    """Per-metric comparison of two runs of the same scenario (pure and deterministic)."""
    ref_ok = [r for r in workload_requests(reference) if succeeded(r)]
    cand_ok = [r for r in workload_requests(candidate) if succeeded(r)]
    ref_pools = [_Pooled(*f(ref_ok)) for _, _, _, f in PER_REQUEST]
    cand_pools = [_Pooled(*f(cand_ok)) for _, _, _, f in PER_REQUEST]
    if resamples > 0:
        ref_rng, cand_rng = (
            np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2)
        )
        ref_meds = _bootstrap_medians(ref_pools, len(ref_ok), resamples, ref_rng)
        cand_meds = _bootstrap_medians(cand_pools, len(cand_ok), resamples, cand_rng)
    out: list[MetricComparison] = []
    for k, (name, unit, better, _) in enumerate(PER_REQUEST):
        rm, cm = ref_pools[k].median(), cand_pools[k].median()
        ratio = lo = hi = None
        if rm is not None and cm is not None and rm != 0:
            ratio = cm / rm
            if resamples > 0:
                lo, hi = _ratio_ci(ref_meds[k], cand_meds[k])
        out.append(
            MetricComparison(
                scenario=candidate.scenario,
                metric=name,
                unit=unit,
                better=better,
                reference=rm,
                candidate=cm,
                ratio=ratio,
                ci_low=lo,
                ci_high=hi,
                resamples=resamples,
                seed=seed,
            )
        )
    names = [
        ("output_throughput", "tok/s"),
        ("output_throughput_per_gpu", "tok/s"),
        ("request_throughput", "req/s"),
    ]
    rates = zip(names, throughputs(reference), throughputs(candidate), strict=True)
    for (name, unit), rvalue, cvalue in rates:
        out.append(
            MetricComparison(
                scenario=candidate.scenario,
                metric=name,
                unit=unit,
                better="higher",
                reference=rvalue,
                candidate=cvalue,
                ratio=cvalue / rvalue if rvalue else None,
                ci_low=None,
                ci_high=None,
                resamples=0,
                seed=seed,
            )
        )
    return out
