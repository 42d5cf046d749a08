"""Candidate versus reference, metric by metric, with bootstrap confidence intervals.

Both runtimes run the same scenarios in the same session. For each per-request
metric the ratio of a quantile (the median, p90 or p99; candidate / reference)
gets a percentile bootstrap 95% interval over `resamples` resamples. A
resample draws as many requests as the run completed, with replacement, each
runtime independently (`numpy.random.default_rng` on the two children of
`SeedSequence(seed)`, PCG64, reproducible), and every metric is computed over
that same set of requests, so `qgate verify` recomputes the very same
intervals. ITL pools every gap of the drawn requests; a drawn request without a
value for a metric (TPOT of a one-token answer) adds nothing to that metric.
Quantiles interpolate linearly, as numpy's default.

Aggregate throughputs (tokens/s over the measured window) are one number per
run. In a closed loop (fixed concurrency, multi-turn) Little's law ties them to
the requests: throughput = concurrency x sum(output tokens) / sum(E2E). Their
interval is the bootstrap interval of that request-level estimator's ratio,
scaled so it is centred on the measured window ratio (the resamples say how
much the ratio moves with the sample, the window says where it is). Open-loop
runs (a request rate, a trace) get no throughput interval: there the arrival
rate, not the server, sets the throughput.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np
import numpy.typing as npt

from qgate.perf.metrics import (
    e2e_ms,
    itl_gaps_ms,
    output_len,
    request_decode_tok_s,
    request_output_tok_s,
    succeeded,
    throughputs,
    tpot_ms,
    ttft_ms,
    workload_requests,
)
from qgate.perf.records import MetricComparison, RequestRecord, ScenarioRun
from qgate.profile.perf import COMPARED

__all__ = ["MetricComparison", "closed_loop", "compare"]


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


_VALUES: dict[str, PerRequest] = {
    "ttft_ms": _one(ttft_ms),
    "tpot_ms": _one(tpot_ms),
    "itl_ms": itl_gaps_ms,
    "e2e_ms": _one(e2e_ms),
    "request_output_tok_s": _one(request_output_tok_s),
    "request_decode_tok_s": _one(request_decode_tok_s),
}


def _per_request() -> list[tuple[str, str, Literal["lower", "higher"], PerRequest, float]]:
    out = []
    for name, (unit, better) in COMPARED.items():
        base, _, stat = name.partition(".")
        if base in _VALUES:
            out.append((name, unit, better, _VALUES[base], float(stat.removeprefix("p"))))
    return out


# name, unit, better, values per request (ITL pools several values per request), percentile;
# in the order of qgate.profile.perf.COMPARED (what perf gates may name)
PER_REQUEST = _per_request()
THROUGHPUTS = [n for n in COMPARED if n.partition(".")[0] not in _VALUES]


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

    def __init__(
        self, values: npt.NDArray[np.float64], lens: npt.NDArray[np.int64], q: float = 50.0
    ) -> None:
        """`values` request by request, `lens[j]` of them for request j; `q` the percentile."""
        total = values.size
        self.q = q
        owner = np.repeat(np.arange(lens.size), lens)
        # not a stable sort (4x slower on 500k ITL gaps): tied values are equal, so the order
        # of their requests moves no weighted quantile, only the window below
        order = np.argsort(values)
        self.values = values[order]
        self.owner = owner[order]
        self.lens = lens.astype(np.float64)
        self.groups = lens.size
        # The window of sorted positions around the quantile, and per request how
        # many of its values lie before the window. The resampled quantile's
        # position moves with sum(count_j * (before_quantile_j - len_j * q)),
        # whose standard deviation over multinomial counts sets the width.
        mid = total // 2 if q == 50.0 else int(np.floor((total - 1) * (q / 100))) if total else 0
        before_mid = np.bincount(self.owner[:mid], minlength=self.groups).astype(np.float64)
        share = self.lens * (q / 100)
        spread = float(np.sqrt(self.groups * np.var(before_mid - share))) if total else 0.0
        half = int(np.ceil(_WINDOW_SD * spread)) + 2
        self.lo, self.hi = max(0, mid - half), min(total, mid + half + 1)
        self.before = np.bincount(self.owner[: self.lo], minlength=self.groups).astype(np.float64)

    def median(self) -> float | None:
        """The quantile over every value (the median unless q says otherwise)."""
        if not self.values.size:
            return None
        if self.q == 50.0:
            return float(np.median(self.values))
        return float(np.percentile(self.values, self.q))

    def resampled_medians(self, counts: Counts) -> npt.NDArray[np.float64]:
        """Pooled medians of a (resamples x requests) matrix of draw counts; NaN where empty."""
        return self.medians_given(counts, counts @ self.lens, counts @ self.before)

    def medians_given(
        self, counts: Counts, n: npt.NDArray[np.float64], below: npt.NDArray[np.float64]
    ) -> npt.NDArray[np.float64]:
        """resampled_medians with n = counts @ lens and below = counts @ before already known."""
        if self.q == 50.0:
            hi_pos = np.floor(n / 2)  # 0-based positions of the middle values
            lo_pos = np.floor((n - 1) / 2)
            gamma = np.zeros_like(n)  # unused: the median averages the two middle values
        else:  # numpy's linear method: virtual index (n - 1) * q between two neighbours
            virtual = (n - 1) * (self.q / 100)
            lo_pos = np.floor(virtual)
            hi_pos = np.minimum(lo_pos + 1, np.maximum(n - 1, 0))
            gamma = virtual - lo_pos
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
            out[rows] = self._at(self.lo + lo_i, self.lo + hi_i, n[rows], gamma[rows])
        for r in np.nonzero(~inside & (n > 0))[0]:
            cum_r = np.cumsum(counts[r, self.owner])
            lo_r = np.searchsorted(cum_r, lo_pos[r : r + 1], side="right")
            hi_r = np.searchsorted(cum_r, hi_pos[r : r + 1], side="right")
            out[r] = self._at(lo_r, hi_r, n[r : r + 1], gamma[r : r + 1])[0]
        return out

    def _at(
        self,
        lo: npt.NDArray[np.int64],
        hi: npt.NDArray[np.int64],
        n: npt.NDArray[np.float64],
        gamma: npt.NDArray[np.float64],
    ) -> npt.NDArray[np.float64]:
        if self.q == 50.0:
            return self._middle(lo, hi, n)
        # numpy's _lerp, so a resample's quantile equals np.percentile of its values
        a, b = self.values[lo], self.values[hi]
        diff = b - a
        return np.where(gamma >= 0.5, b - diff * (1 - gamma), a + diff * gamma)

    def _middle(
        self, lo: npt.NDArray[np.int64], hi: npt.NDArray[np.int64], n: npt.NDArray[np.float64]
    ) -> npt.NDArray[np.float64]:
        # as np.median: the middle value, or the mean of the two middle values
        a, b = self.values[lo], self.values[hi]
        return np.where(n % 2 == 1, b, (a + b) / 2.0)


def _bootstrap_medians(
    pools: Sequence[_Pooled],
    requests: int,
    resamples: int,
    rng: np.random.Generator,
    totals: npt.NDArray[np.float64] | None = None,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """(metrics x resamples) quantiles, and (totals x resamples) sums of `totals`' rows.

    Resample r draws `requests` indices from `rng`; `totals` holds per-request
    values (rows) whose resampled sums are wanted too (Little's-law throughput).
    """
    out = np.full((len(pools), resamples), np.nan)
    extra = np.zeros((0, requests)) if totals is None else totals
    sums_out = np.full((extra.shape[0], resamples), np.nan)
    if requests == 0:
        return out, sums_out
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
    first_total = len(columns)
    columns += list(extra)
    weights = np.stack(columns) if columns else np.zeros((0, requests))
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
        sums_out[:, start : start + rows] = sums[:, first_total:].T
    return out, sums_out


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


def closed_loop(run: ScenarioRun) -> bool:
    """Whether the server, not an arrival schedule, set the run's throughput (Little's law)."""
    if run.kind == "multi_turn":
        return True
    return run.kind == "fixed" and run.params.get("request_rate") is None


def _little_rows(requests: Sequence[RequestRecord]) -> npt.NDArray[np.float64]:
    """Per request: output tokens and E2E (rows), whose sums give Little's-law rates."""
    return np.array(
        [[float(output_len(r)) for r in requests], [e2e_ms(r) for r in requests]],
        dtype=np.float64,
    ).reshape(2, len(requests))


def _little_factors(
    ref_rows: npt.NDArray[np.float64],
    cand_rows: npt.NDArray[np.float64],
    ref_sums: npt.NDArray[np.float64],
    cand_sums: npt.NDArray[np.float64],
    per_token: bool,
) -> tuple[float, float] | None:
    """2.5th and 97.5th percentiles of how far the Little's-law ratio moves with the sample.

    Per resample: (sum(output tokens) / sum(E2E)) of the candidate over the
    reference's (requests instead of tokens unless `per_token`; a resample has
    as many requests as the run), divided by the same ratio of the full
    samples. None when no resample gives a ratio.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        if per_token:
            full = (cand_rows[0].sum() / cand_rows[1].sum()) / (
                ref_rows[0].sum() / ref_rows[1].sum()
            )
            moves = (cand_sums[0] / cand_sums[1]) / (ref_sums[0] / ref_sums[1]) / full
        else:  # request counts are fixed per resample: only the E2E sums move
            moves = (ref_sums[1] / cand_sums[1]) / (ref_rows[1].sum() / cand_rows[1].sum())
    moves = moves[np.isfinite(moves)]
    if moves.size == 0:
        return None
    lo, hi = np.percentile(moves, [2.5, 97.5])
    return float(lo), float(hi)


def _pools(requests: Sequence[RequestRecord]) -> list[_Pooled]:
    """Each PER_REQUEST row's pool; a metric's values taken once for all its quantiles."""
    values = {f: f(requests) for f in dict.fromkeys(f for _, _, _, f, _ in PER_REQUEST)}
    return [_Pooled(*values[f], q) for _, _, _, f, q in PER_REQUEST]


def compare(
    reference: ScenarioRun, candidate: ScenarioRun, *, resamples: int, seed: int = 0
) -> list[MetricComparison]:
    """Per-metric comparison of two runs of the same scenario (pure and deterministic)."""
    ref_ok = [r for r in workload_requests(reference) if succeeded(r)]
    cand_ok = [r for r in workload_requests(candidate) if succeeded(r)]
    ref_pools, cand_pools = _pools(ref_ok), _pools(cand_ok)
    ref_little, cand_little = _little_rows(ref_ok), _little_rows(cand_ok)
    if resamples > 0:
        ref_rng, cand_rng = (
            np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2)
        )
        ref_meds, ref_sums = _bootstrap_medians(
            ref_pools, len(ref_ok), resamples, ref_rng, ref_little
        )
        cand_meds, cand_sums = _bootstrap_medians(
            cand_pools, len(cand_ok), resamples, cand_rng, cand_little
        )
    out: list[MetricComparison] = []
    for k, (name, unit, better, _, _) in enumerate(PER_REQUEST):
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
    closed = closed_loop(reference) and closed_loop(candidate)
    factors: dict[bool, tuple[float, float] | None] = {True: None, False: None}
    if resamples > 0 and closed and ref_ok and cand_ok:
        for per_token in factors:
            factors[per_token] = _little_factors(
                ref_little, cand_little, ref_sums, cand_sums, per_token
            )
    windows = dict(
        zip(
            ("output_throughput", "output_throughput_per_gpu", "request_throughput"),
            zip(throughputs(reference), throughputs(candidate), strict=True),
            strict=True,
        )
    )
    for name in THROUGHPUTS:
        unit, better = COMPARED[name]
        rvalue, cvalue = windows[name]
        ratio = cvalue / rvalue if rvalue else None
        factor = factors[name != "request_throughput"]
        lo = hi = None
        if ratio is not None and factor is not None:
            lo, hi = ratio * factor[0], ratio * factor[1]
        out.append(
            MetricComparison(
                scenario=candidate.scenario,
                metric=name,
                unit=unit,
                better=better,
                reference=rvalue,
                candidate=cvalue,
                ratio=ratio,
                ci_low=lo,
                ci_high=hi,
                resamples=resamples if lo is not None else 0,
                seed=seed,
            )
        )
    return out
