"""The duration-bound agent loop against the mock server (known latencies): conversations
keep going until the time is up, in-flight turns finish and count, the series follows."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

from helpers.mock_server import load_mock

from qgate.perf.metrics import summarize
from qgate.perf.records import ScenarioRun
from qgate.perf.runner import run_scenarios
from qgate.perf.workloads import MAX_FAILED_IN_A_ROW
from qgate.profile import PerfSpec

S = 1_000_000_000


def agent(duration_s: float, **kw: Any) -> PerfSpec:
    scenario = {
        "name": "agent",
        "kind": "multi_turn",
        "conversations": 2,
        "turns": 2,
        "shared_prefix_tokens": 64,
        "turn_input_tokens": 8,
        "output_tokens": 4,
        "warmup": 1,
        "duration_s": duration_s,
        **kw,
    }
    return PerfSpec.model_validate({"scenarios": [scenario], "probe_share": 0.0})


def measure(url: str, spec: PerfSpec, **kw: Any) -> ScenarioRun:
    (run,) = asyncio.run(run_scenarios(url, "mock", spec, "candidate", **kw))
    return run


def test_conversations_restart_from_the_shared_prefix_until_the_time_is_up(mock_url: str) -> None:
    run = measure(mock_url, agent(2.0, series_bucket_s=1))
    reqs = run.requests
    assert run.params["duration_s"] == 2.0 and run.params["series_bucket_s"] == 1
    assert run.params["requests"] is None  # not known in advance
    assert all(r.error is None and not r.check_failures for r in reqs)
    # the scenario's zero is taken after the warm-up, which is never recorded
    assert all(r.sent_ns >= 0 for r in reqs) and reqs[0].turn == 0
    # new conversations (numbered on from 2) started as the first two finished
    by_conv: dict[int, list[int]] = {}
    for r in sorted(reqs, key=lambda r: r.sent_ns):
        assert r.conversation is not None and r.turn is not None
        by_conv.setdefault(r.conversation, []).append(r.turn)
    assert len(by_conv) >= 3 and sorted(by_conv) == list(range(len(by_conv)))
    assert all(turns == list(range(len(turns))) for turns in by_conv.values())
    # every conversation opens with the same shared prefix (same first prompt length)
    assert len({r.prompt_tokens for r in reqs if r.turn == 0}) == 1
    # no turn was started once the time was up
    assert max(r.scheduled_ns for r in reqs) < 2 * S
    m = summarize(run, None)
    assert m.time_series is not None
    buckets = m.time_series.buckets
    end = max(r.done_ns for r in reqs)
    assert len(buckets) == -(-end // S) >= 2  # 1 s buckets up to the last completion
    assert sum(b.completed for b in buckets) == m.completed == len(reqs)
    assert sum(b.output_tokens for b in buckets) == m.total_output_tokens == 4 * len(reqs)
    # the mock holds every first token 30 ms: no bucket's TTFT can be lower
    assert all(b.ttft_p50_ms is None or b.ttft_p50_ms >= 30 for b in buckets)
    assert m.prefix_cache_hit_rate is not None and m.prefix_cache_hit_rate > 0.3


def test_turns_in_flight_at_the_end_are_finished_and_counted() -> None:
    # Every first token takes 400 ms, the run 0.2 s: both opening turns are still in flight
    # when the time is up; they are awaited, recorded, and the window runs to their end.
    with load_mock().running(ttft_ms=400.0, itl_ms=5.0) as url:
        run = measure(url, agent(0.2, warmup=0))
    assert len(run.requests) == 2
    assert all(r.error is None and r.done_ns > 0.4 * S for r in run.requests)
    assert run.duration_ns >= 0.4 * S
    m = summarize(run, None)
    assert m.completed == 2 and m.time_series is not None
    (bucket,) = m.time_series.buckets  # the default 60 s bucket, cut at the last completion
    assert bucket.completed == 2 and bucket.seconds == max(r.done_ns for r in run.requests) / S


def test_a_dead_server_stops_each_worker_after_failures_in_a_row() -> None:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()

    async def tokenize(text: str) -> list[int]:
        return list(range(len(text.split())))

    run = measure(f"http://127.0.0.1:{port}/v1", agent(60.0, warmup=0), tokenize=tokenize)
    # each of the two workers tried MAX_FAILED_IN_A_ROW conversations, then gave up long
    # before the minute was over (instead of hammering the port for the rest of it)
    assert len(run.requests) == 2 * MAX_FAILED_IN_A_ROW
    assert all(r.error is not None and r.turn == 0 for r in run.requests)
    assert summarize(run, None).failed == len(run.requests)


def test_qgate_perf_prints_the_series_of_a_duration_scenario(mock_url: str, tmp_path: Any) -> None:
    from click.testing import CliRunner

    from qgate.cli.perf import perf

    profile = tmp_path / "agent.yaml"
    profile.write_text(
        "name: t\nmodel: {embedded: smollm2}\ncandidate: {}\nquality: {math: {max_drop: 0.1}}\n"
        "perf:\n  scenarios:\n    - {name: agent, kind: multi_turn, conversations: 2, turns: 2,"
        " shared_prefix_tokens: 32, turn_input_tokens: 8, output_tokens: 3, warmup: 0,"
        " duration_s: 1.2, series_bucket_s: 1}\n"
    )
    res = CliRunner().invoke(
        perf, [str(profile), "--base-url", mock_url, "--no-progress"], catch_exceptions=False
    )
    assert res.exit_code == 0, res.output
    table = res.output.split("agent (standalone), 1 s buckets:\n", 1)[1].splitlines()
    assert table[0].split() == [
        "from",
        "s",
        "s",
        "out",
        "tok/s",
        "req",
        "ok/err",
        "TTFT",
        "p50/p90",
        "ms",
    ]
    assert [row.split()[0] for row in table[2:4]] == ["0", "1"]
