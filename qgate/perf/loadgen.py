"""Sending requests: one request end to end, closed-loop workers and open-loop arrivals.

While a scenario runs, the event loop only sends requests and stamps reads:
each response is kept raw (an `Exchange`) and parsed into a RequestRecord
after the scenario (`Sender.records`). Parsing a finished 64-chunk stream
costs about a millisecond of Python; done on the loop, it delayed the reads of
every other stream in flight, which then looked late (issue 13).

Times in the records are nanoseconds since the scenario's start (`t0`, a
`time.perf_counter_ns()` value). `scheduled_ns` is when the workload wanted a
request sent (its arrival time in open loop, the moment a worker became free
in closed loop); `sent_ns` is when the client began writing it (a connection
in hand), so the client's own queueing never hides inside TTFT.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import numpy as np

from qgate.core.sse import ParsedStream, parse_sse
from qgate.perf.checks import with_checks
from qgate.perf.client import RawResponse, send
from qgate.perf.probes import extract_answer, grade
from qgate.perf.rawhttp import RawClient
from qgate.perf.records import RequestRecord
from qgate.perf.sessions import grade_turn, turn_answer

if TYPE_CHECKING:
    import aiohttp


@dataclass
class RequestSpec:
    """One request to send: where, what, and what it is for."""

    path: str
    payload: dict[str, Any]
    requested_output_tokens: int | None = None
    conversation: int | None = None
    turn: int | None = None
    concurrency: int | None = None
    probe_id: str | None = None
    probe_expected: str | None = None
    probe_truth: str | None = None
    graded_turn: str | None = None
    body: bytes | None = None

    def encoded(self) -> bytes:
        """The JSON body, serialized once (workloads may do it before the clock starts)."""
        if self.body is None:
            self.body = json.dumps(self.payload, separators=(",", ":")).encode()
        return self.body


@dataclass
class Exchange:
    """One sent request as it happened on the wire, kept raw until the scenario has ended."""

    spec: RequestSpec
    index: int
    scheduled_ns: int
    raw: RawResponse
    _parsed: ParsedStream | None = None

    @property
    def failed(self) -> bool:
        """A transport or HTTP failure (known without parsing the stream)."""
        return self.raw.error is not None

    def parsed(self) -> ParsedStream:
        """The stream parsed (once). Only multi-turn needs it during a scenario."""
        if self._parsed is None:
            self.raw.decode()
            parsed = ParsedStream()
            if self.raw.error is None:
                try:
                    parsed = parse_sse(self.raw.chunks)
                except (ValueError, TypeError, KeyError) as e:  # odd shapes: the request's error
                    parsed.error = f"unparsable stream: {type(e).__name__}"
            self._parsed = parsed
        return self._parsed

    def error(self) -> str | None:
        """Transport/HTTP error, else the stream's (parses the stream)."""
        return self.raw.error or self.parsed().error

    def record(self, t0: int) -> RequestRecord:
        """The RequestRecord, with stream checks, times relative to `t0`."""
        spec, raw = self.spec, self.raw
        parsed = self.parsed()
        error = self.error()
        times = [t - t0 for t in parsed.token_times_ns]
        answer = None
        correct = None
        if spec.probe_id is not None and error is None:
            answer = extract_answer(parsed.text)
        if spec.probe_id is not None and spec.probe_truth is not None:
            correct = error is None and grade(parsed.text, spec.probe_truth)
        graded = spec.graded_turn is not None
        if graded and spec.probe_truth is not None:
            answer = None if error is not None else turn_answer(parsed.text, spec.probe_truth)
            correct = error is None and grade_turn(parsed.text, spec.probe_truth)
        return with_checks(
            RequestRecord(
                index=self.index,
                conversation=spec.conversation,
                turn=spec.turn,
                concurrency=spec.concurrency,
                probe_id=spec.probe_id,
                scheduled_ns=self.scheduled_ns - t0,
                sent_ns=raw.sent_ns - t0,
                first_token_ns=times[0] if times else None,
                done_ns=raw.done_ns - t0,
                token_times_ns=times,
                chunk_tokens=parsed.chunk_tokens if parsed.ids_reported else None,
                prompt_tokens=parsed.prompt_tokens,
                output_tokens=parsed.completion_tokens,
                requested_output_tokens=spec.requested_output_tokens,
                cached_prompt_tokens=parsed.cached_prompt_tokens,
                error=error,
                probe_answer=answer,
                probe_expected=spec.probe_expected,
                text=parsed.text if spec.probe_id is not None or graded else None,
                probe_truth=spec.probe_truth,
                probe_correct=correct,
                connect_ns=raw.connect_ns,
                response_id=parsed.response_id,
                graded_turn=spec.graded_turn,
            )
        )


@dataclass
class Sender:
    """Sends RequestSpecs on one session and keeps each as a raw Exchange.

    Nothing but the send and the read-time stamps happens while a scenario
    runs: a stream is parsed and its record built by `records()`, after the
    scenario, so parsing one finished stream never delays the reads (and
    their timestamps) of the streams still in flight. `on_done` must be cheap.
    """

    session: aiohttp.ClientSession
    base_url: str
    headers: dict[str, str] | None
    t0: int
    exchanges: list[Exchange] = field(default_factory=list)
    on_done: Callable[[Exchange], None] | None = None
    counter: int = 0
    raw: RawClient | None = None
    t0_unix_ns: int | None = None

    def start(self) -> None:
        """Set the scenario's zero (now), with its wall-clock time as an absolute anchor."""
        wall = time.time_ns()
        self.t0 = time.perf_counter_ns()
        self.t0_unix_ns = (wall + time.time_ns()) // 2

    async def _send(self, spec: RequestSpec) -> RawResponse:
        if self.raw is None:
            return await send(self.session, self.base_url + spec.path, spec.encoded(), self.headers)
        path = urlsplit(self.base_url).path + spec.path
        return await self.raw.send(path, spec.encoded(), self.headers)

    async def run(self, spec: RequestSpec, scheduled_ns: int, *, keep: bool = True) -> Exchange:
        """Send one request and keep it raw (unless `keep` is False); no parsing here."""
        index = self.counter
        self.counter += 1
        ex = Exchange(spec, index, scheduled_ns, await self._send(spec))
        if keep:
            self.exchanges.append(ex)
            if self.on_done is not None:
                self.on_done(ex)
        return ex

    def records(self) -> list[RequestRecord]:
        """Every kept exchange parsed and checked, in order of sending (call after the scenario)."""
        recs = [ex.record(self.t0) for ex in self.exchanges]
        return sorted(recs, key=lambda r: r.sent_ns)


async def closed_loop(
    next_spec: Callable[[int], RequestSpec | None],
    run: Callable[[RequestSpec, int], Awaitable[Any]],
    concurrency: int,
    deadline_ns: int | None = None,
) -> None:
    """`concurrency` workers take specs 0, 1, 2, ... until next_spec gives None or time is up."""
    taken = 0

    async def worker() -> None:
        nonlocal taken
        while True:
            now = time.perf_counter_ns()
            if deadline_ns is not None and now >= deadline_ns:
                return
            spec = next_spec(taken)
            if spec is None:
                return
            taken += 1
            await run(spec, now)

    await asyncio.gather(*(worker() for _ in range(concurrency)))


def arrival_offsets_ns(
    n: int, rate: float, burstiness: float, seed: int, horizon_s: float | None = None
) -> list[int]:
    """Gamma inter-arrival times (shape = burstiness; 1.0 is Poisson) at `rate` per second.

    The first request arrives at 0, as in vLLM's `bench serve`. With a
    horizon, arrivals stop at the horizon instead of after `n`.
    """
    rng = np.random.default_rng(seed)
    theta = 1.0 / (rate * burstiness)
    out: list[int] = []
    t = 0.0
    while True:
        if horizon_s is None and len(out) >= n:
            break
        if horizon_s is not None and t >= horizon_s:
            break
        out.append(int(t * 1e9))
        t += float(rng.gamma(burstiness, theta))
    return out


async def open_loop(
    specs: list[RequestSpec],
    offsets_ns: list[int],
    run: Callable[[RequestSpec, int], Awaitable[Any]],
    max_concurrency: int | None,
    t0: int,
) -> None:
    """Send specs[i] at t0 + offsets_ns[i], at most `max_concurrency` in flight."""
    sem = asyncio.Semaphore(max_concurrency) if max_concurrency else None

    async def one(spec: RequestSpec, at: int) -> None:
        delay = (at - time.perf_counter_ns()) / 1e9
        if delay > 0:
            await asyncio.sleep(delay)
        if sem is None:
            await run(spec, at)
            return
        async with sem:
            await run(spec, at)

    await asyncio.gather(*(one(s, t0 + o) for s, o in zip(specs, offsets_ns, strict=True)))
