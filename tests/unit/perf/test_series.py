"""The per-bucket time series: hand-built records with known times give known buckets."""

from __future__ import annotations

import pytest

from qgate.perf.metrics import summarize, time_series
from qgate.perf.records import RequestRecord, ScenarioRun
from qgate.perf.series import bucket_series, bucket_width

S = 1_000_000_000
MS = 1_000_000


def rec(
    index: int,
    sent_s: float,
    ttft_ms: float,
    token_s: list[float],
    *,
    done_s: float | None = None,
    chunk_tokens: list[int] | None = None,
    error: str | None = None,
    probe: str | None = None,
) -> RequestRecord:
    times = [round(t * S) for t in token_s]
    first = round(sent_s * S + ttft_ms * MS) if times else None
    if times:
        times[0] = first  # type: ignore[call-overload]
    done = round(done_s * S) if done_s is not None else (times[-1] if times else round(sent_s * S))
    return RequestRecord(
        index=index,
        scheduled_ns=round(sent_s * S),
        sent_ns=round(sent_s * S),
        first_token_ns=first,
        done_ns=done,
        token_times_ns=times,
        chunk_tokens=chunk_tokens,
        output_tokens=sum(chunk_tokens) if chunk_tokens else len(times),
        error=error,
        probe_id=probe,
    )


def run_of(*reqs: RequestRecord, bucket_s: float | None = 10.0) -> ScenarioRun:
    end = max(r.done_ns for r in reqs)
    return ScenarioRun(
        scenario="agent",
        role="candidate",
        kind="multi_turn",
        params={"duration_s": 25.0, "series_bucket_s": bucket_s},
        gpus=1,
        duration_ns=end,
        requests=list(reqs),
    )


# 10 s buckets over a 25 s window: [0, 10), [10, 20), [20, 25].
A = rec(0, 0.0, 100.0, [0.1, 2.0, 4.0])  # all in bucket 0, done at 4 s
B = rec(1, 5.0, 300.0, [5.3, 9.0, 12.0, 15.0])  # streams across 10 s; done at 15 s: bucket 1
C = rec(2, 11.0, 200.0, [11.2, 13.0], chunk_tokens=[1, 3])  # a chunk with 3 tokens
D = rec(3, 16.0, 0.0, [], done_s=17.0, error="HTTP 500: boom")  # failed in bucket 1
E = rec(4, 21.0, 1000.0, [22.0, 25.0])  # the last completion ends the window
P = rec(5, 1.0, 50.0, [1.05, 1.5], probe="p1")  # a quality probe: never in the series


def test_known_times_give_known_buckets() -> None:
    ts = time_series(run_of(A, B, C, D, E, P))
    assert ts is not None and ts.bucket_s == 10.0
    b0, b1, b2 = ts.buckets
    assert [b.start_s for b in ts.buckets] == [0.0, 10.0, 20.0]
    assert [b.seconds for b in ts.buckets] == [10.0, 10.0, 5.0]  # the last ends at 25 s
    # requests by completion: A in 0; B (sent at 5 s, done at 15 s), C and failed D in 1; E in 2
    assert [(b.completed, b.failed) for b in ts.buckets] == [(1, 0), (2, 1), (1, 0)]
    # tokens by arrival: A 3 + B 2 in bucket 0; B 2 + C 1 + 3 in bucket 1; E 2 in bucket 2
    assert [b.output_tokens for b in ts.buckets] == [5, 6, 2]
    assert [b.output_throughput for b in ts.buckets] == [0.5, 0.6, 0.4]
    # TTFT belongs to the bucket of the request's completion: A alone; B and C; E
    assert (b0.ttft_p50_ms, b0.ttft_p90_ms) == pytest.approx((100.0, 100.0))
    assert (b1.ttft_p50_ms, b1.ttft_p90_ms) == pytest.approx((250.0, 290.0))
    assert b2.ttft_p50_ms == pytest.approx(1000.0)


def test_bucket_totals_equal_the_scenario_totals() -> None:
    run = run_of(A, B, C, D, E, P)
    m = summarize(run, None)
    assert m.time_series is not None
    buckets = m.time_series.buckets
    assert sum(b.output_tokens for b in buckets) == m.total_output_tokens == 13
    assert sum(b.completed for b in buckets) == m.completed
    assert sum(b.failed for b in buckets) == m.failed


def test_empty_buckets_are_kept_and_have_no_ttft() -> None:
    late = rec(1, 30.0, 500.0, [30.5, 31.0])
    ts = time_series(run_of(A, late))
    assert ts is not None
    assert [(b.completed, b.output_tokens) for b in ts.buckets] == [(1, 3), (0, 0), (0, 0), (1, 2)]
    assert ts.buckets[1].ttft_p50_ms is None and ts.buckets[1].ttft_p90_ms is None
    assert ts.buckets[1].output_throughput == 0.0
    assert ts.buckets[3].seconds == pytest.approx(1.0)


def test_completion_on_a_bucket_boundary_belongs_to_the_later_bucket() -> None:
    a = rec(0, 0.0, 100.0, [0.1, 10.0])  # done exactly at 10 s: bucket [10, 20)
    b = rec(1, 0.0, 100.0, [0.1, 20.0])  # the last completion, exactly on 20 s: last bucket
    ts = time_series(run_of(a, b))
    assert ts is not None
    assert [b.completed for b in ts.buckets] == [0, 2]
    assert [b.output_tokens for b in ts.buckets] == [2, 2]


def test_a_run_without_a_bucket_width_has_no_series() -> None:
    assert time_series(run_of(A, bucket_s=None)) is None
    assert summarize(run_of(A, bucket_s=None), None).time_series is None
    assert bucket_width({"series_bucket_s": 0}) is None
    assert bucket_width({"series_bucket_s": True}) is None
    assert bucket_width({"series_bucket_s": 30}) == 30.0


def test_no_requests_no_buckets() -> None:
    assert bucket_series(60.0, [], [], []).buckets == []


def test_chunk_tokens_that_disagree_with_the_chunks_count_one_each() -> None:
    odd = rec(0, 0.0, 100.0, [0.1, 0.2], chunk_tokens=[4, 4, 4])
    ts = time_series(run_of(odd))
    assert ts is not None and ts.buckets[0].output_tokens == 2
