"""Parsing a recorded SSE stream after the fact.

The client only stores (arrival time, raw bytes) while a response streams in,
so no parsing can lag the event loop; this module turns those chunks into
token events afterwards. An event's time is the arrival of the network chunk
in which it ended (vLLM's `bench serve` timestamps the same way: events that
arrive together share a time).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass
class ParsedStream:
    """What a completions/chat stream said, with content-event times."""

    token_times_ns: list[int] = field(default_factory=list)
    text: str = ""
    token_ids: list[int] = field(default_factory=list)
    chunk_tokens: list[int] = field(default_factory=list)
    ids_reported: bool = False
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_prompt_tokens: int | None = None
    finish_reason: str | None = None
    done: bool = False
    error: str | None = None
    response_id: str | None = None
    events: list[tuple[int, dict[str, Any]]] = field(default_factory=list)


def _content(choice: dict[str, Any]) -> str:
    if "text" in choice:
        return str(choice.get("text") or "")
    delta = choice.get("delta") or {}
    return str(delta.get("content") or delta.get("reasoning_content") or "")


def parse_sse(chunks: list[tuple[int, bytes]], keep_events: bool = False) -> ParsedStream:
    """Parse SSE chunks recorded as (perf_counter_ns, bytes); malformed data sets `error`."""
    out = ParsedStream()
    buf = b""
    for t, data in chunks:
        buf += data
        # SSE events end with a blank line; servers use \n\n (vLLM) or \r\n\r\n.
        buf = buf.replace(b"\r\n", b"\n")
        while b"\n\n" in buf:
            raw, buf = buf.split(b"\n\n", 1)
            if not _event(out, t, raw, keep_events):
                return out
    if buf.strip() and out.error is None:
        out.error = "stream ended inside an SSE event"
    elif not out.done and out.error is None:
        out.error = "stream ended without [DONE]"
    return out


def _event(out: ParsedStream, t: int, raw: bytes, keep: bool) -> bool:
    """Apply one SSE event; False stops parsing (error or [DONE] followed by junk)."""
    lines = [ln for ln in raw.split(b"\n") if ln and not ln.startswith(b":")]
    payload = b"\n".join(ln[5:].lstrip() for ln in lines if ln.startswith(b"data:"))
    if not payload:
        return True
    if payload == b"[DONE]":
        out.done = True
        return True
    try:
        obj = json.loads(payload)
    except ValueError:
        out.error = "malformed SSE data: " + payload[:60].decode("utf-8", "replace")
        return False
    if not isinstance(obj, dict):
        out.error = "malformed SSE data: not an object"
        return False
    if keep:
        out.events.append((t, obj))
    if out.response_id is None and isinstance(obj.get("id"), str):
        out.response_id = obj["id"][:200]
    if "error" in obj and not obj.get("choices"):
        err = obj["error"]
        msg = err.get("message") if isinstance(err, dict) else err
        out.error = f"server error in stream: {str(msg)[:120]}"
        return False
    choices = obj.get("choices") or []
    if choices:
        c = choices[0]
        ids = c.get("token_ids")
        text = _content(c)
        # A completions chunk is one generation step even with empty text (a special
        # token, half a UTF-8 character), as vLLM counts it; a chat chunk that only
        # announces the role or the finish reason carries no token.
        is_step = "text" in c or bool(text) or bool(ids)
        if is_step:
            out.token_times_ns.append(t)
            out.text += text
            if isinstance(ids, list):
                out.ids_reported = True
                out.token_ids.extend(int(i) for i in ids)
                out.chunk_tokens.append(len(ids))
            else:
                out.chunk_tokens.append(1)
        if c.get("finish_reason"):
            out.finish_reason = str(c["finish_reason"])
    usage = obj.get("usage")
    if isinstance(usage, dict):
        out.prompt_tokens = usage.get("prompt_tokens", out.prompt_tokens)
        out.completion_tokens = usage.get("completion_tokens", out.completion_tokens)
        details = usage.get("prompt_tokens_details")
        if isinstance(details, dict) and details.get("cached_tokens") is not None:
            out.cached_prompt_tokens = int(details["cached_tokens"])
    return True


def assembled_chat(parsed: ParsedStream) -> dict[str, Any]:
    """A chat stream's events (parsed with `keep_events`) put back together as the answer the
    same request gets unstreamed: the content joined, each tool call's id, name and argument
    fragments joined by their `index` (as the OpenAI SDK accumulates them), the last finish
    reason and the usage. A stream that said nothing gives a message with no content."""
    content: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    finish: str | None = None
    usage: dict[str, Any] = {}
    for _, obj in parsed.events:
        if isinstance(obj.get("usage"), dict):
            usage = obj["usage"]
        for choice in obj.get("choices") or []:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta")
            delta = delta if isinstance(delta, dict) else {}
            if isinstance(delta.get("content"), str):
                content.append(delta["content"])
            for part in delta.get("tool_calls") or []:
                if isinstance(part, dict):
                    _add_fragment(calls, part)
            if choice.get("finish_reason"):
                finish = str(choice["finish_reason"])
    message: dict[str, Any] = {"role": "assistant", "content": "".join(content) or None}
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    return {"choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": usage}


def _add_fragment(calls: dict[int, dict[str, Any]], part: dict[str, Any]) -> None:
    index = part.get("index")
    key = index if isinstance(index, int) else len(calls)
    call = calls.setdefault(key, {"id": None, "type": "function", "function": {}})
    if isinstance(part.get("id"), str):
        call["id"] = part["id"]
    function = part.get("function")
    function = function if isinstance(function, dict) else {}
    for field_name in ("name", "arguments"):
        fragment = function.get(field_name)
        if isinstance(fragment, str):
            call["function"][field_name] = call["function"].get(field_name, "") + fragment
