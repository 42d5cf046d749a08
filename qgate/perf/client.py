"""The streaming HTTP clients of the load generator, and what they record.

Two clients, chosen by measurement on the mock server
(perf/bench_client_fidelity.py, --client raw|aiohttp|httpx, 2-core machine
shared with other work): for plain http the protocol-level client in
qgate.perf.rawhttp (its event-loop callback only appends a timestamp per
read, no coroutine wakes per chunk), for https aiohttp (`send` below). httpx
was measured and dropped: its per-chunk path (httpcore + anyio) cost seconds
of TTFT error at 100 streams where aiohttp cost tens of milliseconds.

While a response streams in, a client only appends
(time.perf_counter_ns(), raw bytes) per network read; decoding and parsing
happen after the scenario has ended (qgate.perf.loadgen.Exchange,
qgate.core.sse). Every failure (connection refused
or dropped, HTTP status, timeout, malformed stream) ends as an `error`
string on that request, never as an exception out of `send`. uvloop is used
when installed (`run_loop`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import aiohttp

from qgate.core.http_errors import TransportError, map_exceptions
from qgate.perf.framing import body_pieces

if TYPE_CHECKING:
    import aiohttp

__all__ = ["RawResponse", "make_session", "post_json", "run_loop", "send"]

T = TypeVar("T")


@dataclass
class RawResponse:
    """A request as it happened on the wire, before parsing."""

    sent_ns: int
    done_ns: int = 0
    status: int | None = None
    chunks: list[tuple[int, bytes]] = field(default_factory=list)
    error: str | None = None
    # Time spent opening a new connection for this request (None: a kept-alive one was
    # reused). It lies before sent_ns, so it is client-side delay, never inside TTFT.
    connect_ns: int | None = None
    # The protocol-level client keeps the reads as they came (HTTP head and chunked
    # framing included) and leaves `chunks` empty until `decode` (after the scenario).
    wire: list[tuple[int, bytes]] | None = None
    head_end: int = 0
    chunked: bool = False

    def decode(self) -> None:
        """Fill `chunks` from `wire` (no-op when done or not needed); bad framing is an error."""
        if self.wire is None:
            return
        pieces, complete = body_pieces(self.wire, self.head_end, self.chunked)
        self.wire = None
        if not complete and self.error is None:
            self.error = "malformed chunked body"
        self.chunks = pieces


def make_session(limit: int, timeout_s: float) -> aiohttp.ClientSession:
    """A session with room for `limit` concurrent connections and a per-request timeout."""
    connector = aiohttp.TCPConnector(limit=max(limit, 1), limit_per_host=0, ttl_dns_cache=300)
    # sock_read catches a stall mid-stream early; total bounds the whole request.
    timeout = aiohttp.ClientTimeout(total=timeout_s, sock_read=timeout_s)
    trace = aiohttp.TraceConfig()
    trace.on_connection_reuseconn.append(_mark_sent)
    trace.on_connection_create_start.append(_mark_connect)
    trace.on_connection_create_end.append(_mark_sent)
    return aiohttp.ClientSession(
        connector=connector, timeout=timeout, auto_decompress=False, trace_configs=[trace]
    )


async def _mark_connect(_session: object, ctx: Any, _params: object) -> None:
    box = ctx.trace_request_ctx
    if isinstance(box, dict):
        box["connect"] = time.perf_counter_ns()


async def _mark_sent(_session: object, ctx: Any, _params: object) -> None:
    # A connection is in hand and the request is written next: waiting for a connection
    # is client queueing. Stamped before the write, so a descheduled client overstates
    # TTFT rather than understating it.
    box = ctx.trace_request_ctx
    if isinstance(box, dict):
        box["sent"] = time.perf_counter_ns()


async def send(
    session: aiohttp.ClientSession,
    url: str,
    body: bytes,
    headers: dict[str, str] | None = None,
) -> RawResponse:
    """POST a streaming request (a JSON body, serialized by the caller before the clock
    starts) and record every network read with its arrival time."""
    hdrs = {"Content-Type": "application/json", **(headers or {})}
    box: dict[str, int] = {}
    raw = RawResponse(sent_ns=time.perf_counter_ns())
    chunks = raw.chunks
    clock = time.perf_counter_ns
    try:
        with map_exceptions():
            async with session.post(url, data=body, headers=hdrs, trace_request_ctx=box) as resp:
                raw.sent_ns = box.get("sent", raw.sent_ns)
                raw.status = resp.status
                if resp.status != 200:
                    text = (await resp.read())[:200].decode("utf-8", "replace")
                    raw.error = f"HTTP {resp.status}: {text.strip()}"
                else:
                    async for data in resp.content.iter_any():
                        chunks.append((clock(), data))
    except TransportError as e:
        raw.error = _stream_error(e)
    except asyncio.CancelledError:
        raw.done_ns = clock()
        raw.error = "cancelled"
        raise
    raw.sent_ns = box.get("sent", raw.sent_ns)
    if "connect" in box:
        raw.connect_ns = max(raw.sent_ns - box["connect"], 0)
    raw.done_ns = clock()
    return raw


def _stream_error(e: TransportError) -> str:
    """A streamed request's failure as the per-request record states it."""
    if e.kind == "timeout":
        return "timeout"
    if e.kind == "dropped":
        return f"connection dropped mid-stream: {e.name}"
    return f"{e.name}: {str(e.original)[:160]}"


async def post_json(
    session: aiohttp.ClientSession,
    url: str,
    payload: dict[str, Any],
    headers: dict[str, str] | None = None,
) -> Any:
    """A plain (non-streaming) JSON POST, e.g. /tokenize."""
    async with session.post(url, json=payload, headers=headers) as resp:
        resp.raise_for_status()
        return await resp.json()


def run_loop(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine on uvloop when installed (lower per-read overhead), else asyncio."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coro)
    return uvloop.run(coro)
