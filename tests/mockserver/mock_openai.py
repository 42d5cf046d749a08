"""A deterministic OpenAI-compatible streaming mock server, run as a separate process.

    python tests/mockserver/mock_openai.py --port 0 --ttft-ms 50 --itl-ms 10

prints `PORT <n>` once it listens. Serves /v1/completions and
/v1/chat/completions (streaming with usage), /tokenize, /metrics,
/v1/models and /health. Each content chunk carries the server's own
`mock_recv_ns` (request arrival) and `mock_sent_ns` (just before the chunk was
written), both on CLOCK_MONOTONIC (`time.perf_counter_ns`, which Linux shares
across processes), so a client's timing error is measured against what the
server really did, not against the nominal delays.

Per request, a body key `mock` overrides the defaults:
`{"ttft_ms", "itl_ms", "tokens", "text", "fault"}`; fault is one of
`http500`, `malformed`, `drop`, `stall`, `short`, `empty`, `usage_mismatch`,
`missing_chunks` (one content chunk fewer, usage still claims them all).
`return_token_ids: true` adds `token_ids` to each chunk, as vLLM does.
Every response carries an OpenAI `id` (`cmpl-mock-<n>`). With `--log PATH`
the server appends one JSON line per finished request, `{"n", "recv_ns",
"writes_ns"}` (each content chunk's time just after its write returned), and
the first token's text is `r<n>`, so any client's record (or generated text)
can be matched with what the server did; lines `{"loop_lag": [[t, ns], ...]}`
give how late a 2 ms timer fired on the server's event loop.
With `--replies PATH` (a JSON script keyed by the last user message) a chat request that
does not stream gets the scripted message or HTTP status (tool calls, structured output),
and one that streams it as deltas where the script holds its last user message;
an entry's `free` message is its answer when the request carries no structured-output field
(`response_format`, `structured_outputs`, `guided_json`) the mock honours, and `--ignores
FIELD,...` names fields it does not honour (vLLM >= 0.12 ignores `guided_json` with HTTP 200).
With `--recall N` a streamed chat answers graded agent sessions (qgate/perf/sessions.py) from
the last N user messages it was sent (0: all): a box's code, the running total, else "OK";
an answer that needs an older turn is wrong, as a server that lost the earlier turns.
Prefix caching is simulated on 16-token blocks so /metrics reports
`vllm:prefix_cache_queries_total` and `vllm:prefix_cache_hits_total`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import socket
import subprocess
import sys
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

BLOCK = 16


class State:
    def __init__(
        self,
        ttft_ms: float,
        itl_ms: float,
        log: str | None = None,
        replies: str | None = None,
        recall: int | None = None,
        ignores: tuple[str, ...] = (),
    ) -> None:
        self.recall = recall
        self.served_name = "mock"
        self.ignores = ignores
        self.replies: dict[str, Any] | None = None
        if replies is not None:
            with open(replies) as f:
                self.replies = json.load(f)
        self.ttft_ms = ttft_ms
        self.itl_ms = itl_ms
        self.served = 0
        self.log = open(log, "a", buffering=1) if log else None  # noqa: SIM115
        self.seen_blocks: set[int] = set()
        self.counters = {
            "vllm:prompt_tokens_total": 0.0,
            "vllm:generation_tokens_total": 0.0,
            "vllm:prefix_cache_queries_total": 0.0,
            "vllm:prefix_cache_hits_total": 0.0,
            "vllm:num_preemptions_total": 0.0,
            "vllm:request_success_total": 0.0,
        }

    def cache(self, ids: list[int]) -> int:
        """Record the prompt's full blocks; return how many leading tokens hit the cache."""
        h = 0
        hits = 0
        leading = True
        for b in range(len(ids) // BLOCK):
            h = zlib.crc32(json.dumps(ids[b * BLOCK : (b + 1) * BLOCK]).encode(), h)
            if leading and h in self.seen_blocks:
                hits += BLOCK
            else:
                leading = False
            self.seen_blocks.add(h)
        self.counters["vllm:prefix_cache_queries_total"] += len(ids)
        self.counters["vllm:prefix_cache_hits_total"] += hits
        return hits


def tokenize(text: str) -> list[int]:
    return [zlib.crc32(w.encode()) % 50000 + 100 for w in text.split()]


def prompt_ids(body: dict[str, Any]) -> list[int]:
    if "messages" in body:
        text = " ".join(str(m.get("content", "")) for m in body["messages"])
        return tokenize(text)
    p = body.get("prompt", "")
    if isinstance(p, list) and p and isinstance(p[0], list):
        p = p[0]
    if isinstance(p, list):
        return [int(x) for x in p]
    return tokenize(str(p))


def session_answer(messages: list[dict[str, Any]], window: int) -> str:
    """A graded session turn answered from the last `window` user messages (0: all)."""
    users = [str(m.get("content", "")) for m in messages if m.get("role") == "user"]
    seen = users[-window:] if window else users
    ask = seen[-1]
    box = re.search(r"What is the code for box (\d+)\?", ask)
    if box is not None:
        for said in seen[:-1]:
            found = re.search(rf"The code for box {box.group(1)} is ([A-Z]{{2}}-\d{{4}})", said)
            if found is not None:
                return found.group(1)
        return "I do not know"
    if "running total" in ask and "?" in ask:
        adds = [re.search(r"(?:total at|Add) (\d+)", said) for said in seen[:-1]]
        return str(sum(int(a.group(1)) for a in adds if a is not None))
    return "OK"


SCHEMA_FIELDS = ("response_format", "structured_outputs", "guided_json")


def scripted(body: dict[str, Any], replies: dict[str, Any], ignores: tuple[str, ...] = ()) -> Any:
    """A chat answer from the script (`--replies`): keyed by the last user message, a
    `message` (content and/or tool_calls, with an optional `finish_reason`) or an HTTP
    `status`; like vLLM, a `tool_choice` without `tools` is refused with 400. An entry's
    `free` message answers a request without a schema field the mock honours. A streamed
    request gets the same answer as deltas: the role, the content in two pieces, each tool
    call's name then its arguments in two fragments, the finish reason, the usage."""
    from aiohttp import web

    if body.get("tool_choice") not in (None, "none") and not body.get("tools"):
        error = {"message": "When using `tool_choice`, `tools` must be set.", "code": 400}
        return web.json_response({"error": error}, status=400)
    user = [m.get("content") for m in body.get("messages", []) if m.get("role") == "user"]
    reply = replies.get(user[-1] if user else "", {"message": {"content": ""}})
    if "status" in reply:
        return web.json_response({"error": {"message": "scripted"}}, status=reply["status"])
    honoured = any(body.get(f) is not None for f in SCHEMA_FIELDS if f not in ignores)
    said = reply["message"] if honoured or "free" not in reply else reply["free"]
    message = {"role": "assistant", "content": None, "tool_calls": [], **said}
    finish = reply.get("finish_reason", "tool_calls" if message["tool_calls"] else "stop")
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    if body.get("stream"):
        return web.Response(
            body=_as_deltas(message, finish, usage), content_type="text/event-stream"
        )
    choice = {"index": 0, "message": message, "finish_reason": finish}
    return web.json_response({"id": "chatcmpl-mock", "choices": [choice], "usage": usage})


def _as_deltas(message: dict[str, Any], finish: str, usage: dict[str, Any]) -> bytes:
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
    content = message.get("content") or ""
    half = len(content) // 2
    deltas += [{"content": piece} for piece in (content[:half], content[half:]) if piece]
    for index, call in enumerate(message.get("tool_calls") or []):
        function = call.get("function") or {}
        args = str(function.get("arguments") or "")
        head = {"index": index, "id": f"call-{index}", "type": "function"}
        deltas.append({"tool_calls": [{**head, "function": {"name": function.get("name")}}]})
        for piece in (args[: len(args) // 2], args[len(args) // 2 :]):
            deltas.append({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    events = [{"index": 0, "delta": d, "finish_reason": None} for d in deltas]
    events.append({"index": 0, "delta": {}, "finish_reason": finish})
    chunks = [{"id": "chatcmpl-mock", "choices": [e]} for e in events]
    chunks.append({"id": "chatcmpl-mock", "choices": [], "usage": usage})
    return b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + (
        b"data: [DONE]\n\n"
    )


def make_app(state: State) -> Any:
    from aiohttp import web

    async def health(_: web.Request) -> web.Response:
        return web.Response(text="")

    async def models(_: web.Request) -> web.Response:
        model = {"id": state.served_name, "object": "model", "root": state.served_name}
        return web.json_response({"object": "list", "data": [model]})

    async def tokenize_h(req: web.Request) -> web.Response:
        body = await req.json()
        ids = tokenize(str(body.get("prompt", "")))
        return web.json_response({"tokens": ids, "count": len(ids), "max_model_len": 1 << 20})

    async def metrics(_: web.Request) -> web.Response:
        lines = []
        for k, v in state.counters.items():
            lines += [f"# HELP {k} mock", f"# TYPE {k} counter", f'{k}{{model_name="mock"}} {v}']
        return web.Response(text="\n".join(lines) + "\n", content_type="text/plain")

    async def complete(req: web.Request) -> web.StreamResponse:
        recv = time.perf_counter_ns()
        body = await req.json()
        chat = req.path.endswith("/chat/completions")
        m = body.get("mock") or {}
        fault = m.get("fault")
        if fault == "http500":
            return web.json_response({"error": {"message": "injected"}}, status=500)
        if chat and state.replies is not None:
            user = [m.get("content") for m in body.get("messages", []) if m.get("role") == "user"]
            if not body.get("stream") or (user and user[-1] in state.replies):
                return scripted(body, state.replies, state.ignores)
        ids = prompt_ids(body)
        ttft = float(m.get("ttft_ms", state.ttft_ms)) * 1e6
        itl = float(m.get("itl_ms", state.itl_ms)) * 1e6
        words = str(m["text"]).split() if "text" in m else None
        if chat and state.recall is not None and body.get("messages"):
            words = session_answer(body["messages"], state.recall).split()
        n = int(m.get("tokens", len(words) if words else body.get("max_tokens") or 16))
        if chat and state.recall is not None and words:
            n = len(words)
        sent_n = {"short": max(n - 1, 0), "missing_chunks": max(n - 1, 0), "empty": 0}.get(
            fault or "", n
        )
        cached = state.cache(ids)
        state.counters["vllm:prompt_tokens_total"] += len(ids)
        number = state.served
        state.served += 1
        rid = f"cmpl-mock-{number}"
        writes: list[int] = []
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(req)
        start = recv + ttft
        if chat:  # like vLLM, a first chunk that only announces the role
            role = {
                "id": rid,
                "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}],
            }
            await resp.write(b"data: " + json.dumps(role).encode() + b"\n\n")
        for i in range(sent_n):
            delay = (start + i * itl - time.perf_counter_ns()) / 1e9
            if delay > 0:
                await asyncio.sleep(delay)
            word = words[i] if words and i < len(words) else f"w{i}"
            if i == 0 and state.log is not None:
                word = f"r{number}"
            text = word if i == 0 else " " + word
            choice: dict[str, Any] = {"index": 0, "finish_reason": None}
            if chat:
                choice["delta"] = {"content": text}
            else:
                choice["text"] = text
            if body.get("return_token_ids"):
                choice["token_ids"] = [1000 + i]
            if i == sent_n - 1:
                choice["finish_reason"] = "length"
            t = time.perf_counter_ns()
            chunk = {"id": rid, "choices": [choice], "mock_recv_ns": recv, "mock_sent_ns": t}
            await resp.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
            writes.append(time.perf_counter_ns())
            if i == 1 and fault == "malformed":
                await resp.write(b"data: {not json\n\n")
            if i == 1 and fault == "drop":
                assert req.transport is not None
                req.transport.close()
                return resp
            if i == 0 and fault == "stall":
                await asyncio.sleep(3600)
        state.counters["vllm:generation_tokens_total"] += sent_n
        state.counters["vllm:request_success_total"] += 1
        reported = {"usage_mismatch": sent_n + 3, "missing_chunks": n}.get(fault or "", sent_n)
        usage = {
            "prompt_tokens": len(ids),
            "completion_tokens": reported,
            "total_tokens": len(ids) + reported,
            "prompt_tokens_details": {"cached_tokens": cached},
        }
        last = {"id": rid, "choices": [], "usage": usage}
        await resp.write(b"data: " + json.dumps(last).encode() + b"\n\n")
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        if state.log is not None:
            line = {"n": number, "recv_ns": recv, "writes_ns": writes}
            state.log.write(json.dumps(line) + "\n")
        return resp

    app = web.Application()
    app.router.add_get("/health", health)
    app.router.add_get("/v1/models", models)
    app.router.add_post("/tokenize", tokenize_h)
    app.router.add_get("/metrics", metrics)
    app.router.add_post("/v1/completions", complete)
    app.router.add_post("/v1/chat/completions", complete)
    return app


async def serve(host: str, port: int, state: State) -> None:
    from aiohttp import web

    runner = web.AppRunner(make_app(state), access_log=None)
    await runner.setup()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(4096)
    site = web.SockSite(runner, sock, backlog=4096)
    await site.start()
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    if state.log is not None:
        await sample_loop_lag(state.log)
    await asyncio.Event().wait()


async def sample_loop_lag(log: Any, period_s: float = 0.002) -> None:
    """Log how late a 2 ms timer fires: the server's own event-loop delay, which a newly
    arrived request also waits (so a client's measured delivery time can be split)."""
    samples: list[list[int]] = []
    while True:
        t = time.perf_counter_ns()
        await asyncio.sleep(period_s)
        samples.append([t, time.perf_counter_ns() - t - int(period_s * 1e9)])
        if len(samples) >= 250:
            log.write(json.dumps({"loop_lag": samples}) + "\n")
            samples = []


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--ttft-ms", type=float, default=20.0)
    ap.add_argument("--itl-ms", type=float, default=5.0)
    ap.add_argument("--log", default=None, help="append one JSON line per request here")
    ap.add_argument("--replies", default=None, help="JSON script of non-streamed chat answers")
    ap.add_argument("--recall", type=int, default=None, help="answer graded sessions (see doc)")
    ap.add_argument("--served-name", default="mock", help="the model name /v1/models lists")
    ap.add_argument("--ignores", default="", help="structured-output fields not honoured (a,b)")
    a = ap.parse_args()
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    ignores = tuple(f for f in a.ignores.split(",") if f)
    state = State(a.ttft_ms, a.itl_ms, a.log, a.replies, a.recall, ignores)
    state.served_name = a.served_name
    try:
        asyncio.run(serve(a.host, a.port, state))
    finally:
        if state.log is not None:
            state.log.close()


@contextmanager
def running(
    ttft_ms: float = 20.0,
    itl_ms: float = 5.0,
    cpu: int | None = None,
    log: str | None = None,
    replies: str | None = None,
    recall: int | None = None,
    ignores: tuple[str, ...] = (),
) -> Iterator[str]:
    """Start the mock in its own process; yield its base URL (ending in /v1); stop it."""
    cmd = [sys.executable, __file__, "--ttft-ms", str(ttft_ms), "--itl-ms", str(itl_ms)]
    if log is not None:
        cmd += ["--log", log]
    if replies is not None:
        cmd += ["--replies", replies]
    if recall is not None:
        cmd += ["--recall", str(recall)]
    if ignores:
        cmd += ["--ignores", ",".join(ignores)]
    if cpu is not None:
        cmd = ["taskset", "-c", str(cpu), *cmd]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.startswith("PORT "):
            raise RuntimeError(f"mock server did not start: {line!r}")
        yield f"http://127.0.0.1:{int(line.split()[1])}/v1"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


if __name__ == "__main__":
    main()
