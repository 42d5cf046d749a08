"""Candidate versus reference, metric by metric, with bootstrap confidence intervals.

Both runtimes run the same scenarios in the same session. For each per-request
metric the ratio of medians (candidate / reference) gets a percentile bootstrap
95% interval: requests are resampled with replacement, each runtime
independently, from `numpy.random.default_rng(seed)` (PCG64, reproducible), so
`qgate verify` recomputes the very same interval. Aggregate throughputs
(tokens/s over the measured window) are one number per run; their ratio is
given without an interval rather than with a made-up one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

from pydantic import Field

from qgate.models import Record
from qgate.perf.metrics import (
    e2e_ms,
    itls_ms,
    output_len,
    succeeded,
    summarize,
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


PerRequest = Callable[[RequestRecord], list[float]]


def _one(f: Callable[[RequestRecord], float | None]) -> PerRequest:
    def g(r: RequestRecord) -> list[float]:
        v = f(r)
        return [] if v is None else [v]

    return g


def _rate(r: RequestRecord) -> float | None:
    e = e2e_ms(r)
    return output_len(r) / (e / 1000.0) if e > 0 else None


# name, unit, better, values per request (ITL pools several values per request)
PER_REQUEST: list[tuple[str, str, Literal["lower", "higher"], PerRequest]] = [
    ("ttft_ms.p50", "ms", "lower", _one(ttft_ms)),
    ("tpot_ms.p50", "ms", "lower", _one(tpot_ms)),
    ("itl_ms.p50", "ms", "lower", itls_ms),
    ("e2e_ms.p50", "ms", "lower", _one(e2e_ms)),
    ("request_output_tok_s.p50", "tok/s", "higher", _one(_rate)),
]


class _Pooled:
    """Per-request value lists, pre-sorted so a resample's pooled median is a weighted median."""

    def __init__(self, groups: Sequence[list[float]]) -> None:
        import numpy as np

        values = np.asarray([v for vs in groups for v in vs], dtype=np.float64)
        owner = np.asarray([i for i, vs in enumerate(groups) for _ in vs], dtype=np.int64)
        order = np.argsort(values, kind="stable")
        self.values = values[order]
        self.owner = owner[order]
        self.groups = len(groups)
        # One value per request (TTFT, TPOT, E2E): resample the values directly.
        self.single = all(len(vs) == 1 for vs in groups)
        self.by_group = np.asarray([vs[0] for vs in groups]) if self.single else self.values

    def median(self) -> float:
        import numpy as np

        return float(np.median(self.values))

    def resampled_median(self, idx: object) -> float:
        """np.median of the values of the drawn requests (with repeats), without expanding."""
        import numpy as np

        return float(self.resampled_medians(np.asarray(idx)[None, :])[0])

    def resampled_medians(self, idx: Any) -> Any:
        """Row-wise pooled medians for a (resamples x requests) matrix of drawn indices.

        Equal to np.median of each row's expanded values: the sorted values are
        weighted by how often their request was drawn, and the middle one (or the
        mean of the two middle ones) is found from the cumulative weights.
        Empty rows cannot occur: every drawn request has at least one value.
        """
        import numpy as np

        if self.single:
            return np.median(self.by_group[idx], axis=1)
        # One resample at a time: a (resamples x values) matrix is slower (memory-bound).
        owner = self.owner
        out = np.empty(idx.shape[0], dtype=np.float64)
        for r in range(idx.shape[0]):
            counts = np.bincount(idx[r], minlength=self.groups).astype(np.int32)
            cw = np.cumsum(counts[owner], dtype=np.int64)
            n = int(cw[-1])
            hi = self.values[int(np.searchsorted(cw, n // 2, side="right"))]
            if n % 2:
                out[r] = hi
            else:
                lo = self.values[int(np.searchsorted(cw, n // 2 - 1, side="right"))]
                out[r] = (lo + hi) / 2.0
        return out


def _median_ratio_ci(
    ref: Sequence[list[float]],
    cand: Sequence[list[float]],
    resamples: int,
    seed: int,
) -> tuple[float | None, float | None, float | None, float | None, float | None]:
    """(ref median, cand median, ratio, ci_low, ci_high) with resampling over requests."""
    import numpy as np

    rp = _Pooled(ref) if ref else None
    cp = _Pooled(cand) if cand else None
    rm = rp.median() if rp else None
    cm = cp.median() if cp else None
    if rp is None or cp is None or rm is None or cm is None or rm == 0:
        return rm, cm, None, None, None
    ratio = cm / rm
    if resamples <= 0:
        return rm, cm, ratio, None, None
    rng = np.random.default_rng(seed)
    ref_idx = rng.integers(0, rp.groups, size=(resamples, rp.groups))
    cand_idx = rng.integers(0, cp.groups, size=(resamples, cp.groups))
    rmeds = rp.resampled_medians(ref_idx)
    cmeds = cp.resampled_medians(cand_idx)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(rmeds != 0, cmeds / np.where(rmeds != 0, rmeds, 1.0), np.nan)
    ratios = ratios[np.isfinite(ratios)]
    if ratios.size == 0:
        return rm, cm, ratio, None, None
    lo, hi = np.percentile(ratios, [2.5, 97.5])
    return rm, cm, ratio, float(lo), float(hi)


def compare(
    reference: ScenarioRun, candidate: ScenarioRun, *, resamples: int, seed: int = 0
) -> list[MetricComparison]:
    """Per-metric comparison of two runs of the same scenario (pure and deterministic)."""
    ref_ok = [r for r in workload_requests(reference) if succeeded(r)]
    cand_ok = [r for r in workload_requests(candidate) if succeeded(r)]
    out: list[MetricComparison] = []
    for k, (name, unit, better, f) in enumerate(PER_REQUEST):
        # Only requests with a value take part, so a resample never draws an empty one.
        rv = [vs for vs in (f(r) for r in ref_ok) if vs]
        cv = [vs for vs in (f(r) for r in cand_ok) if vs]
        rm, cm, ratio, lo, hi = _median_ratio_ci(rv, cv, resamples, seed + k)
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
                seed=seed + k,
            )
        )
    rs, cs = summarize(reference, None), summarize(candidate, None)
    for name, unit, rvalue, cvalue in [
        ("output_throughput", "tok/s", rs.output_throughput, cs.output_throughput),
        (
            "output_throughput_per_gpu",
            "tok/s",
            rs.output_throughput_per_gpu,
            cs.output_throughput_per_gpu,
        ),
        ("request_throughput", "req/s", rs.request_throughput, cs.request_throughput),
    ]:
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
