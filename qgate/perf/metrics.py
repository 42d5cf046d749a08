"""Scenario metrics as pure functions of a ScenarioRun (so `qgate verify` can recompute them).

Definitions follow vLLM's `bench serve` (vllm/benchmarks/serve.py and
lib/endpoint_request_func.py) so the numbers are comparable with it:

- TTFT: first content chunk minus the moment the request was sent. Client
  queueing (sent minus scheduled) is reported apart as `queue_ms`, never
  inside TTFT.
- E2E latency: last content chunk minus sent (vLLM's `latency`).
- TPOT: (E2E - TTFT) / (n - 1) for requests with n > 1 output tokens; for
  goodput a request with n <= 1 has TPOT 0, as in vLLM.
- ITL: every gap between consecutive content chunks, pooled over requests.
- Request output rate: output tokens / E2E per request (the "full-request"
  rate of engineering write-ups); decode rate: (n - 1) / (E2E - TTFT), the
  rate once the first token is out. Not in vLLM's client; both in tok/s.
- Percentiles: numpy's default linear interpolation; std is the population
  std (ddof=0), as in vLLM.
- Throughputs divide by the measured window (`ScenarioRun.duration_ns`).
- Time series (runs whose params carry `series_bucket_s`): per-bucket output
  tok/s, requests and TTFT p50/p90, bucketed as qgate/perf/series.py says.

Quality probes (requests with a `probe_id`) and graded session turns (a `graded_turn`)
are left out of the latency and throughput figures because their lengths differ from
the workload's.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from typing import TYPE_CHECKING

import numpy as np

from qgate.perf.counters import deltas, names_of, prefix_cache_hit_rate
from qgate.perf.probes import probe_agreement
from qgate.perf.records import RequestRecord, ScenarioRun, is_workload
from qgate.perf.series import bucket_series, bucket_width
from qgate.perf.summaries import Distribution, ScenarioMetrics, TimeSeries
from qgate.profile import Slo

if TYPE_CHECKING:
    import numpy.typing as npt

NS_PER_MS = 1_000_000
NS_PER_S = 1_000_000_000


def distribution(values: Sequence[float] | npt.NDArray[np.float64]) -> Distribution:
    """Mean, std and percentiles of `values` (all zeros when empty, as vLLM reports)."""
    if len(values) == 0:
        return Distribution(count=0, mean=0.0, std=0.0, p50=0.0, p90=0.0, p99=0.0, max=0.0)
    a = np.asarray(values, dtype=np.float64)
    p50, p90, p99 = np.percentile(a, [50, 90, 99])
    return Distribution(
        count=int(a.size),
        mean=float(a.mean()),
        std=float(a.std()),
        p50=float(p50),
        p90=float(p90),
        p99=float(p99),
        max=float(a.max()),
    )


def succeeded(r: RequestRecord) -> bool:
    """vLLM's `success`: no error and at least one content chunk."""
    return r.error is None and r.first_token_ns is not None


def workload_requests(run: ScenarioRun) -> list[RequestRecord]:
    """The measured requests that are part of the workload (quality probes and graded
    session turns excluded)."""
    return [r for r in run.requests if is_workload(r)]


def output_len(r: RequestRecord) -> int:
    """Output tokens: the server's usage, else the number of content chunks."""
    return r.output_tokens if r.output_tokens is not None else len(r.token_times_ns)


def last_token_ns(r: RequestRecord) -> int:
    """Arrival of the last content chunk (vLLM's end of latency); done_ns without chunks."""
    return r.token_times_ns[-1] if r.token_times_ns else r.done_ns


def ttft_ms(r: RequestRecord) -> float | None:
    """Time to first token in ms, from the send (client queueing excluded)."""
    if r.first_token_ns is None:
        return None
    return (r.first_token_ns - r.sent_ns) / NS_PER_MS


def e2e_ms(r: RequestRecord) -> float:
    """End-to-end latency in ms: last content chunk minus send."""
    return (last_token_ns(r) - r.sent_ns) / NS_PER_MS


def tpot_ms(r: RequestRecord) -> float | None:
    """(E2E - TTFT) / (n - 1); None when n <= 1 or there was no first token."""
    t = ttft_ms(r)
    n = output_len(r)
    if t is None or n <= 1:
        return None
    return (e2e_ms(r) - t) / (n - 1)


def request_output_tok_s(r: RequestRecord) -> float | None:
    """Full-request output rate: output tokens / E2E, in tok/s (None when E2E is 0)."""
    e = e2e_ms(r)
    return output_len(r) / (e / 1000.0) if e > 0 else None


def request_decode_tok_s(r: RequestRecord) -> float | None:
    """Decode rate: (n - 1) / (E2E - TTFT) in tok/s; None when n <= 1 or no time passed."""
    t = ttft_ms(r)
    n = output_len(r)
    if t is None or n <= 1:
        return None
    d = e2e_ms(r) - t
    return (n - 1) / (d / 1000.0) if d > 0 else None


def itls_ms(r: RequestRecord) -> list[float]:
    """Every gap between consecutive content chunks, in ms."""
    ts = r.token_times_ns
    return [(b - a) / NS_PER_MS for a, b in zip(ts, ts[1:], strict=False)]


def _token_times(
    requests: Sequence[RequestRecord],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Every request's chunk arrival times, concatenated in order, and how many each has."""
    lens = np.fromiter((len(r.token_times_ns) for r in requests), np.int64, len(requests))
    times = chain.from_iterable(r.token_times_ns for r in requests)
    return np.fromiter(times, np.int64, int(lens.sum())), lens


def itl_gaps_ms(
    requests: Sequence[RequestRecord],
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]:
    """`itls_ms` of every request, concatenated in order (the same floats), and each one's count."""
    return _gaps(*_token_times(requests))


def _gaps(
    times: npt.NDArray[np.int64], lens: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]:
    """itl_gaps_ms of the requests whose `_token_times` these are."""
    keep = np.ones(max(times.size - 1, 0), dtype=bool)
    starts = np.cumsum(lens)[:-1]
    keep[starts[(starts > 0) & (starts < times.size)] - 1] = False  # gaps across two requests
    # int64 differences are exact, and int / int is correctly rounded in numpy as in Python
    return np.diff(times)[keep] / NS_PER_MS, np.maximum(lens - 1, 0)


def meets_slo(r: RequestRecord, slo: Slo) -> bool:
    """Whether a completed request met every SLO given (TPOT is 0 for n <= 1, as vLLM)."""
    t = ttft_ms(r)
    if t is None:
        return False
    if slo.ttft_ms is not None and t > slo.ttft_ms:
        return False
    if slo.tpot_ms is not None and (tpot_ms(r) or 0.0) > slo.tpot_ms:
        return False
    return not (slo.e2e_ms is not None and e2e_ms(r) > slo.e2e_ms)


def peak_concurrency(requests: Sequence[RequestRecord]) -> int:
    """Most requests in flight at once, from exact send/done intervals."""
    events: list[tuple[int, int]] = []
    for r in requests:
        events.append((r.sent_ns, 1))
        events.append((r.done_ns, -1))
    # A request that ends at the same instant another starts does not overlap it.
    events.sort(key=lambda e: (e[0], e[1]))
    peak = cur = 0
    for _, d in events:
        cur += d
        peak = max(peak, cur)
    return peak


def max_tokens_per_second(requests: Sequence[RequestRecord]) -> float:
    """Largest number of content chunks in any one-second bucket from the first send."""
    if not requests:
        return 0.0
    return _busiest_second(_token_times(requests)[0], min(r.sent_ns for r in requests))


def _busiest_second(times: npt.NDArray[np.int64], start: int) -> float:
    """max_tokens_per_second of requests whose chunk times these are, the first sent at `start`."""
    if times.size == 0:
        return 0.0
    _, per_bucket = np.unique((times - start) // NS_PER_S, return_counts=True)
    return float(per_bucket.max())


def _per_second(x: float, duration_s: float) -> float:
    return x / duration_s if duration_s > 0 else 0.0


def throughputs(run: ScenarioRun) -> tuple[float, float, float]:
    """(output tok/s, output tok/s per GPU, completed req/s) as `summarize` reports them."""
    ok = [r for r in workload_requests(run) if succeeded(r)]
    dur_s = run.duration_ns / NS_PER_S
    out_rate = _per_second(sum(output_len(r) for r in ok), dur_s)
    return out_rate, out_rate / max(run.gpus, 1), _per_second(len(ok), dur_s)


def time_series(run: ScenarioRun) -> TimeSeries | None:
    """The run's per-bucket series (qgate.perf.series), when its params ask for one."""
    width = bucket_width(run.params)
    if width is None:
        return None
    reqs = workload_requests(run)
    ok = [r for r in reqs if succeeded(r)]
    return _series(width, reqs, ok, _token_times(ok)[0])


def _series(
    width: float,
    reqs: Sequence[RequestRecord],
    ok: Sequence[RequestRecord],
    times: npt.NDArray[np.int64],
) -> TimeSeries:
    """time_series of a run's workload requests `reqs`, `ok` those that succeeded, `times`
    their chunk times."""
    counts = chain.from_iterable(
        r.chunk_tokens
        if r.chunk_tokens is not None and len(r.chunk_tokens) == len(r.token_times_ns)
        else [1] * len(r.token_times_ns)
        for r in ok
    )
    finished = [(r.done_ns, succeeded(r), ttft_ms(r)) for r in reqs]
    return bucket_series(width, finished, times, np.fromiter(counts, np.int64, times.size))


def summarize(run: ScenarioRun, slo: Slo | None) -> ScenarioMetrics:
    """All scenario metrics from the raw records (pure; `qgate verify` calls it too)."""
    reqs = workload_requests(run)
    ok = [r for r in reqs if succeeded(r)]
    dur_s = run.duration_ns / NS_PER_S
    total_out = sum(output_len(r) for r in ok)
    total_in = sum(r.prompt_tokens or 0 for r in ok)

    def rate(x: float) -> float:
        return _per_second(x, dur_s)

    ttfts = [t for r in ok if (t := ttft_ms(r)) is not None]
    tpots = [t for r in ok if (t := tpot_ms(r)) is not None]
    times, lens = _token_times(ok)  # once, for the gaps, the busiest second and the series
    itls, _ = _gaps(times, lens)
    width = bucket_width(run.params)
    goodput = rate(sum(1 for r in ok if meets_slo(r, slo))) if slo is not None else None
    out_rate, out_rate_per_gpu, req_rate = throughputs(run)
    agree, total = probe_agreement(run)
    d = deltas(run.counters_before, run.counters_after)
    names = names_of(run.metric_names)
    return ScenarioMetrics(
        scenario=run.scenario,
        role=run.role,
        requests=len(reqs),
        completed=len(ok),
        failed=len(reqs) - len(ok),
        check_failed=sum(1 for r in ok if r.check_failures),
        duration_s=dur_s,
        total_input_tokens=total_in,
        total_output_tokens=total_out,
        request_throughput=req_rate,
        request_goodput=goodput,
        output_throughput=out_rate,
        output_throughput_per_gpu=out_rate_per_gpu,
        total_token_throughput=rate(total_in + total_out),
        ttft_ms=distribution(ttfts),
        tpot_ms=distribution(tpots),
        itl_ms=distribution(itls),
        e2e_ms=distribution([e2e_ms(r) for r in ok]),
        request_output_tok_s=distribution(
            [v for r in ok if (v := request_output_tok_s(r)) is not None]
        ),
        request_decode_tok_s=distribution(
            [v for r in ok if (v := request_decode_tok_s(r)) is not None]
        ),
        queue_ms=distribution([(r.sent_ns - r.scheduled_ns) / NS_PER_MS for r in reqs]),
        peak_concurrency=peak_concurrency(reqs),
        max_output_tokens_per_s=_busiest_second(times, min(r.sent_ns for r in ok)) if ok else 0.0,
        prefix_cache_hit_rate=prefix_cache_hit_rate(run.counters_before, run.counters_after, names),
        preemptions=d.get(names.preemptions) if names.preemptions else None,
        server_counters=d,
        probe_agree=agree,
        probe_total=total,
        time_series=_series(width, reqs, ok, times) if width is not None else None,
    )
