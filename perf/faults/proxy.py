"""A fault-injecting reverse proxy in front of a real OpenAI-compatible server.

It forwards every path unchanged (the API, /metrics, /tokenize, /reset_prefix_cache, ...)
and corrupts the answers of completions and chat completions that match a rule, the way
the field's silent failures did: the server still answers HTTP 200 with the same number
of tokens, only the text is wrong. Each rule names a mechanism from a public bug report:

    load:N      more than N requests in flight when it arrives   (vLLM #47282)
    idle:T      the server idle for at least T seconds before it (vLLM #52150)
    length:L    a prompt of more than L tokens                   (vLLM #39303)
    life:P      this whole life broken, with probability P       (vLLM PR #46386)
    life-n:K    this whole life broken when it is the K-th its launcher started (1-based,
                counted by launch.py's --lives-file): the same fault on a chosen life, so a
                run's first life (its quality stage) can be sound and a later one broken
    drop:FIELD  the request field FIELD removed before it is served (ROCm/aiter #5049); the
                share is drawn over the requests that carry FIELD, not over every request
    cached:N    an answer whose prompt had more than N tokens served from the prefix cache
                (usage.prompt_tokens_details.cached_tokens; the server needs
                --enable-prompt-tokens-details): a text stand-in for wrong reused or restored
                KV blocks (vLLM #45704, LMCache #4463), non-streamed answers only
    turns:N     a chat carrying more than N user turns (an agent session's later turns: a
                prefix cache serving the earlier turns wrongly, vLLM #43559 / #53912)
    set:FIELD=V  the request field FIELD set to the JSON value V before it is served, whatever
                the client asked (`temperature=0`: a silent fall-back to greedy, sgl-project/
                sglang PR #32922; vllm-project/vllm #15241)
    loop:N      an answer's generated text past its first N characters turned into a "!" loop
                of the same length (a chunked-prefill size raising a "!" loop; sglang #33397,
                vLLM #55357: long answers only), non-streamed answers only
    stream:FIELD  a streamed answer loses FIELD from its deltas (`tool_calls`: the calls of a
                streamed answer vanish and it finishes as `stop`, while the same request
                unstreamed is whole: Kimi K3, vLLM #53246)
    scores:N    a scoring answer (asked with prompt_logprobs) has every Nth prompt position's
                two likeliest tokens' logprobs swapped, its text untouched: wrong prompt
                logprobs on some requests while the answers stay right (MTP speculation,
                vLLM #53488, PR #38711), non-streamed answers only

`--share S` is the strength knob: a matching answer is corrupted (or a request carrying a
dropped field loses it) with probability S, drawn from a seeded stream so a run can be repeated.
Corruption rotates digits (d -> d+5 mod 10) and letters (ROT13) character by character, so
lengths, token counts and the stream's shape are unchanged; exact-answer and recall items
fail, the logprobs the server returned are passed through as they were (a text fault, not
a distribution fault).

Every request is logged as one JSON line (`--log`): its number, path, in-flight count,
idle seconds before it, prompt tokens where a length rule asked for them, whether and
why it was corrupted, the fields a drop rule names that it carried (`carried`) and took
out (`dropped`), and the digests of its prompt (`prompt_sha256`: the last user message or
the prompt text; `messages_sha256`: the messages as canonical JSON), so a benchmark can
say where each corrupted answer fell: on which graded item, if any.

Written by hand on aiohttp (already a vLLM dependency): no maintained proxy library
injects faults into an SSE stream by request-level conditions.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

GENERATE_PATHS = ("/v1/completions", "/v1/chat/completions")
KINDS = (
    "load",
    "idle",
    "length",
    "life",
    "life-n",
    "drop",
    "cached",
    "turns",
    "stream",
    "set",
    "loop",
    "scores",
)
HOP_HEADERS = frozenset(
    {"connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding", "host"}
)

_DIGITS = str.maketrans("0123456789", "5678901234")
_LETTERS = str.maketrans(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
    "nopqrstuvwxyzabcdefghijklmNOPQRSTUVWXYZABCDEFGHIJKLM",
)


def corrupt(text: str) -> str:
    """The same text with every digit and letter replaced, character for character."""
    return text.translate(_DIGITS).translate(_LETTERS)


@dataclass(frozen=True)
class Rule:
    """One fault mechanism and its threshold."""

    kind: str
    value: str

    @classmethod
    def parse(cls, spec: str) -> Rule:
        kind, sep, value = spec.partition(":")
        if kind not in KINDS or not sep or not value:
            raise ValueError(f"fault {spec!r}: expected KIND:VALUE with KIND one of {KINDS}")
        if kind in ("load", "length", "cached", "turns", "loop", "scores", "life-n"):
            if not value.isdigit() or (kind in ("scores", "life-n") and int(value) < 1):
                raise ValueError(f"fault {spec!r}: {kind} takes a whole number")
        elif kind == "set":
            name, eq, literal = value.partition("=")
            try:
                json.loads(literal)
            except ValueError:
                eq = ""
            if not name or not eq:
                raise ValueError(f"fault {spec!r}: set takes FIELD=JSON (temperature=0)")
        elif kind in ("idle", "life"):
            number = float(value)
            if not (number >= 0 and (kind == "idle" or number <= 1)):
                raise ValueError(f"fault {spec!r}: out of range")
        return cls(kind, value)


@dataclass
class Faults:
    """The proxy's state: rules, the seeded draw, in-flight count and idle clock."""

    rules: Sequence[Rule]
    share: float = 1.0
    seed: int = 0
    in_flight: int = 0
    served: int = 0
    last_busy: float = field(default_factory=time.monotonic)
    life_broken: bool = False
    life_key: str = ""
    """Names the life whose draw this is: lives drawn with the same seed and key draw the same
    number, so two proxies (or two strengths) under one seed need their own keys to be
    independent lives (the detection bench gives each candidate its name)."""
    carried: dict[str, int] = field(default_factory=dict)
    """Per field a drop rule names, the requests seen so far that carried it."""
    life_number: int | None = None
    """This life's number among those its launcher started (1-based; None: not counted), which
    a `life-n:K` rule breaks when it is K."""

    def __post_init__(self) -> None:
        if not 0 <= self.share <= 1:
            raise ValueError(f"share {self.share}: must be within [0, 1]")
        life = [float(r.value) for r in self.rules if r.kind == "life"]
        key = f"{self.seed}:life:{self.life_key}" if self.life_key else f"{self.seed}:life"
        self.life_broken = bool(life) and random.Random(key).random() < life[0]
        chosen = {int(r.value) for r in self.rules if r.kind == "life-n"}
        if chosen and self.life_number is None:
            raise ValueError("a life-n rule needs the life's number (launch.py --lives-file)")
        self.life_broken |= self.life_number in chosen

    def needs_length(self) -> bool:
        return any(r.kind == "length" for r in self.rules)

    def drop_names(self) -> list[str]:
        """The fields the drop rules name."""
        return [r.value for r in self.rules if r.kind == "drop"]

    def drop_from(self, body: dict[str, Any]) -> list[str]:
        """Take out of `body` the fields a drop rule names that it carries, each with
        probability `share`; the fields taken out.

        The draw is over the requests that carry the field (the k-th of them draws key k),
        not over every request: a share S is S of the requests the rule can act on, however
        many others (math, tool calls) the server is asked between them. Drawn by request
        number instead, a field that 12 of 112 requests carry lost it on none of them in
        the detection bench (issue 53: schema-25 passed with nothing dropped)."""
        gone = []
        for name in self.drop_names():
            if name not in body:
                continue
            k = self.carried.get(name, 0)
            self.carried[name] = k + 1
            if random.Random(f"{self.seed}:drop:{name}:{k}").random() < self.share:
                body.pop(name)
                gone.append(name)
        return gone

    def overrides(self, number: int = 0) -> dict[str, Any]:
        """The fields request `number` gets set to (drawn with probability `share`)."""
        sets = [r.value.partition("=") for r in self.rules if r.kind == "set"]
        if not sets or random.Random(f"{self.seed}:set:{number}").random() >= self.share:
            return {}
        return {name: json.loads(literal) for name, _, literal in sets}

    def stream_drops(self, number: int = 0) -> list[str]:
        """The delta fields streamed answer `number` loses (drawn with probability `share`)."""
        names = [r.value for r in self.rules if r.kind == "stream"]
        if not names or random.Random(f"{self.seed}:stream:{number}").random() >= self.share:
            return []
        return names

    def loop_after(self) -> int | None:
        """The characters after which an answer loops, if a rule names them."""
        return next((int(r.value) for r in self.rules if r.kind == "loop"), None)

    def scores_every(self) -> int | None:
        """Every how many prompt positions a scoring answer is bent, if a rule names it."""
        return next((int(r.value) for r in self.rules if r.kind == "scores"), None)

    def cached_limit(self) -> int | None:
        """The cached-token count above which an answer is corrupted, if a rule names one."""
        return next((int(r.value) for r in self.rules if r.kind == "cached"), None)

    def decide_cached(self, number: int, cached_tokens: int) -> str:
        """Why request `number`, answered from `cached_tokens` reused tokens, is corrupted."""
        limit = self.cached_limit()
        if limit is None or cached_tokens <= limit:
            return ""
        if random.Random(f"{self.seed}:{number}").random() >= self.share:
            return ""
        return f"cached {cached_tokens}>{limit}"

    def decide(
        self,
        number: int,
        in_flight: int,
        idle_s: float,
        prompt_tokens: int | None,
        user_turns: int = 0,
    ) -> str:
        """Why request `number` is corrupted ('' when it is not); `user_turns`: the user
        messages of a chat request (0 for completions)."""
        reasons = []
        for rule in self.rules:
            if rule.kind == "load" and in_flight > int(rule.value):
                reasons.append(f"load {in_flight}>{rule.value}")
            elif rule.kind == "idle" and idle_s >= float(rule.value):
                reasons.append(f"idle {idle_s:.1f}s>={rule.value}s")
            elif rule.kind == "length" and (prompt_tokens or 0) > int(rule.value):
                reasons.append(f"length {prompt_tokens}>{rule.value}")
            elif rule.kind == "turns" and user_turns > int(rule.value):
                reasons.append(f"turns {user_turns}>{rule.value}")
            elif (
                rule.kind in ("life", "life-n")
                and self.life_broken
                and "broken life" not in reasons
            ):
                reasons.append("broken life")
        if not reasons or random.Random(f"{self.seed}:{number}").random() >= self.share:
            return ""
        return "; ".join(reasons)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def prompt_digests(body: dict[str, Any]) -> dict[str, str]:
    """The digests a graded item's record can be found by (qgate's `prompt_sha256`):
    `prompt_sha256`, of the last user message's text (a chat) or the prompt text (a
    completion); `messages_sha256`, of the messages as canonical JSON (the tool-call suite's
    digest). Empty for a prompt of token ids or a batch."""
    out: dict[str, str] = {}
    messages = body.get("messages")
    if isinstance(messages, list):
        out["messages_sha256"] = _sha256(json.dumps(messages, sort_keys=True))
        users = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"]
        if users and isinstance(users[-1].get("content"), str):
            out["prompt_sha256"] = _sha256(users[-1]["content"])
    elif isinstance(body.get("prompt"), str):
        out["prompt_sha256"] = _sha256(body["prompt"])
    return out


def corrupt_payload(payload: dict[str, Any]) -> dict[str, Any]:
    """A completion (or one stream chunk) with its generated text corrupted."""
    for choice in payload.get("choices") or []:
        if isinstance(choice.get("text"), str):
            choice["text"] = corrupt(choice["text"])
        for key in ("delta", "message"):
            part = choice.get(key)
            if isinstance(part, dict) and isinstance(part.get("content"), str):
                part["content"] = corrupt(part["content"])
    return payload


def _edit_sse(line: bytes, edit: Callable[[dict[str, Any]], dict[str, Any]]) -> bytes:
    """One line of a server-sent event stream with its data payload passed through `edit`
    (comments, blank lines, [DONE] and unparsable data unchanged)."""
    if not line.startswith(b"data: ") or line.strip() == b"data: [DONE]":
        return line
    try:
        payload = json.loads(line[6:])
    except ValueError:
        return line
    end = line[len(line.rstrip(b"\r\n")) :]
    return b"data: " + json.dumps(edit(payload)).encode() + end


def corrupt_sse_line(line: bytes) -> bytes:
    """One line of a server-sent event stream, its data's text corrupted."""
    return _edit_sse(line, corrupt_payload)


def loop_payload(payload: dict[str, Any], after: int) -> bool:
    """Turn each choice's text past `after` characters into "!"s (the same length); whether
    any text was that long."""
    looped = False
    for choice in payload.get("choices") or []:
        part = choice.get("message") if isinstance(choice.get("message"), dict) else choice
        key = "content" if "content" in part else "text"
        text = part.get(key)
        if isinstance(text, str) and len(text) > after:
            part[key] = text[:after] + "!" * (len(text) - after)
            looped = True
    return looped


def bend_scores(payload: dict[str, Any], every: int) -> int:
    """Swap the logprobs of the two likeliest tokens at every `every`-th prompt position of
    each choice's prompt_logprobs (a valid distribution, the wrong one); the positions bent."""
    bent = 0
    for choice in payload.get("choices") or []:
        positions = choice.get("prompt_logprobs")
        if not isinstance(positions, list):
            continue
        for i, position in enumerate(positions):
            if i % every or not isinstance(position, dict) or len(position) < 2:
                continue
            entries = [v for v in position.values() if isinstance(v, dict) and "logprob" in v]
            if len(entries) < 2:
                continue
            first, second = sorted(entries, key=lambda v: -float(v["logprob"]))[:2]
            first["logprob"], second["logprob"] = second["logprob"], first["logprob"]
            bent += 1
    return bent


def drop_sse_fields(line: bytes, names: Sequence[str]) -> bytes:
    """One line of a server-sent event stream with `names` taken out of its deltas; a choice
    that finished on the tool calls taken out finishes as `stop`, as a plain answer does."""

    def drop(payload: dict[str, Any]) -> dict[str, Any]:
        for choice in payload.get("choices") or []:
            delta = choice.get("delta")
            if isinstance(delta, dict):
                for name in names:
                    delta.pop(name, None)
            if choice.get("finish_reason") == "tool_calls" and "tool_calls" in names:
                choice["finish_reason"] = "stop"
        return payload

    return _edit_sse(line, drop)


def make_app(upstream: str, faults: Faults, log: Any = None) -> Any:
    """The aiohttp application forwarding to `upstream` (http://host:port)."""
    import aiohttp
    from aiohttp import web

    session: dict[str, aiohttp.ClientSession] = {}

    async def on_startup(_: web.Application) -> None:
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=30)
        session["s"] = aiohttp.ClientSession(timeout=timeout, auto_decompress=False)

    async def on_cleanup(_: web.Application) -> None:
        await session["s"].close()

    async def prompt_tokens(body: dict[str, Any]) -> int | None:
        ask: dict[str, Any] = {"model": body.get("model")}
        if "messages" in body:
            ask["messages"] = body["messages"]
        else:
            ask["prompt"] = body.get("prompt")
        if not isinstance(ask.get("prompt", ""), str):
            return None  # token ids or a batch: not a shape /tokenize takes
        async with session["s"].post(upstream + "/tokenize", json=ask) as r:
            return int((await r.json()).get("count", 0)) if r.status == 200 else None

    async def forward(req: web.Request) -> web.StreamResponse:
        raw = await req.read()
        headers = {k: v for k, v in req.headers.items() if k.lower() not in HOP_HEADERS}
        generate = req.method == "POST" and req.path in GENERATE_PATHS
        reason, line = "", {}
        body: dict[str, Any] = {}
        number = -1
        if generate:
            body = json.loads(raw or b"{}")
            number, faults.served = faults.served, faults.served + 1
            carried = [name for name in faults.drop_names() if name in body]
            gone = faults.drop_from(body)
            forced = faults.overrides(number)
            body |= forced
            raw = json.dumps(body).encode()
            now = time.monotonic()
            idle = now - faults.last_busy if faults.in_flight == 0 else 0.0
            faults.in_flight += 1
            tokens = await prompt_tokens(body) if faults.needs_length() else None
            messages = body.get("messages")
            users = (
                sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "user")
                if isinstance(messages, list)
                else 0
            )
            reason = faults.decide(number, faults.in_flight, idle, tokens, users)
            line = {"n": number, "path": req.path, "in_flight": faults.in_flight}
            line |= {"idle_s": round(idle, 3), "prompt_tokens": tokens, "corrupted": reason}
            line |= prompt_digests(body)
            line |= {"carried": carried} if carried else {}
            line |= {"dropped": gone} if gone else {}
            line |= {"set": forced} if forced else {}
        try:
            url = upstream + req.path_qs
            async with session["s"].request(req.method, url, data=raw, headers=headers) as up:
                out_headers = {k: v for k, v in up.headers.items() if k.lower() not in HOP_HEADERS}
                streamed = up.headers.get("Content-Type", "").startswith("text/event-stream")
                if not reason and generate and faults.cached_limit() is not None and not streamed:
                    data = await up.read()
                    with contextlib.suppress(ValueError, TypeError, AttributeError):
                        usage = json.loads(data).get("usage") or {}
                        details = usage.get("prompt_tokens_details") or {}
                        cached = int(details.get("cached_tokens") or 0)
                        reason = faults.decide_cached(number, cached)
                        line |= {"cached_tokens": cached, "corrupted": reason}
                    if reason:
                        data = json.dumps(corrupt_payload(json.loads(data))).encode()
                    resp = web.Response(status=up.status, body=data, headers=out_headers)
                    await resp.prepare(req)
                elif not reason and generate and not streamed and faults.loop_after() is not None:
                    data = await up.read()
                    with contextlib.suppress(ValueError, TypeError, AttributeError):
                        payload = json.loads(data)
                        drawn = random.Random(f"{faults.seed}:loop:{number}").random()
                        if drawn < faults.share and loop_payload(payload, faults.loop_after() or 0):
                            line |= {"corrupted": f"loop after {faults.loop_after()} chars"}
                            data = json.dumps(payload).encode()
                    resp = web.Response(status=up.status, body=data, headers=out_headers)
                    await resp.prepare(req)
                elif (
                    not reason
                    and generate
                    and not streamed
                    and faults.scores_every() is not None
                    and body.get("prompt_logprobs")
                ):
                    data = await up.read()
                    with contextlib.suppress(ValueError, TypeError, AttributeError):
                        payload = json.loads(data)
                        drawn = random.Random(f"{faults.seed}:scores:{number}").random()
                        every = faults.scores_every() or 1
                        if drawn < faults.share and (bent := bend_scores(payload, every)):
                            line |= {"corrupted": f"scores: {bent} prompt positions bent"}
                            data = json.dumps(payload).encode()
                    resp = web.Response(status=up.status, body=data, headers=out_headers)
                    await resp.prepare(req)
                elif not reason and streamed and (gone_in_stream := faults.stream_drops(number)):
                    line |= {"stream_dropped": gone_in_stream}
                    resp = web.StreamResponse(status=up.status, headers=out_headers)
                    await resp.prepare(req)
                    async for sse in up.content:  # line by line
                        await resp.write(drop_sse_fields(sse, gone_in_stream))
                elif not reason:
                    resp = web.StreamResponse(status=up.status, headers=out_headers)
                    await resp.prepare(req)
                    async for chunk in up.content.iter_any():
                        await resp.write(chunk)
                elif streamed:
                    resp = web.StreamResponse(status=up.status, headers=out_headers)
                    await resp.prepare(req)
                    async for sse in up.content:  # line by line
                        await resp.write(corrupt_sse_line(sse))
                else:
                    data = await up.read()
                    with contextlib.suppress(ValueError):
                        data = json.dumps(corrupt_payload(json.loads(data))).encode()
                    resp = web.Response(status=up.status, body=data, headers=out_headers)
                    await resp.prepare(req)
                await resp.write_eof()
                return resp
        finally:
            if generate:
                faults.in_flight -= 1
                faults.last_busy = time.monotonic()
                if log is not None:
                    log.write(json.dumps(line) + "\n")
                    log.flush()

    app = web.Application(client_max_size=1 << 30)
    app.on_startup.append(on_startup)
    app.on_cleanup.append(on_cleanup)
    app.router.add_route("*", "/{tail:.*}", forward)
    return app


async def serve(host: str, port: int, upstream: str, faults: Faults, log: Any = None) -> None:
    """Serve until cancelled."""
    from aiohttp import web

    runner = web.AppRunner(make_app(upstream, faults, log), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()
