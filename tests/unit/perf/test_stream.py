from __future__ import annotations

from qgate.perf.stream import parse_sse


def ev(obj: str) -> bytes:
    return b"data: " + obj.encode() + b"\n\n"


TOK = '{"choices":[{"index":0,"text":"%s","finish_reason":null}]}'
USAGE = (
    '{"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":2,'
    '"prompt_tokens_details":{"cached_tokens":4}}}'
)


def test_events_split_across_reads_take_the_time_they_completed() -> None:
    body = ev(TOK % "a") + ev(TOK % "b") + ev(USAGE) + b"data: [DONE]\n\n"
    cut = len(ev(TOK % "a")) + 5
    p = parse_sse([(100, body[:cut]), (200, body[cut:])])
    assert p.error is None and p.done
    assert p.token_times_ns == [100, 200]
    assert p.text == "ab"
    assert (p.prompt_tokens, p.completion_tokens, p.cached_prompt_tokens) == (7, 2, 4)


def test_chat_deltas_comments_and_crlf() -> None:
    chat = '{"choices":[{"index":0,"delta":{"content":"hi"}}]}'
    body = b": ping\r\n\r\n" + ev(chat).replace(b"\n", b"\r\n") + b"data: [DONE]\n\n"
    p = parse_sse([(5, body)])
    assert p.error is None and p.text == "hi" and p.token_times_ns == [5]


def test_malformed_json_is_an_error() -> None:
    p = parse_sse([(1, ev(TOK % "a") + b"data: {oops\n\n")])
    assert p.error is not None and "malformed" in p.error


def test_missing_done_is_an_error() -> None:
    p = parse_sse([(1, ev(TOK % "a"))])
    assert p.error == "stream ended without [DONE]"


def test_error_event_is_an_error() -> None:
    p = parse_sse([(1, ev('{"error":{"message":"out of memory"}}'))])
    assert p.error is not None and "out of memory" in p.error
