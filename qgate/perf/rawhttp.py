"""A minimal HTTP/1.1 streaming client on asyncio protocols, for plain-http endpoints.

Why not only aiohttp: with aiohttp every network read of every stream wakes a
coroutine, and at hundreds of concurrent streams on a small machine those
wake-ups lag the event loop, which shows up as TTFT and ITL error. Here the
event loop's `data_received` callback only appends (perf_counter_ns, bytes)
and checks for the end of the response; the coroutine wakes once, when the
response is complete (a request's write reaches the socket at once, on
uvloop as on asyncio: tests/unit/perf/test_read_path.py). HTTP framing
(status, headers, chunked encoding) is decoded after the scenario, keeping
each body piece with the time of the read it arrived in.
perf/bench_client_fidelity.py measures it against vLLM's client.

Scope: POST with a JSON body, HTTP/1.1 keep-alive, chunked or Content-Length
or until-close bodies, no TLS, proxies, redirects or compression (https
endpoints use aiohttp instead; see qgate.perf.client).
"""

from __future__ import annotations

import asyncio
import time
from typing import cast
from urllib.parse import urlsplit

from qgate.perf.client import RawResponse
from qgate.perf.framing import body_pieces, dechunk

_END_CHUNKED = b"0\r\n\r\n"
_END_CHUNKED_AFTER_DATA = b"\r\n" + _END_CHUNKED

__all__ = ["RawClient", "body_pieces", "dechunk"]


class _Conn(asyncio.Protocol):
    """One keep-alive connection; one request at a time."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.reads: list[tuple[int, bytes]] = []
        self.done: asyncio.Future[None] | None = None
        self.closed = False
        self.head_end = -1
        self.mode = ""  # "chunked" | "length" | "close"
        self.length = 0
        self.received = 0
        self.status = 0
        self.keep_alive = True
        self.expired = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports do not subclass asyncio.Transport; they behave like one.
        self.transport = cast(asyncio.Transport, transport)

    def start(self, loop: asyncio.AbstractEventLoop) -> asyncio.Future[None]:
        self.reads = []
        self.head_end = -1
        self.mode = ""
        self.received = 0
        self.expired = False
        self.done = loop.create_future()
        return self.done

    def data_received(self, data: bytes) -> None:
        self.reads.append((time.perf_counter_ns(), data))
        self.received += len(data)
        if self.head_end < 0 and not self._head():
            return
        if self._complete(data):
            self._finish()

    def _head(self) -> bool:
        buf = b"".join(d for _, d in self.reads)
        end = buf.find(b"\r\n\r\n")
        if end < 0:
            return False
        self.head_end = end + 4
        lines = buf[:end].decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        self.status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
        headers = {}
        for ln in lines[1:]:
            k, _, v = ln.partition(":")
            headers[k.strip().lower()] = v.strip().lower()
        self.keep_alive = headers.get("connection") != "close"
        if "chunked" in headers.get("transfer-encoding", ""):
            self.mode = "chunked"
        elif "content-length" in headers:
            self.mode = "length"
            self.length = int(headers["content-length"])
        else:
            self.mode = "close"
        # The head and the start of the body may have arrived together.
        return True

    def _complete(self, last: bytes) -> bool:
        if self.mode == "length":
            return self.received - self.head_end >= self.length
        if self.mode == "chunked":
            return self._chunked_end(last)
        return False

    def _chunked_end(self, last: bytes) -> bool:
        """The last chunk is in: the newest bytes are the zero-size chunk after a chunk's
        CRLF (or the whole body). A cheap test on the read path; the full decode, after the
        scenario, confirms it (a body that merely contains these bytes fails there)."""
        tail = last if len(last) >= 7 else b"".join(d for _, d in self.reads[-7:])[-7:]
        if tail.endswith(_END_CHUNKED_AFTER_DATA):
            return True
        return tail.endswith(_END_CHUNKED) and self.received - self.head_end == len(_END_CHUNKED)

    def expire(self) -> None:
        """The request's time is up (a timer callback)."""
        self.expired = True
        self._finish()

    def _finish(self) -> None:
        if self.done is not None and not self.done.done():
            self.done.set_result(None)

    def body_reads(self) -> list[tuple[int, bytes]]:
        """The reads after the head, each cut to its body bytes."""
        out: list[tuple[int, bytes]] = []
        pos = 0
        for t, d in self.reads:
            start = max(self.head_end - pos, 0)
            if start < len(d):
                out.append((t, d[start:]))
            pos += len(d)
        return out

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._finish()


class RawClient:
    """Keep-alive connections to one host, reused across requests."""

    def __init__(self, base_url: str, timeout_s: float) -> None:
        u = urlsplit(base_url)
        if u.scheme != "http" or u.hostname is None:
            raise ValueError("RawClient supports http:// URLs only")
        self.host = u.hostname
        self.port = u.port or 80
        self.timeout_s = timeout_s
        self.idle: list[_Conn] = []
        self.all: set[_Conn] = set()

    async def _connect(self) -> _Conn:
        loop = asyncio.get_running_loop()
        _, conn = await loop.create_connection(_Conn, self.host, self.port)
        self.all.add(conn)
        return conn

    async def send(
        self, path: str, body: bytes, headers: dict[str, str] | None = None
    ) -> RawResponse:
        """POST body to path; every failure ends as `error` on the result, never raised."""
        extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
        head = (
            f"POST {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
            f"Content-Type: application/json\r\nAccept: text/event-stream\r\n"
            f"Content-Length: {len(body)}\r\n{extra}\r\n"
        ).encode("latin-1")
        raw = RawResponse(sent_ns=time.perf_counter_ns())
        loop = asyncio.get_running_loop()
        # Servers close idle keep-alive connections (uvicorn after 5 s): drop those first.
        self.idle = [c for c in self.idle if not c.closed]
        for attempt in (0, 1):
            reused = bool(self.idle)
            try:
                if reused:
                    conn = self.idle.pop()
                else:
                    start = time.perf_counter_ns()
                    conn = await self._connect()
                    raw.connect_ns = time.perf_counter_ns() - start
            except OSError as e:
                raw.error = f"connect failed: {e.strerror or type(e).__name__}"
                raw.done_ns = time.perf_counter_ns()
                return raw
            assert conn.transport is not None
            done = conn.start(loop)
            # One timer per request (cheaper than wait_for's task and shield).
            timer = loop.call_later(self.timeout_s, conn.expire)
            # Stamped just before the write: if the process is descheduled in between, the
            # error lands in TTFT (overstated), never makes TTFT look shorter than it was.
            raw.sent_ns = time.perf_counter_ns()
            conn.transport.write(head + body)
            try:
                await done
            finally:
                timer.cancel()
            raw.done_ns = time.perf_counter_ns()
            if conn.expired:
                conn.transport.close()
                self.all.discard(conn)
                raw.error = "timeout"
                return raw
            # A kept-alive connection the server had already closed: retry once, fresh.
            if conn.closed and not conn.reads and reused and attempt == 0:
                self.all.discard(conn)
                continue
            return self._result(conn, raw)
        raise AssertionError("unreachable")

    def _result(self, conn: _Conn, raw: RawResponse) -> RawResponse:
        """Status, errors and connection reuse; the body stays as read (decoded later)."""
        raw.status = conn.status or None
        if conn.head_end < 0:
            raw.error = "connection closed before a response"
        elif conn.closed and not self._ended(conn):
            raw.error = "connection dropped mid-stream"
        elif conn.status != 200:
            pieces = conn.body_reads()
            if conn.mode == "chunked":
                pieces = dechunk(pieces)[0]
            text = b"".join(d for _, d in pieces)[:200].decode("utf-8", "replace")
            raw.error = f"HTTP {conn.status}: {text.strip()}"
        if raw.error is None:
            # Decoding the framing costs about a third of parsing the stream: kept for
            # `RawResponse.decode`, after the scenario (conn.start gives the next request
            # a new list).
            raw.wire = conn.reads
            raw.head_end = conn.head_end
            raw.chunked = conn.mode == "chunked"
        if conn.closed or not conn.keep_alive or raw.error is not None:
            if conn.transport is not None:
                conn.transport.close()
            self.all.discard(conn)
        else:
            self.idle.append(conn)
        return raw

    def _ended(self, conn: _Conn) -> bool:
        if conn.mode == "length":
            return conn.received - conn.head_end >= conn.length
        if conn.mode == "chunked":
            last = conn.reads[-1][1] if conn.reads else b""
            return conn._chunked_end(last)
        return True

    async def close(self) -> None:
        for c in list(self.all):
            if c.transport is not None:
                c.transport.close()
        self.all.clear()
        self.idle.clear()
