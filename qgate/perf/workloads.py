"""Workloads: exact-length prompts, fixed/sweep/open-loop, multi-turn agents, trace replay.

Prompts are token ids sent to /v1/completions, so input lengths are exact:
a random-words text is tokenized once by the server (POST /tokenize) into a
pool, and each request takes a window of the pool at its own seeded offset
(different first blocks, so requests do not share a cached prefix unless the
workload means them to). Outputs are forced with `ignore_eos` and
`min_tokens = max_tokens`. Seeds derive from the scenario name, so a rerun
sends the same prompts at the same arrival times.

Requests carry cache salts where the side salts (qgate/perf/salts.py): a workload that
shares no context (fixed, trace) salts every request apart, a multi-turn scenario's
conversations share one salt, its warm-ups and graded sessions each have their own.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
import zlib
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import numpy as np

from qgate.core.jsonl_checks import JsonlLineError, jsonl_values
from qgate.errors import BadInput
from qgate.perf.loadgen import RequestSpec, Sender, arrival_offsets_ns, closed_loop, open_loop
from qgate.perf.salts import salt_param, salted
from qgate.perf.session_run import graded_session
from qgate.perf.sessions import graded_sessions
from qgate.profile import FixedScenario, MultiTurnScenario, TraceScenario

_WORDS = (  # noqa: SIM905
    "time year people way day man thing woman life child world school state family "
    "student group country problem hand part place case week company system program "
    "question work government number night point home water room mother area money "
    "story fact month lot right study book eye job word business issue side kind "
    "head house service friend father power hour game line end member law car city "
    "name team minute idea kid body information back parent face others level office "
    "door health person art war history party result change morning reason research "
    "girl guy moment air teacher force education river stone cloud engine signal "
    "garden "
).split()

Tokenize = Callable[[str], Awaitable[list[int]]]
# Closed-loop requests whose bodies are serialized before the clock starts (the rest on demand).
PREBUILT = 4096
# Duration-bound multi-turn: a worker stops after this many failed turns in a row.
MAX_FAILED_IN_A_ROW = 3
# Called once the warmups are done, just before measuring starts (the runner scrapes /metrics).
Mark = Callable[[], Awaitable[None]]


# Which perf block runs (qgate/run/together.py): block b > 0 draws other prompts than block 0,
# so that a repeat does not replay prompts the engine's prefix cache holds from the last one.
BLOCK: contextvars.ContextVar[int] = contextvars.ContextVar("qgate_perf_block", default=0)


def scenario_seed(name: str) -> int:
    """A stable seed from a scenario name (profiles need no seed key) and the perf block."""
    return zlib.crc32(name.encode()) + 7919 * BLOCK.get()


def random_text(words: int, seed: int) -> str:
    rng = np.random.default_rng(seed)
    return " ".join(_WORDS[i] for i in rng.integers(0, len(_WORDS), size=words))


async def token_pool(tokenize: Tokenize, tokens: int, seed: int) -> list[int]:
    """At least `tokens` ids of random words, tokenized by the server's own tokenizer."""
    words = tokens + 16
    while True:
        ids = await tokenize(random_text(words, seed))
        if len(ids) >= tokens:
            return ids
        words *= 2


def window(pool: list[int], n: int, offset: int) -> list[int]:
    """Exactly n ids from the pool, starting at offset and wrapping around."""
    reps = (offset % len(pool) + n) // len(pool) + 1
    ring = pool * reps
    start = offset % len(pool)
    return ring[start : start + n]


def completion_payload(
    model: str, ids: list[int], out: int, *, token_ids: bool = True
) -> dict[str, Any]:
    """A streaming completions request with an exact input and a forced output length.

    `return_token_ids` (vLLM) lets the stream check count tokens exactly even when a
    busy server puts several tokens in one chunk.
    """
    p: dict[str, Any] = {
        "model": model,
        "prompt": ids,
        "max_tokens": out,
        "min_tokens": out,
        "ignore_eos": True,
        "temperature": 0.0,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if token_ids:
        p["return_token_ids"] = True
    return p


def _input_len(s: FixedScenario) -> int:
    if isinstance(s.input_tokens, list):  # runs get one length each (expand_inputs)
        raise ValueError(f"scenario {s.name}: expand the input-length matrix first")
    return s.input_tokens


async def run_fixed(
    s: FixedScenario,
    level: int,
    model: str,
    tokenize: Tokenize,
    sender: Sender,
    warm: Sender,
    mark: Mark,
) -> dict[str, Any]:
    """Fixed lengths at one concurrency level (closed loop), or open loop with a rate."""
    seed = scenario_seed(s.name)
    input_tokens = _input_len(s)
    pool = await token_pool(tokenize, max(2 * input_tokens, 256), seed)
    rng = np.random.default_rng(seed + level)
    offsets = [int(o) for o in rng.integers(0, len(pool), size=100_000)]

    def spec(i: int, salt: str) -> RequestSpec:
        ids = window(pool, input_tokens, offsets[i % len(offsets)])
        return RequestSpec(
            "/completions",
            salted(completion_payload(model, ids, s.output_tokens), s.name, salt),
            requested_output_tokens=s.output_tokens,
            concurrency=level,
        )

    warm_specs = [spec(len(offsets) - 1 - i, f"w{i}") for i in range(s.warmup)]
    for k in range(0, len(warm_specs), level):
        batch = warm_specs[k : k + level]
        await asyncio.gather(*(warm.run(w, time.perf_counter_ns()) for w in batch))
    # Bodies built and serialized before the clock starts, so the loop only sends.
    n = s.requests
    if s.request_rate is None:
        arrivals: list[int] = []
        ready = [spec(i, f"c{level}-{i}") for i in range(min(n or 0, PREBUILT))]
    else:
        arrivals = arrival_offsets_ns(n or 0, s.request_rate, s.burstiness, seed, s.duration_s)
        ready = [spec(i, f"c{level}-{i}") for i in range(len(arrivals))]
    for sp in ready:
        sp.encoded()
    await mark()

    async def go(sp: RequestSpec, at: int) -> None:
        await sender.run(sp, at)

    sender.start()
    if s.request_rate is not None:
        await open_loop(ready, arrivals, go, level, sender.t0)
    else:
        deadline = sender.t0 + int(s.duration_s * 1e9) if s.duration_s else None

        def next_spec(i: int) -> RequestSpec | None:
            if i < len(ready):
                return ready[i]
            due = deadline is not None or (n is not None and i < n)
            return spec(i, f"c{level}-{i}") if due else None

        await closed_loop(next_spec, go, level, deadline)
    return {
        "input_tokens": input_tokens,
        "output_tokens": s.output_tokens,
        "concurrency": level,
        "request_rate": s.request_rate,
        "burstiness": s.burstiness,
        "seed": seed,
        **salt_param(),
    }


async def run_multi_turn(
    s: MultiTurnScenario, model: str, tokenize: Tokenize, sender: Sender, warm: Sender, mark: Mark
) -> dict[str, Any]:
    """Concurrent conversations over a shared system prefix with a growing history.

    Odd turns look like tool output, even turns like a user message; each
    reply is appended (its token ids, or the server's tokenization of its
    text) so the next turn's prompt extends the previous one, which is what
    makes prefix caching pay off.

    Counted (no `duration_s`): `conversations` conversations of `turns`
    turns, all started at once. Duration-bound: `conversations` workers each
    run conversations back to back until `duration_s` has passed since the
    scenario's zero; a worker whose conversation ended (all its turns done,
    or a failed turn, which breaks its history) starts the next one, again
    from the shared prefix, numbered on from `conversations`. Once the time
    is up no turn is sent; turns already in flight are awaited, recorded
    and counted like every other, so the measured window (first send to
    last completion) ends with that tail, where fewer than `conversations`
    requests are in flight; the time series shows it in its last bucket. A
    worker stops early after MAX_FAILED_IN_A_ROW failed turns in a row (a
    dead server would otherwise be hammered for the rest of the duration;
    the error-rate check fails the scenario anyway). Warm-up requests go
    to `warm` and are never recorded.
    """
    seed = scenario_seed(s.name)
    pool = await token_pool(tokenize, max(2 * s.turn_input_tokens, 512), seed)
    prefix_pool = await token_pool(tokenize, max(s.shared_prefix_tokens, 1), seed + 1)
    prefix = window(prefix_pool, s.shared_prefix_tokens, 0)
    user_tag = await tokenize("\nUser:")
    tool_tag = await tokenize('\nTool result: {"status": "ok", "output":')
    rng = np.random.default_rng(seed)
    for i in range(s.warmup):
        ids = window(pool, s.turn_input_tokens, int(rng.integers(0, len(pool))))
        payload = salted(completion_payload(model, ids, s.output_tokens), s.name, f"w{i}")
        await warm.run(RequestSpec("/completions", payload), time.perf_counter_ns())
    await mark()
    sender.start()
    deadline = sender.t0 + int(s.duration_s * 1e9) if s.duration_s else None
    next_conv = s.conversations

    def time_up(now: int) -> bool:
        return deadline is not None and now >= deadline

    async def one(c: int) -> int | None:
        """Conversation c until its last turn, the deadline, or a failed turn (its index)."""
        crng = np.random.default_rng(seed * 1000 + c)
        history = list(prefix)
        for t in range(s.turns):
            now = time.perf_counter_ns()  # the turn's scheduled time: before the deadline
            if time_up(now):
                return None
            tag = tool_tag if t % 2 else user_tag
            history += tag + window(pool, s.turn_input_tokens, int(crng.integers(0, len(pool))))
            sp = RequestSpec(
                "/completions",
                salted(completion_payload(model, history, s.output_tokens), s.name, "conv"),
                requested_output_tokens=s.output_tokens,
                conversation=c,
                turn=t,
                concurrency=s.conversations,
            )
            # The one place a stream is parsed during a scenario: the next turn needs
            # the reply (as vLLM's multi-turn benchmark does).
            ex = await sender.run(sp, now)
            if ex.error() is not None:
                return t
            parsed = ex.parsed()
            history += parsed.token_ids or (await tokenize(parsed.text) if parsed.text else [])
            if s.think_time_s:
                await asyncio.sleep(s.think_time_s)
        return None

    async def worker(c: int) -> None:
        nonlocal next_conv
        failed_in_a_row = 0
        while True:
            failed_turn = await one(c)
            if failed_turn is None:
                failed_in_a_row = 0
            else:  # a failure after a good turn starts a new run of failures
                failed_in_a_row = failed_in_a_row + 1 if failed_turn == 0 else 1
            over = deadline is None or time_up(time.perf_counter_ns())
            if over or failed_in_a_row >= MAX_FAILED_IN_A_ROW:
                return
            c, next_conv = next_conv, next_conv + 1

    graded = [graded_session(s, model, sender, k) for k in range(graded_sessions(s))]
    await asyncio.gather(*(worker(c) for c in range(s.conversations)), *graded)
    return {
        "conversations": s.conversations,
        "turns": s.turns,
        "shared_prefix_tokens": s.shared_prefix_tokens,
        "turn_input_tokens": s.turn_input_tokens,
        "output_tokens": s.output_tokens,
        "think_time_s": s.think_time_s,
        "seed": seed,
        **salt_param(),
        **({"graded_sessions": graded_sessions(s)} if s.graded else {}),
    }


def load_trace(path: Path) -> list[tuple[float, int, int]]:
    """(timestamp s, input tokens, output tokens) per JSONL line, sorted by time."""
    rows: list[tuple[float, int, int]] = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise BadInput(f"trace {path}: {e.strerror}") from e
    except UnicodeDecodeError as e:
        raise BadInput(f"trace {path}: not UTF-8 text ({e.reason})") from None
    need = "need timestamp, input_tokens, output_tokens"
    try:
        for i, o in jsonl_values("\n".join(lines)):
            try:
                rows.append(
                    (float(o["timestamp"]), int(o["input_tokens"]), int(o["output_tokens"]))
                )
            except (ValueError, KeyError, TypeError) as e:
                raise BadInput(f"trace {path}:{i}: {need} ({e})") from e
            if rows[-1][1] < 1 or rows[-1][2] < 1:
                raise BadInput(f"trace {path}:{i}: token counts must be at least 1")
    except JsonlLineError as e:
        raise BadInput(f"trace {path}:{e.lineno}: {need} ({e.reason})") from e
    if not rows:
        raise BadInput(f"trace {path}: no requests")
    return sorted(rows)


async def run_trace(
    s: TraceScenario, model: str, tokenize: Tokenize, sender: Sender, warm: Sender, mark: Mark
) -> dict[str, Any]:
    """Replay a trace open-loop: the first `warmup` lines unmeasured, then every line.

    Arrival times are the trace's timestamps (relative to its first measured
    line) times `time_scale`; `duration_s` cuts the replay at that time.
    """
    rows = load_trace(s.path)
    seed = scenario_seed(s.name)
    pool = await token_pool(tokenize, max(2 * max(r[1] for r in rows), 256), seed)
    rng = np.random.default_rng(seed)

    def spec(inp: int, out: int, salt: str) -> RequestSpec:
        ids = window(pool, inp, int(rng.integers(0, len(pool))))
        payload = salted(completion_payload(model, ids, out), s.name, salt)
        return RequestSpec("/completions", payload, requested_output_tokens=out)

    for i, (_, inp, out) in enumerate(rows[: s.warmup]):
        await warm.run(spec(inp, out, f"w{i}"), time.perf_counter_ns())
    measured = rows[s.warmup :] or rows
    start = measured[0][0]
    offsets = [int((ts - start) * s.time_scale * 1e9) for ts, _, _ in measured]
    if s.duration_s:
        keep = [i for i, o in enumerate(offsets) if o < s.duration_s * 1e9]
        measured = [measured[i] for i in keep]
        offsets = [offsets[i] for i in keep]
    specs = [spec(inp, out, str(i)) for i, (_, inp, out) in enumerate(measured)]
    for sp in specs:
        sp.encoded()
    await mark()
    sender.start()

    async def go(sp: RequestSpec, at: int) -> None:
        await sender.run(sp, at)

    await open_loop(specs, offsets, go, None, sender.t0)
    return {
        "path": str(s.path),
        "time_scale": s.time_scale,
        "lines": len(rows),
        "seed": seed,
        **salt_param(),
    }
