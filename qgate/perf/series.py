"""Time series of a scenario: output tok/s, requests and TTFT per time bucket (pure).

A long run (a duration-bound agent scenario runs for an hour) can drift:
a prefix cache fills and starts evicting, host-memory offload kicks in, the
server's queue grows. One average over the hour hides that; a row per
minute shows it. The series is a pure function of the request records, so
`qgate verify` recomputes it like every other figure.

Buckets are `bucket_s` wide and counted from the scenario's zero (the
instant every `*_ns` of the records counts from; `ScenarioRun.t0_unix_ns`
is its wall-clock time), so bucket k covers [k * bucket_s, (k + 1) *
bucket_s). The last bucket ends at the last completion and is usually
shorter: its `seconds` says how long, and its throughput divides by that.
Buckets with nothing in them are kept (zero counts, no TTFT), so a stall
shows as a gap instead of vanishing.

What lands in which bucket:

- output tokens: where they arrived, chunk by chunk (each chunk weighs its
  `chunk_tokens` when the server reported token ids, else one), as vLLM's
  `bench serve` counts its per-second output tokens; a request that streams
  across a bucket boundary adds to both buckets. Only completed requests'
  tokens count, as in the scenario's output throughput;
- a request (its count, and its TTFT in the bucket's p50/p90): the bucket of
  its completion (`done_ns`), as guidellm dates a request's rate
  contribution by its end. A request's TTFT is known only once it started
  streaming, and a request counted once per series keeps the buckets'
  counts summing to the scenario's.

Quality probes are left out, as in every latency and throughput figure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from qgate.perf.summaries import SeriesBucket, TimeSeries
from qgate.profile.scenarios import DEFAULT_BUCKET_S, MAX_BUCKETS

if TYPE_CHECKING:
    import numpy.typing as npt

    Ints = Sequence[int] | npt.NDArray[np.int64]

__all__ = [
    "DEFAULT_BUCKET_S",
    "MAX_BUCKETS",
    "PARAM",
    "Finished",
    "bucket_series",
    "bucket_width",
]

# The run parameter that asks for a series (ScenarioRun.params), so verify needs only the run.
PARAM = "series_bucket_s"
NS_PER_S = 1_000_000_000

# (done_ns, completed, TTFT ms or None) of one request
Finished = tuple[int, bool, float | None]


def bucket_width(params: Mapping[str, Any]) -> float | None:
    """The bucket width a run asked for (its `series_bucket_s` parameter), else None."""
    value = params.get(PARAM)
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        return None
    return float(value)


def bucket_series(
    bucket_s: float,
    finished: Sequence[Finished],
    token_times_ns: Ints,
    token_counts: Ints,
) -> TimeSeries:
    """The series of one run from each request's end and every content chunk's arrival.

    `finished` holds every measured workload request (completed or not);
    `token_times_ns` / `token_counts` every chunk of the completed ones and
    the tokens it carried. The series ends at the last `done_ns`; anything at
    or after that instant belongs to the last bucket.
    """
    width = max(1, round(bucket_s * NS_PER_S))
    end = max((done for done, _, _ in finished), default=0)
    if not finished:
        return TimeSeries(bucket_s=bucket_s, buckets=[])
    n = max(1, -(-end // width))  # ceil

    def index(t: int) -> int:
        return min(max(t, 0) // width, n - 1)

    completed, failed = [0] * n, [0] * n
    ttfts: list[list[float]] = [[] for _ in range(n)]
    for done, ok, ttft in finished:
        k = index(done)
        if ok:
            completed[k] += 1
            if ttft is not None:
                ttfts[k].append(ttft)
        else:
            failed[k] += 1
    times = np.asarray(token_times_ns, dtype=np.int64)
    idx = np.minimum(np.maximum(times, 0) // width, n - 1)
    tokens = np.bincount(idx, weights=np.asarray(token_counts, dtype=np.float64), minlength=n)
    buckets = []
    for k in range(n):
        seconds = (min((k + 1) * width, end) - k * width) / NS_PER_S
        out = int(tokens[k])
        p50 = p90 = None
        if ttfts[k]:
            q50, q90 = np.percentile(np.asarray(ttfts[k], dtype=np.float64), [50, 90])
            p50, p90 = float(q50), float(q90)
        buckets.append(
            SeriesBucket(
                start_s=k * width / NS_PER_S,
                seconds=seconds,
                completed=completed[k],
                failed=failed[k],
                output_tokens=out,
                output_throughput=out / seconds if seconds > 0 else 0.0,
                ttft_p50_ms=p50,
                ttft_p90_ms=p90,
            )
        )
    return TimeSeries(bucket_s=bucket_s, buckets=buckets)
