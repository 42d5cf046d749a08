from __future__ import annotations

from qgate.core.sse import assembled_chat, parse_sse


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


def _chat(delta: str, finish: str = "null") -> bytes:
    return ev(f'{{"choices":[{{"index":0,"delta":{delta},"finish_reason":{finish}}}]}}')


def test_a_chat_stream_is_put_back_together_as_the_unstreamed_answer() -> None:
    """Content joined; each tool call's id, name and argument fragments joined by index,
    two calls interleaved as a parallel-calls stream sends them; last finish; usage."""
    body = (
        _chat('{"role":"assistant","content":""}')
        + _chat('{"content":"Let me "}')
        + _chat('{"content":"check."}')
        + _chat('{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"f"}}]}')
        + _chat('{"tool_calls":[{"index":1,"id":"b","function":{"name":"g","arguments":"{"}}]}')
        + _chat('{"tool_calls":[{"index":0,"function":{"arguments":"{\\"x\\": "}}]}')
        + _chat('{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]}')
        + _chat('{"tool_calls":[{"index":1,"function":{"arguments":"}"}}]}')
        + _chat("{}", '"tool_calls"')
        + ev(USAGE)
        + b"data: [DONE]\n\n"
    )
    answer = assembled_chat(parse_sse([(1, body)], keep_events=True))
    choice = answer["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] == "Let me check."
    assert choice["message"]["tool_calls"] == [
        {"id": "a", "type": "function", "function": {"name": "f", "arguments": '{"x": 1}'}},
        {"id": "b", "type": "function", "function": {"name": "g", "arguments": "{}"}},
    ]
    assert answer["usage"]["completion_tokens"] == 2


def test_a_stream_that_said_nothing_has_no_content_and_no_calls() -> None:
    body = _chat('{"role":"assistant","content":""}') + _chat("{}", '"stop"') + b"data: [DONE]\n\n"
    message = assembled_chat(parse_sse([(1, body)], keep_events=True))["choices"][0]["message"]
    assert message == {"role": "assistant", "content": None}
