"""What the per-minute time series costs `summarize` (and so `qgate verify`); prints figures.

An hour-long agent run like the GLM seed's: 4 conversations at a time, `--requests`
requests of `--tokens` streamed tokens each, spread evenly over `--duration` seconds, with
one-minute buckets. Times `time_series(run)` alone and `summarize(run)` with and without it.

    .venv/bin/python perf/bench_series.py [--requests 1800] [--tokens 256] [--duration 3600]
"""

from __future__ import annotations

import argparse
import random
import time

from qgate.perf.metrics import summarize, time_series
from qgate.perf.records import RequestRecord, ScenarioRun

S = 1_000_000_000


def hour_run(requests: int, tokens: int, duration_s: float, bucket_s: float | None) -> ScenarioRun:
    rng = random.Random(0)
    per = duration_s * S * 4 / requests  # 4 in flight: each request lasts 4x the spacing
    recs = []
    for i in range(requests):
        sent = int(i * duration_s * S / requests)
        first = sent + int(rng.uniform(0.2, 0.6) * per)
        step = (sent + int(per) - first) // tokens
        times = [first + k * step for k in range(tokens)]
        recs.append(
            RequestRecord(
                index=i,
                conversation=i // 16,
                turn=i % 16,
                scheduled_ns=sent,
                sent_ns=sent,
                first_token_ns=first,
                done_ns=times[-1] + 1000,
                token_times_ns=times,
                chunk_tokens=[1] * tokens,
                prompt_tokens=40_000,
                output_tokens=tokens,
                requested_output_tokens=tokens,
            )
        )
    return ScenarioRun(
        scenario="agent-4",
        role="candidate",
        kind="multi_turn",
        params={"duration_s": duration_s, "series_bucket_s": bucket_s},
        gpus=8,
        duration_ns=max(r.done_ns for r in recs),
        requests=recs,
    )


def best_of(fn: object, repeat: int = 5) -> float:
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()  # type: ignore[operator]
        out.append(time.perf_counter() - t)
    return min(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=1800)
    ap.add_argument("--tokens", type=int, default=256)
    ap.add_argument("--duration", type=float, default=3600.0)
    a = ap.parse_args()
    with_series = hour_run(a.requests, a.tokens, a.duration, 60.0)
    without = hour_run(a.requests, a.tokens, a.duration, None)
    ts = time_series(with_series)
    assert ts is not None
    print(
        f"{a.requests} requests x {a.tokens} tokens over {a.duration:g} s: "
        f"{len(ts.buckets)} one-minute buckets"
    )
    for label, fn in (
        ("time_series alone", lambda: time_series(with_series)),
        ("summarize with series", lambda: summarize(with_series, None)),
        ("summarize without series", lambda: summarize(without, None)),
    ):
        print(f"{label + ':':26}{best_of(fn) * 1e3:7.1f} ms")


if __name__ == "__main__":
    main()
