"""Issue 13: nothing but reading and time-stamping on the event loop while a scenario runs."""

from __future__ import annotations

import asyncio
import importlib.util
import io
import json
import time
from types import SimpleNamespace
from typing import Any

import pytest

import qgate.perf.loadgen as loadgen
from qgate.perf.client import make_session, run_loop
from qgate.perf.loadgen import RequestSpec, Sender
from qgate.perf.progress import ScenarioProgress
from qgate.perf.rawhttp import RawClient
from qgate.perf.records import RequestRecord, ScenarioRun
from qgate.perf.runner import run_scenarios
from qgate.profile import PerfSpec


def fixed_spec(concurrency: int, requests: int) -> PerfSpec:
    return PerfSpec.model_validate(
        {
            "scenarios": [
                {
                    "name": "f",
                    "input_tokens": 16,
                    "output_tokens": 6,
                    "concurrency": concurrency,
                    "requests": requests,
                    "warmup": 1,
                }
            ],
            "probe_share": 0.0,
        }
    )


def test_no_parse_happens_while_a_response_is_in_flight(
    mock_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    in_flight = 0
    seen_busy: list[int] = []
    real_send = RawClient.send
    real_parse = loadgen.parse_sse

    async def counting_send(self: RawClient, *a: Any, **k: Any) -> Any:
        nonlocal in_flight
        in_flight += 1
        try:
            return await real_send(self, *a, **k)
        finally:
            in_flight -= 1

    def spy(chunks: Any, keep_events: bool = False) -> Any:
        seen_busy.append(in_flight)
        return real_parse(chunks, keep_events)

    monkeypatch.setattr(RawClient, "send", counting_send)
    monkeypatch.setattr(loadgen, "parse_sse", spy)
    (run,) = asyncio.run(run_scenarios(mock_url, "mock", fixed_spec(5, 15), "candidate"))
    assert len(run.requests) == 15 and all(r.error is None for r in run.requests)
    # Every stream was parsed (once), and only when no response was being read.
    assert len(seen_busy) == 15
    assert seen_busy == [0] * 15


def test_on_done_gets_the_raw_exchange_without_parsing(mock_url: str) -> None:
    body = {
        "model": "mock",
        "prompt": [1, 2],
        "max_tokens": 3,
        "stream": True,
        "stream_options": {"include_usage": True},
    }

    async def go() -> tuple[list[Any], RequestRecord, RequestRecord]:
        async with make_session(2, 5) as s:
            raw = RawClient(mock_url, 5)
            sender = Sender(s, mock_url, None, t0=0, raw=raw)
            got: list[Any] = []
            sender.on_done = got.append
            sender.start()
            await sender.run(RequestSpec("/completions", body), time.perf_counter_ns())
            await sender.run(RequestSpec("/completions", body), time.perf_counter_ns())
            assert [ex._parsed for ex in got] == [None, None]
            await raw.close()
            first, second = sender.records()
            return got, first, second

    got, first, second = asyncio.run(go())
    assert len(got) == 2 and not got[0].failed
    # A new connection's set-up is recorded apart (before sent_ns); a reused one has none.
    assert first.connect_ns is not None and first.connect_ns > 0
    assert second.connect_ns is None
    assert first.response_id is not None and first.response_id.startswith("cmpl-mock-")
    assert first.sent_ns - first.scheduled_ns >= first.connect_ns


def test_aiohttp_client_records_connect_time(mock_url: str) -> None:
    async def go() -> list[RequestRecord]:
        async with make_session(2, 5) as s:
            sender = Sender(s, mock_url, None, t0=0)
            sender.start()
            for _ in range(2):
                await sender.run(
                    RequestSpec(
                        "/completions",
                        {"model": "m", "prompt": [1], "max_tokens": 2, "stream": True},
                    ),
                    time.perf_counter_ns(),
                )
            return sender.records()

    first, second = asyncio.run(go())
    assert first.connect_ns is not None and second.connect_ns is None


def test_the_anchor_is_the_wall_clock_of_the_zero() -> None:
    sender = Sender(None, "http://x/v1", None, t0=0)  # type: ignore[arg-type]
    wall_before = time.time_ns()
    sender.start()
    wall_after = time.time_ns()
    assert sender.t0_unix_ns is not None
    assert wall_before <= sender.t0_unix_ns <= wall_after


class FakeTty(io.StringIO):
    writes = 0

    def isatty(self) -> bool:
        return True

    def write(self, s: str) -> int:
        FakeTty.writes += 1
        return super().write(s)


def test_progress_counts_on_the_loop_and_draws_from_a_timer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tty = FakeTty()
    monkeypatch.setattr("sys.stderr", tty)

    async def go() -> ScenarioProgress:
        with ScenarioProgress("candidate f", 1000, enabled=True) as bar:
            drawn = FakeTty.writes
            for i in range(1000):
                bar.advance(i % 100 == 0)
            assert FakeTty.writes == drawn  # advancing never draws
        return bar

    FakeTty.writes = 0
    bar = asyncio.run(go())
    assert (bar.done, bar.errors) == (1000, 10)
    assert "candidate f" in tty.getvalue()
    assert tty.getvalue().endswith("\r\x1b[2K")  # the line is cleared at the end


def test_run_loop_is_uvloop_when_installed() -> None:
    pytest.importorskip("uvloop")

    async def which() -> str:
        return type(asyncio.get_running_loop()).__module__

    assert run_loop(which()).startswith("uvloop")


def test_qgate_run_perf_stage_uses_the_same_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    import qgate.perf.client as client
    import qgate.run.perf as stages

    used: list[str] = []
    real = client.run_loop

    def spy_loop(coro: Any) -> Any:
        used.append("run_loop")
        return real(coro)

    async def fake_run(*a: Any, **k: Any) -> list[ScenarioRun]:
        used.append(type(asyncio.get_running_loop()).__module__)
        return []

    monkeypatch.setattr(stages, "run_loop", spy_loop)
    monkeypatch.setattr(stages, "run_scenarios", fake_run)
    monkeypatch.setattr(stages, "runtime_headers", lambda rt: None)
    monkeypatch.setattr(stages, "probe_set", lambda ctx, q, r: [])
    monkeypatch.setattr(stages, "save_raw", lambda ctx, name, runs: None)
    ctx: Any = SimpleNamespace(
        profile=SimpleNamespace(
            perf=fixed_spec(1, 1),
            quality=SimpleNamespace(math=None, seed=0),
            target=SimpleNamespace(count=1),
            engine=SimpleNamespace(request_timeout_s=5.0),
            engine_of=lambda role: SimpleNamespace(kind="vllm"),
        ),
        opts=SimpleNamespace(progress=False),
        round=0,
    )
    runtime: Any = SimpleNamespace(base_url="http://127.0.0.1:9/v1", served_model="m", metrics=None)
    quality: Any = SimpleNamespace(effective_config="applied")  # not a preview's reference
    assert stages.perf_on(ctx, runtime, "candidate", quality) == []
    assert used[0] == "run_loop"
    if importlib.util.find_spec("uvloop") is not None:
        assert used[1].startswith("uvloop")


def test_old_records_without_the_new_fields_still_load() -> None:
    rec = {
        "index": 0,
        "scheduled_ns": 0,
        "sent_ns": 5,
        "first_token_ns": 10,
        "done_ns": 20,
        "token_times_ns": [10, 20],
    }
    r = RequestRecord.model_validate(rec)
    assert r.connect_ns is None and r.response_id is None
    run = ScenarioRun.model_validate(
        {
            "scenario": "s",
            "role": "candidate",
            "kind": "fixed",
            "gpus": 1,
            "duration_ns": 20,
            "requests": [rec],
        }
    )
    assert run.t0_unix_ns is None
    assert json.loads(run.model_dump_json())["requests"][0]["sent_ns"] == 5


@pytest.mark.parametrize("loop_kind", ["uvloop", "asyncio"])
def test_a_request_reaches_the_socket_at_its_send_stamp(loop_kind: str) -> None:
    """The send stamp is taken just before `transport.write`: that is only right if the
    write reaches the socket at once, not when the loop iteration ends."""
    import socket

    from qgate.perf.rawhttp import _Conn

    if loop_kind == "uvloop":
        pytest.importorskip("uvloop")
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]

    async def go() -> bytes:
        loop = asyncio.get_running_loop()
        _, conn = await loop.create_connection(_Conn, "127.0.0.1", port)
        peer, _ = server.accept()
        peer.settimeout(2)
        try:
            assert conn.transport is not None
            conn.transport.write(b"POST / HTTP/1.1\r\n\r\n")
            # No await in between: the loop cannot have flushed anything for us.
            return peer.recv(100)
        except TimeoutError:
            return b""
        finally:
            peer.close()
            assert conn.transport is not None
            conn.transport.close()

    try:
        got = run_loop(go()) if loop_kind == "uvloop" else asyncio.run(go())
    finally:
        server.close()
    assert got == b"POST / HTTP/1.1\r\n\r\n"
