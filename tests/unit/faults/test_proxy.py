"""The fault proxy (perf/faults/proxy.py) in front of the mock server: it passes answers
through unchanged unless a rule matches, and then corrupts the text alone, streamed or not."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers.mock_server import load_by_path

ROOT = Path(__file__).resolve().parents[3]


proxy = load_by_path("proxy", ROOT / "perf" / "faults" / "proxy.py")
launch = load_by_path("fault_launch", ROOT / "perf" / "faults" / "launch.py")
mock = load_by_path("mock_openai", ROOT / "tests" / "mockserver" / "mock_openai.py")


@pytest.fixture(scope="module")
def upstream() -> Iterator[str]:
    with mock.running(ttft_ms=5.0, itl_ms=1.0) as url:
        yield url.removesuffix("/v1")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Proxy:
    """The proxy on its own event loop in a thread; `faults` is its live state."""

    def __init__(self, upstream: str, faults: Any, log: Any = None) -> None:
        self.port = _free_port()
        self.faults = faults
        self.loop = asyncio.new_event_loop()
        self.task: Any = None
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(self.loop)
            self.task = self.loop.create_task(
                proxy.serve("127.0.0.1", self.port, upstream, faults, log)
            )
            self.loop.call_later(0.3, ready.set)
            with contextlib.suppress(asyncio.CancelledError):
                self.loop.run_until_complete(self.task)

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        ready.wait(5)
        self.url = f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.task.cancel)
        self.thread.join(5)


def _proxy(upstream: str, *rules: str, share: float = 1.0, seed: int = 0, log: Any = None) -> Any:
    faults = proxy.Faults([proxy.Rule.parse(r) for r in rules], share=share, seed=seed)
    return Proxy(upstream, faults, log)


def _stream_text(client: httpx.Client, url: str, body: dict[str, Any]) -> str:
    text = []
    with client.stream("POST", url + "/v1/completions", json=body) as r:
        assert r.status_code == 200
        for line in r.iter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                for choice in json.loads(line[6:]).get("choices", []):
                    text.append(choice.get("text", ""))
    return "".join(text)


BODY = {"model": "mock", "prompt": "a b c", "max_tokens": 4, "mock": {"text": "x 12 y7 z"}}


def test_corrupt_keeps_length_and_changes_every_digit_and_letter() -> None:
    out = proxy.corrupt("Answer: 42, abc!")
    assert len(out) == len("Answer: 42, abc!")
    assert out == "Nafjre: 97, nop!"
    assert proxy.corrupt(out) == "Answer: 42, abc!"  # ROT13 and a rotation by 5: an involution


def test_passes_through_when_no_rule_matches(upstream: str) -> None:
    p = _proxy(upstream, "load:100", "length:100000")
    try:
        with httpx.Client(timeout=10) as c:
            assert _stream_text(c, p.url, BODY) == "x 12 y7 z"
            assert c.get(p.url + "/metrics").status_code == 200  # any path is forwarded
    finally:
        p.close()


def test_load_corrupts_only_above_its_threshold(upstream: str, tmp_path: Path) -> None:
    log = (tmp_path / "faults.jsonl").open("a")
    p = _proxy(upstream, "load:2", log=log)
    slow = {**BODY, "mock": {"text": "x 12 y7 z", "ttft_ms": 300}}
    try:
        with httpx.Client(timeout=10) as c:
            assert _stream_text(c, p.url, BODY) == "x 12 y7 z"  # alone: clean

        async def burst() -> list[str]:
            async with httpx.AsyncClient(timeout=10) as ac:

                async def one() -> str:
                    r = await ac.post(p.url + "/v1/completions", json=slow)
                    return "".join(
                        json.loads(line[6:])["choices"][0]["text"]
                        for line in r.text.splitlines()
                        if line.startswith("data: {") and json.loads(line[6:])["choices"]
                    )

                return list(await asyncio.gather(*(one() for _ in range(4))))

        texts = asyncio.run(burst())
    finally:
        p.close()
        log.close()
    assert sorted(texts).count("x 12 y7 z") == 2  # the first two in flight are served clean
    assert texts.count("k 67 l2 m") == 2  # the third and fourth arrive above load 2
    lines = [json.loads(x) for x in (tmp_path / "faults.jsonl").read_text().splitlines()]
    assert [bool(x["corrupted"]) for x in lines].count(True) == 2
    assert max(x["in_flight"] for x in lines) == 4


def test_idle_corrupts_the_first_request_after_a_pause(upstream: str) -> None:
    p = _proxy(upstream, "idle:0.5")
    try:
        with httpx.Client(timeout=10) as c:
            p.faults.last_busy -= 1.0  # as if the server had been idle a second
            first = _stream_text(c, p.url, BODY)
            second = _stream_text(c, p.url, BODY)
    finally:
        p.close()
    assert (first, second) == ("k 67 l2 m", "x 12 y7 z")


def test_length_asks_the_server_for_the_prompt_tokens(upstream: str) -> None:
    p = _proxy(upstream, "length:5")
    try:
        with httpx.Client(timeout=10) as c:
            short = _stream_text(c, p.url, BODY)
            long = _stream_text(c, p.url, {**BODY, "prompt": "a b c d e f g h"})
    finally:
        p.close()
    assert (short, long) == ("x 12 y7 z", "k 67 l2 m")


def test_chat_answers_and_plain_json_are_corrupted_too(upstream: str) -> None:
    body = {**BODY, "messages": [{"role": "user", "content": "hi"}]}
    payload = {"choices": [{"message": {"content": "7 cats"}}, {"text": "9"}]}
    assert proxy.corrupt_payload(payload) == {
        "choices": [{"message": {"content": "2 pngf"}}, {"text": "4"}]
    }
    p = _proxy(upstream, "life:1")
    try:
        with (
            httpx.Client(timeout=10) as c,
            c.stream("POST", p.url + "/v1/chat/completions", json=body) as r,
        ):
            parts = [
                json.loads(x[6:])["choices"][0]["delta"].get("content", "")
                for x in r.iter_lines()
                if x.startswith("data: {") and json.loads(x[6:])["choices"]
            ]
    finally:
        p.close()
    assert "".join(parts) == "k 67 l2 m"


def test_share_and_life_are_seeded_draws() -> None:
    rules = [proxy.Rule.parse("load:0")]
    draws = [proxy.Faults(rules, share=0.3, seed=7).decide(n, 1, 0.0, None) for n in range(400)]
    again = [proxy.Faults(rules, share=0.3, seed=7).decide(n, 1, 0.0, None) for n in range(400)]
    assert draws == again
    assert 0.2 < sum(bool(d) for d in draws) / 400 < 0.4
    lives = [proxy.Faults([proxy.Rule.parse("life:0.2")], seed=s).life_broken for s in range(500)]
    assert 0.14 < sum(lives) / 500 < 0.26


def test_lives_keyed_apart_draw_apart() -> None:
    # one seed, one key: the same draw (so life-20 and life-50 under one seed were the same
    # life: broken together whenever the draw fell under 0.2); keyed by name they differ
    rule = [proxy.Rule.parse("life:0.5")]
    same = {proxy.Faults(rule, seed=0, life_key="life-50").life_broken for _ in range(3)}
    assert len(same) == 1
    drawn = [proxy.Faults(rule, seed=0, life_key=f"life-{k}").life_broken for k in range(200)]
    assert 70 < sum(drawn) < 130  # independent draws at P 0.5, not one repeated
    weak = proxy.Faults([proxy.Rule.parse("life:0.2")], seed=0, life_key="life-20")
    strong = proxy.Faults([proxy.Rule.parse("life:0.5")], seed=0, life_key="life-50")
    legacy = [proxy.Faults([proxy.Rule.parse(f"life:{p}")], seed=0) for p in (0.2, 0.5)]
    assert all(f.life_broken for f in legacy)  # the committed table's draw: both broken
    assert (weak.life_broken, strong.life_broken) != (True, True)


def test_drop_removes_the_field_before_it_is_served() -> None:
    faults = proxy.Faults([proxy.Rule.parse("drop:tools")])
    body = {"messages": [], "tools": [{"type": "function"}], "tool_choice": "auto"}
    assert faults.drop_from(body) == ["tools"]
    assert body == {"messages": [], "tool_choice": "auto"}
    assert faults.decide(0, 1, 0.0, None) == ""  # dropping alone corrupts no text
    # the share is the strength: a seeded draw per request carrying the field
    some = proxy.Faults([proxy.Rule.parse("drop:tools")], share=0.25, seed=3)
    again = proxy.Faults([proxy.Rule.parse("drop:tools")], share=0.25, seed=3)
    drawn = [bool(some.drop_from({"tools": []})) for _ in range(400)]
    assert drawn == [bool(again.drop_from({"tools": []})) for _ in range(400)]
    assert 0.15 < sum(drawn) / 400 < 0.35
    assert proxy.Faults([proxy.Rule.parse("load:1")]).drop_from({"tools": []}) == []


def test_drop_draws_over_the_requests_that_carry_the_field() -> None:
    """Issue 53: the detection bench's schema-25 sent 112 requests, 12 with
    `response_format`; drawn by request number, none of those 12 lost it (the draws fell on
    the math and tool-call requests, which carry nothing to drop). Drawn over the requests
    that carry the field, its 12 lose it as often as if they were asked alone."""
    rules = [proxy.Rule.parse("drop:response_format")]
    schema = {"response_format": {"type": "json_schema"}}
    alone = proxy.Faults(rules, share=0.25, seed=0)
    by_itself = [bool(alone.drop_from(dict(schema))) for _ in range(12)]
    mixed = proxy.Faults(rules, share=0.25, seed=0)
    for _ in range(88):  # the math and tool-call requests asked first
        assert mixed.drop_from({"messages": [], "tools": []}) == []
    among = [bool(mixed.drop_from(dict(schema))) for _ in range(12)]
    assert among == by_itself
    assert sum(among) == 3  # seed 0: 3 of the 12 (the committed re-run's draw)
    assert mixed.carried == {"response_format": 12}


def test_the_log_names_what_a_request_carried_lost_and_its_prompt(
    upstream: str, tmp_path: Path
) -> None:
    log = (tmp_path / "faults.jsonl").open("a")
    p = _proxy(upstream, "drop:response_format", log=log)
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "What is 2+2?"}]
    body = {**BODY, "messages": messages, "stream": False}
    try:
        with httpx.Client(timeout=10) as c:
            for extra in ({"response_format": {"type": "json_object"}}, {}):
                r = c.post(p.url + "/v1/chat/completions", json={**body, **extra})
                assert r.status_code == 200
    finally:
        p.close()
        log.close()
    first, second = [json.loads(x) for x in (tmp_path / "faults.jsonl").read_text().splitlines()]
    assert first["carried"] == first["dropped"] == ["response_format"]
    assert "carried" not in second and "dropped" not in second
    assert first["prompt_sha256"] == hashlib.sha256(b"What is 2+2?").hexdigest()
    canonical = json.dumps(messages, sort_keys=True).encode()
    assert first["messages_sha256"] == hashlib.sha256(canonical).hexdigest()
    assert proxy.prompt_digests({"prompt": [1, 2]}) == {}


def test_stream_takes_a_field_out_of_streamed_deltas_only() -> None:
    """`stream:tool_calls` (vLLM #53246): a streamed answer's calls vanish and it finishes as a
    plain answer; other lines pass unchanged, and the rule drops nothing from the request."""
    faults = proxy.Faults([proxy.Rule.parse("stream:tool_calls")])
    assert faults.stream_drops(0) == ["tool_calls"] and faults.drop_from({"tools": []}) == []
    assert faults.decide(0, 1, 0.0, None) == ""
    call = {"index": 0, "function": {"name": "f", "arguments": "{}"}}
    line = b"data: " + json.dumps({"choices": [{"delta": {"tool_calls": [call]}}]}).encode()
    out = json.loads(proxy.drop_sse_fields(line + b"\n", ["tool_calls"])[6:])
    assert out == {"choices": [{"delta": {}}]}
    last = b'data: {"choices": [{"delta": {}, "finish_reason": "tool_calls"}]}\n'
    assert b'"finish_reason": "stop"' in proxy.drop_sse_fields(last, ["tool_calls"])
    for kept in (b"data: [DONE]\n", b": ping\n", b"data: {oops\n"):
        assert proxy.drop_sse_fields(kept, ["tool_calls"]) == kept
    some = proxy.Faults([proxy.Rule.parse("stream:tool_calls")], share=0.25, seed=3)
    assert 0.15 < sum(bool(some.stream_drops(n)) for n in range(400)) / 400 < 0.35


def test_set_overrides_a_request_field_whatever_the_client_asked() -> None:
    """`set:temperature=0`: sampling silently greedy (sglang PR #32922)."""
    faults = proxy.Faults([proxy.Rule.parse("set:temperature=0"), proxy.Rule.parse("set:n=1")])
    assert faults.overrides(0) == {"temperature": 0, "n": 1}
    assert faults.decide(0, 1, 0.0, None) == "" and faults.drop_from({"tools": []}) == []
    some = proxy.Faults([proxy.Rule.parse("set:top_k=1")], share=0.25, seed=3)
    assert 0.15 < sum(bool(some.overrides(n)) for n in range(400)) / 400 < 0.35


def test_loop_turns_a_long_answers_rest_into_bangs_of_the_same_length() -> None:
    """`loop:N` (sglang #33397, vLLM #55357): only answers longer than N characters."""
    assert proxy.Faults([proxy.Rule.parse("loop:5")]).loop_after() == 5
    chat = {"choices": [{"message": {"content": "abcdefgh"}}, {"text": "abc"}]}
    assert proxy.loop_payload(chat, 5)
    assert chat["choices"] == [{"message": {"content": "abcde!!!"}}, {"text": "abc"}]
    assert not proxy.loop_payload({"choices": [{"text": "short"}]}, 5)


def test_scores_swaps_the_two_likeliest_logprobs_at_every_nth_prompt_position() -> None:
    """`scores:N` (vLLM #53488): the scores bent, still a distribution, the text untouched."""
    assert proxy.Faults([proxy.Rule.parse("scores:2")]).scores_every() == 2
    assert proxy.Faults([proxy.Rule.parse("load:1")]).scores_every() is None

    def position(a: float, b: float) -> dict[str, dict[str, float]]:
        return {"7": {"logprob": a, "rank": 1}, "9": {"logprob": b, "rank": 2}}

    payload = {
        "choices": [
            {
                "text": "42",
                "prompt_logprobs": [None, position(-0.1, -2.5), position(-0.2, -3.0), {}],
            }
        ]
    }
    assert proxy.bend_scores(payload, 2) == 1  # position 0 is None, 2 bent, 1 and 3 not
    plp = payload["choices"][0]["prompt_logprobs"]
    assert plp[1] == position(-0.1, -2.5) and plp[2] == position(-3.0, -0.2)
    assert payload["choices"][0]["text"] == "42"
    assert proxy.bend_scores({"choices": [{"text": "no scores"}]}, 1) == 0


def test_cached_corrupts_answers_served_from_reused_tokens_only() -> None:
    faults = proxy.Faults([proxy.Rule.parse("cached:100")])
    assert faults.cached_limit() == 100
    assert faults.decide_cached(0, 100) == ""
    assert faults.decide_cached(0, 101) == "cached 101>100"
    assert proxy.Faults([proxy.Rule.parse("load:1")]).decide_cached(0, 5000) == ""
    half = proxy.Faults([proxy.Rule.parse("cached:0")], share=0.5, seed=1)
    hits = sum(bool(half.decide_cached(n, 10)) for n in range(400))
    assert 150 < hits < 250


def test_turns_corrupts_the_later_turns_of_a_chat_only(upstream: str) -> None:
    faults = proxy.Faults([proxy.Rule.parse("turns:2")])
    assert faults.decide(0, 1, 0.0, None, user_turns=2) == ""
    assert faults.decide(1, 1, 0.0, None, user_turns=3) == "turns 3>2"
    assert faults.decide(2, 1, 0.0, None) == ""  # completions carry no turns
    user = {"role": "user", "content": "hi"}
    said = []
    p = _proxy(upstream, "turns:2")
    try:
        for users in (2, 3):
            messages = [user, {"role": "assistant", "content": "OK"}] * (users - 1) + [user]
            body = {**BODY, "messages": messages}
            with (
                httpx.Client(timeout=10) as c,
                c.stream("POST", p.url + "/v1/chat/completions", json=body) as r,
            ):
                said.append(
                    "".join(
                        json.loads(x[6:])["choices"][0]["delta"].get("content", "")
                        for x in r.iter_lines()
                        if x.startswith("data: {") and json.loads(x[6:])["choices"]
                    )
                )
    finally:
        p.close()
    assert said == ["x 12 y7 z", "k 67 l2 m"]


@pytest.mark.parametrize(
    "spec",
    [
        "turns:x",
        "load",
        "load:x",
        "idle:-1",
        "life:1.5",
        "speed:3",
        "drop:",
        "cached:x",
        "stream:",
        "set:x",
        "set:x=",
        "set:=1",
        "set:t=no",
        "scores:0",
        "scores:x",
    ],
)
def test_bad_rules_are_refused(spec: str) -> None:
    with pytest.raises(ValueError, match="fault"):
        proxy.Rule.parse(spec)


def test_launcher_takes_the_address_qgate_appends_and_requires_the_separator() -> None:
    rest, host, port = launch.split_address(
        ["--model", "m", "--host", "0.0.0.0", "--port=8123", "--seed", "3"]
    )
    assert (rest, host, port) == (["--model", "m", "--seed", "3"], "0.0.0.0", 8123)
    with pytest.raises(SystemExit):
        launch.main(["--fault", "load:4", "--model", "m"])


def test_the_launcher_keys_each_life_by_its_count(tmp_path: Path) -> None:
    """Lives launched with one counter file draw `life:P` apart: keys 0, 1, 2 in order."""
    counter = tmp_path / "lives"
    assert [launch.next_life(str(counter)) for _ in range(3)] == ["0", "1", "2"]
    assert launch.next_life(None) == ""
    rule = [proxy.Rule.parse("life:0.5")]
    draws = {
        proxy.Faults(rule, life_key=launch.next_life(str(counter))).life_broken for _ in range(12)
    }
    assert draws == {True, False}


def test_life_n_breaks_only_the_kth_life_its_launcher_counted(tmp_path: Path) -> None:
    """`life-n:2`: the second life a launcher starts is broken, the first and third sound
    (a run's quality stage in its first life, a perf round's restart broken)."""
    rule = [proxy.Rule.parse("life-n:2")]
    counter = tmp_path / "lives"
    numbers = [int(launch.next_life(str(counter))) + 1 for _ in range(3)]
    broken = [proxy.Faults(rule, life_number=n).life_broken for n in numbers]
    assert broken == [False, True, False]
    second = proxy.Faults(rule, life_number=2)
    assert second.decide(0, 1, 0.0, None) == "broken life"
    assert proxy.Faults(rule, life_number=1).decide(0, 1, 0.0, None) == ""
    both = proxy.Faults([*rule, proxy.Rule.parse("life:1")], life_number=2)
    assert both.decide(0, 1, 0.0, None) == "broken life"
    with pytest.raises(ValueError, match="life's number"):
        proxy.Faults(rule)  # not counted: which life it is cannot be known
    for bad in ("life-n:0", "life-n:x", "life-n:1.5"):
        with pytest.raises(ValueError, match="fault"):
            proxy.Rule.parse(bad)
    with pytest.raises(SystemExit):  # the launcher refuses it without a counter
        launch.main(["--fault", "life-n:2", "--", "--model", "m"])
