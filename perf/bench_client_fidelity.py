"""How much error does qgate's load-generator client add to TTFT and ITL?

    .venv/bin/python perf/bench_client_fidelity.py [--levels 1 100 500] [--client aiohttp|httpx]

Starts the mock OpenAI server (tests/mockserver/mock_openai.py) in its own
process, sends N concurrent streaming requests at once for each level, and
compares what the client measured with what the server really did: every
chunk carries the server's request-arrival and send times on the shared
monotonic clock.

- TTFT error = measured TTFT (client send -> first chunk received)
  minus true TTFT (server request arrival -> first chunk written).
  It splits into delivery (client wrote the request -> server handler ran,
  which includes the mock's own backlog when hundreds arrive at once) and
  receive lag (server wrote the first chunk -> client read it).
- ITL p99 error = p99 of measured gaps minus p99 of the server's send gaps,
  and p99 of |measured gap - true gap| per token.

Anchors (H100 hosts, from the issue): vLLM's Python `bench serve` adds about
+23 ms TTFT error at 100 streams and +137 ms at 500; its Rust client +3.5 ms
and +19.9 ms. Here the mock and the client share the same (2-core) machine.

Measured 2026-11-30 04:01 UTC (steady state, 16 tokens, TTFT 200 ms, ITL
25 ms; the machine shared with other vLLM servers, load average 8-17), mean
TTFT error / ITL p99 error in ms:

    client   1 stream      100 streams      500 streams
    raw      +5.2 / +3.4   +2.7 / +1.4      +61.3 / +1.2   (delivery to the mock 50 ms
                                                           p50; receive lag 0.2 ms p50)
    aiohttp  +14.2 / +4.2  +9.7 / +13.1     +873 / +188
    httpx    +19.1 / -1.1  +2757 / +121     +21943 / +607  (03:47 run)
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from qgate.perf.client import RawResponse, make_session, run_loop, send  # noqa: E402
from qgate.perf.rawhttp import RawClient  # noqa: E402
from qgate.perf.stream import parse_sse  # noqa: E402


def load_mock() -> Any:
    spec = importlib.util.spec_from_file_location(
        "mock_openai", ROOT / "tests" / "mockserver" / "mock_openai.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    if not s:
        return float("nan")
    k = (len(s) - 1) * q / 100
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


async def send_httpx(client: Any, url: str, payload: dict[str, Any]) -> RawResponse:
    raw = RawResponse(sent_ns=time.perf_counter_ns())
    try:
        async with client.stream("POST", url, json=payload) as resp:
            raw.status = resp.status_code
            async for data in resp.aiter_raw():
                raw.chunks.append((time.perf_counter_ns(), data))
    except Exception as e:  # the benchmark reports errors, it does not stop on them
        raw.error = type(e).__name__
    raw.done_ns = time.perf_counter_ns()
    return raw


async def level(
    url: str,
    n: int,
    tokens: int,
    ttft_ms: float,
    itl_ms: float,
    client: str,
    rounds: int,
    burst: bool,
) -> str:
    payload = {
        "model": "mock",
        "prompt": [1, 2, 3, 4],
        "max_tokens": tokens,
        "stream": True,
        "stream_options": {"include_usage": True},
        "mock": {"ttft_ms": ttft_ms, "itl_ms": itl_ms},
    }
    target = url + "/completions"
    # Steady state: each of the n streams is a worker that sends `rounds` requests back to
    # back, started at a uniformly spread offset within one request's duration, like a
    # closed-loop benchmark that has been running a while. The first round is not scored
    # (it opens the connection). --burst instead fires all n at the same instant.
    req_s = (ttft_ms + itl_ms * (tokens - 1)) / 1000
    rng = random.Random(0)

    async def worker(sender: Any) -> list[RawResponse]:
        if not burst:
            await asyncio.sleep(rng.uniform(0, req_s))
        out = [await sender() for _ in range(rounds)]
        return out[1:]

    if client == "httpx":
        import httpx

        limits = httpx.Limits(max_connections=n + 8, max_keepalive_connections=n + 8)
        async with httpx.AsyncClient(limits=limits, timeout=120) as hc:
            got = await asyncio.gather(
                *(worker(lambda: send_httpx(hc, target, payload)) for _ in range(n))
            )
    elif client == "raw":
        import json

        rc = RawClient(url, 120)
        body = json.dumps(payload).encode()
        path = urlsplit(target).path
        got = await asyncio.gather(*(worker(lambda: rc.send(path, body)) for _ in range(n)))
        await rc.close()
    else:
        async with make_session(n + 8, 120) as s:
            got = await asyncio.gather(
                *(worker(lambda: send(s, target, payload)) for _ in range(n))
            )
    raws = [r for rs in got for r in rs]
    ttft_err: list[float] = []
    send_lag: list[float] = []
    recv_lag: list[float] = []
    itl_meas: list[float] = []
    itl_true: list[float] = []
    gap_err: list[float] = []
    errors = 0
    for raw in raws:
        p = parse_sse(raw.chunks, keep_events=True)
        if raw.error or p.error:
            errors += 1
            continue
        ev = [(t, e) for t, e in p.events if e.get("choices")]
        sent = [e["mock_sent_ns"] for _, e in ev]
        recv = ev[0][1]["mock_recv_ns"]
        arrived = [t for t, _ in ev]
        ttft_err.append(((arrived[0] - raw.sent_ns) - (sent[0] - recv)) / 1e6)
        send_lag.append((recv - raw.sent_ns) / 1e6)
        recv_lag.append((arrived[0] - sent[0]) / 1e6)
        for a, b, sa, sb in zip(arrived, arrived[1:], sent, sent[1:], strict=False):
            itl_meas.append((b - a) / 1e6)
            itl_true.append((sb - sa) / 1e6)
            gap_err.append(abs((b - a) - (sb - sa)) / 1e6)
    return (
        f"{client:7s} streams={n:4d} scored={len(ttft_err):4d}"
        f"  TTFT error mean {statistics.fmean(ttft_err):+7.2f} ms"
        f"  p50 {pct(ttft_err, 50):+7.2f}  p99 {pct(ttft_err, 99):+7.2f}"
        f"  = delivery to server p50 {pct(send_lag, 50):6.2f} + first-chunk receive lag"
        f" p50 {pct(recv_lag, 50):5.2f} p99 {pct(recv_lag, 99):5.2f}"
        f"  | ITL p99 measured {pct(itl_meas, 99):6.2f} true {pct(itl_true, 99):6.2f}"
        f" error {pct(itl_meas, 99) - pct(itl_true, 99):+6.2f} ms"
        f"  per-gap |err| p99 {pct(gap_err, 99):6.2f} ms  errors {errors}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--levels", type=int, nargs="+", default=[1, 100, 500])
    ap.add_argument("--client", choices=["raw", "aiohttp", "httpx", "all"], default="raw")
    ap.add_argument("--tokens", type=int, default=16)
    ap.add_argument("--ttft-ms", type=float, default=200.0)
    ap.add_argument("--itl-ms", type=float, default=25.0)
    ap.add_argument("--pin", action="store_true", help="mock on CPU 1, client on CPU 0")
    ap.add_argument("--rounds", type=int, default=3, help="requests per stream (first unscored)")
    ap.add_argument("--burst", action="store_true", help="all streams start at one instant")
    a = ap.parse_args()
    if a.pin:
        import os

        os.sched_setaffinity(0, {0})
    clients = ["raw", "aiohttp", "httpx"] if a.client == "all" else [a.client]
    with load_mock().running(a.ttft_ms, a.itl_ms, cpu=1 if a.pin else None) as url:
        for c in clients:
            for n in a.levels:
                line = level(url, n, a.tokens, a.ttft_ms, a.itl_ms, c, a.rounds, a.burst)
                print(run_loop(line), flush=True)


if __name__ == "__main__":
    main()
