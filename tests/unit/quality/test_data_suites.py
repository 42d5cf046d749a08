"""The math and recall suites against an in-process fake OpenAI-compatible server.

The fake tokenizes one token per character, so token budgets are exact and
checkable; it answers math questions correctly for half of the items (by id
parity) and recall questions by reading the code from the prompt.
"""

from __future__ import annotations

import asyncio
import random
import re
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from qgate.errors import BadInput, InfrastructureError
from qgate.profile import LmEvalTask, MathSuite, RecallSuite
from qgate.quality import client as client_mod
from qgate.quality.data_recall import planted
from qgate.quality.lmeval_suite import lm_eval_data_sha256, samples_to_records
from qgate.quality.math_set import LONG_MARGIN_TOKENS, load_math_set, long_budget, math_data_sha256
from qgate.quality.math_suite import run_math
from qgate.quality.recall_suite import clip_length, recall_data_sha256, run_recall

Handler = Callable[[dict[str, Any]], str]


def _math_answers() -> dict[str, int]:
    items, _ = load_math_set(None)
    return {i.question: i.answer for i in items}


def _answer(body: dict[str, Any]) -> str:
    prompt: str = body["messages"][-1]["content"]
    code = re.search(r"access code for (locker \d+)\?", prompt)
    if code:
        found = re.search(rf"The access code for {code.group(1)} is ([A-Z]{{2}}-\d{{4}})", prompt)
        return f"The code is {found.group(1)}." if found else "I do not know."
    for question, answer in _math_answers().items():
        if question in prompt:
            # Right for even answers only: accuracy strictly between 0 and 1.
            return f"The answer is {answer if answer % 2 == 0 else answer + 1}."
    return "?"


def make_app(seen: list[dict[str, Any]], status: int = 200) -> web.Application:
    async def chat(req: web.Request) -> web.Response:
        body = await req.json()
        seen.append(body)
        if status != 200:
            return web.Response(status=status, text="engine exploded " * 40)
        text = _answer(body)
        return web.json_response(
            {
                "choices": [{"message": {"content": text}, "finish_reason": "stop"}],
                "usage": {"completion_tokens": len(text.split())},
            }
        )

    async def tokenize(req: web.Request) -> web.Response:
        body = await req.json()
        ids = [ord(c) for c in body["prompt"]]
        return web.json_response({"tokens": ids, "count": len(ids)})

    async def detokenize(req: web.Request) -> web.Response:
        body = await req.json()
        return web.json_response({"prompt": "".join(chr(t) for t in body["tokens"])})

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_post("/tokenize", tokenize)
    app.router.add_post("/detokenize", detokenize)
    return app


async def _server(seen: list[dict[str, Any]], status: int = 200) -> AsyncIterator[str]:
    server = TestServer(make_app(seen, status))
    await server.start_server()
    try:
        yield str(server.make_url("/v1"))
    finally:
        await server.close()


def _run(coro_factory: Callable[[str], Any], status: int = 200) -> tuple[Any, list[Any]]:
    seen: list[dict[str, Any]] = []

    async def main() -> Any:
        async for url in _server(seen, status):
            return await coro_factory(url)

    return asyncio.run(main()), seen


def test_math_short_and_long_records() -> None:
    spec = MathSuite(limit=12, prompts=["short", "long"], max_tokens=16)
    runs, seen = _run(
        lambda url: run_math(
            url, "m", spec, "reference", concurrency=4, seed=7, max_model_len=2048, long_tokens=1000
        )
    )
    assert [r.suite for r in runs] == ["math.short", "math.long"]
    short, long = runs
    assert len(short.items) == len(long.items) == 12
    expected = [i.expected for i in short.items]
    assert all(int(i.answer) % 2 == 0 for i in short.items)
    acc = sum(i.correct for i in short.items) / 12
    assert 0 < acc < 1
    assert [i.correct for i in short.items] == [int(e) % 2 == 0 for e in expected]
    # Same ids, different prompts; the long prompt fits its budget of 1000 "tokens".
    assert [i.id for i in short.items] == [i.id for i in long.items]
    assert short.items[0].prompt_sha256 != long.items[0].prompt_sha256
    assert long.params["preamble_tokens_budget"] == 1000
    assert 900 <= int(str(long.params["preamble_chars"])) <= 1000
    assert long.params["preamble_sizing"] == "tokenizer"
    chats = [b for b in seen if "messages" in b]
    assert {b["temperature"] for b in chats} == {0.0}
    assert {b["seed"] for b in chats} == {7}
    long_prompts = {b["messages"][0]["content"][:200] for b in chats if len(str(b)) > 900}
    assert len(long_prompts) == 1  # one shared preamble prefix for every item
    assert short.data_sha256 != long.data_sha256


def test_math_prompt_digests_are_stable() -> None:
    spec = MathSuite(limit=4, prompts=["short"])

    def digests() -> list[str]:
        runs, _ = _run(
            lambda url: run_math(
                url, "m", spec, "candidate", concurrency=2, seed=0, max_model_len=None
            )
        )
        return [i.prompt_sha256 for i in runs[0].items]

    assert digests() == digests()


def test_long_budget_clips_to_context_and_refuses_tiny_contexts() -> None:
    assert long_budget(3072, None, 48) == 3072
    assert long_budget(3072, 2048, 48) == 2048 - 48 - LONG_MARGIN_TOKENS
    with pytest.raises(BadInput):
        long_budget(3072, 400, 48)


def test_math_data_digest_depends_on_form_limit_and_budget() -> None:
    a = math_data_sha256(MathSuite(limit=10), "short", max_model_len=4096)
    assert a == math_data_sha256(MathSuite(limit=10), "short", max_model_len=4096)
    assert a != math_data_sha256(MathSuite(limit=11), "short", max_model_len=4096)
    b = math_data_sha256(MathSuite(), "long", max_model_len=4096)
    assert b != math_data_sha256(MathSuite(), "long", max_model_len=2048)


def test_recall_sizes_haystacks_in_tokens_and_scores_exact_codes() -> None:
    spec = RecallSuite(context_tokens=[600, 5000], depths=[0.1, 0.5, 0.9], haystacks=2)
    runs, _ = _run(
        lambda url: run_recall(
            url, "m", spec, "reference", concurrency=4, seed=0, max_model_len=2048
        )
    )
    assert [r.suite for r in runs] == ["recall.600", "recall.5000"]
    small, big = runs
    assert len(small.items) == 6
    assert all(i.correct for i in small.items)
    assert small.params["clip_reason"] is None
    # Within one sentence (about 60 characters here) of the budget.
    assert 600 - 80 <= int(str(small.params["haystack_tokens_min"])) <= 600
    assert int(str(small.params["haystack_tokens_max"])) <= 600
    assert big.params["context_tokens_built"] == 2048 - spec.max_tokens - 128
    assert "clipped" in str(big.params["clip_reason"])
    assert len({i.id for i in small.items + big.items}) == 12
    # what verify re-derives without a tokenizer: each id's haystack, depth and planted code
    for run, length in ((small, 600), (big, 5000)):
        codes = planted(spec.seed, length, 2, list(spec.depths), spec.similar)
        assert {i.id: i.expected for i in run.items} == codes


def test_recall_depths_of_one_haystack_share_its_prose_up_to_the_code() -> None:
    spec = RecallSuite(context_tokens=[600], depths=[0.2, 0.8], haystacks=2)
    _, seen = _run(
        lambda url: run_recall(
            url, "m", spec, "reference", concurrency=1, seed=0, max_model_len=None
        )
    )
    prompts = [b["messages"][-1]["content"] for b in seen if "messages" in b]
    h0d0, h0d1, h1d0, _ = prompts
    code_at = h0d0.index("The access code for")
    assert code_at > 100
    assert h0d1[:code_at] == h0d0[:code_at]  # the prefix a prefix-caching server reuses
    codes = [re.findall(r"is ([A-Z]{2}-\d{4})\.", p) for p in (h0d0, h0d1)]
    assert codes[0] != codes[1] and all(len(c) == 1 for c in codes)
    shared = len("Read the following notes.\n\n")
    assert h1d0[: shared + 40] != h0d0[: shared + 40]  # another haystack, other prose


def test_recall_is_deterministic_and_digest_tracks_spec() -> None:
    spec = RecallSuite(context_tokens=[300], depths=[0.5], haystacks=2)

    def once() -> list[tuple[str, str, str]]:
        runs, _ = _run(
            lambda url: run_recall(
                url, "m", spec, "reference", concurrency=2, seed=0, max_model_len=None
            )
        )
        return [(i.id, i.prompt_sha256, i.expected) for i in runs[0].items]

    assert once() == once()
    d = recall_data_sha256(spec, 300, max_model_len=None)
    assert d != recall_data_sha256(spec.model_copy(update={"seed": 1}), 300, max_model_len=None)
    assert clip_length(300, None, 16) == (300, None)


def test_http_error_is_infrastructure_error_with_status() -> None:
    spec = MathSuite(limit=2, prompts=["short"])
    with pytest.raises(InfrastructureError, match="HTTP 500: engine exploded"):
        _run(
            lambda url: run_math(
                url, "m", spec, "reference", concurrency=2, seed=0, max_model_len=None
            ),
            status=500,
        )


def test_connection_refused_is_retried_then_infrastructure_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import socket

    monkeypatch.setattr(client_mod, "RETRY_DELAY_S", 0.01)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    spec = MathSuite(limit=1, prompts=["short"])
    with pytest.raises(InfrastructureError, match="connection failed after 4 attempts"):
        asyncio.run(
            run_math(
                f"http://127.0.0.1:{port}/v1",
                "m",
                spec,
                "reference",
                concurrency=1,
                seed=0,
                max_model_len=None,
            )
        )


def _sample(doc_id: int, filt: str, em: float, resp: str, answer: str) -> dict[str, Any]:
    return {
        "doc_id": doc_id,
        "filter": filt,
        "target": "7",
        "arguments": [["Q?", {}]],
        "resps": [[resp]],
        "filtered_resps": [answer],
        "metrics": ["exact_match"],
        "exact_match": em,
    }


def test_lm_eval_samples_map_to_records_for_the_named_filter() -> None:
    samples = [
        _sample(1, "strict", 0.0, "It is 7", "[invalid]"),
        _sample(0, "strict", 1.0, "#### 7", "7"),
        _sample(1, "flexible", 1.0, "It is 7", "7"),
        _sample(0, "flexible", 1.0, "#### 7", "7"),
    ]
    strict = samples_to_records(samples, "exact_match,strict", "t")
    assert [r.id for r in strict] == ["doc-00000", "doc-00001"]
    assert [r.correct for r in strict] == [True, False]
    assert strict[1].output == "It is 7" and strict[1].answer == "[invalid]"
    flexible = samples_to_records(samples, "exact_match,flexible", "t")
    assert [r.correct for r in flexible] == [True, True]
    with pytest.raises(BadInput, match="must name a filter"):
        samples_to_records(samples, "exact_match", "t")
    with pytest.raises(BadInput, match="no samples"):
        samples_to_records(samples, "acc,strict", "t")


def test_lm_eval_digest_covers_local_yaml_and_data() -> None:
    local = LmEvalTask(task="qgate_math", metric="exact_match,last-integer")
    assert lm_eval_data_sha256(local) == lm_eval_data_sha256(local)
    assert lm_eval_data_sha256(local) != lm_eval_data_sha256(LmEvalTask(task="qgate_recall_1k"))
    assert lm_eval_data_sha256(local) != lm_eval_data_sha256(local.model_copy(update={"limit": 5}))


def test_recall_similar_codes_are_levels_with_one_right_answer_and_the_classic_digest_stays() -> (
    None
):
    from qgate.quality import data_recall

    spec = RecallSuite(context_tokens=[900], depths=[0.3, 0.7], haystacks=1, similar=[0, 4])
    runs, seen = _run(
        lambda url: run_recall(
            url, "m", spec, "reference", concurrency=2, seed=0, max_model_len=None
        )
    )
    ids = [i.id for i in runs[0].items]
    assert ids == [
        "recall.900.h0.d0-30",
        "recall.900.h0.d1-70",
        "recall.900.s4.h0.d0-30",
        "recall.900.s4.h0.d1-70",
    ]
    assert all(i.correct for i in runs[0].items)  # the fake reads the asked locker's code
    prompts = [b["messages"][-1]["content"] for b in seen if "messages" in b]
    for prompt, item in zip(prompts, runs[0].items, strict=True):
        codes = re.findall(r"The access code for locker (\d+) is ([A-Z]{2}-\d{4})\.", prompt)
        asked = re.search(r"access code for locker (\d+)\?", prompt)
        assert asked is not None
        assert len(codes) == (5 if ".s4." in item.id else 1)
        assert len({locker for locker, _ in codes}) == len(codes)  # one answer per locker
        right = dict(codes)[asked.group(1)]
        for locker, code in codes:
            if locker != asked.group(1):  # similar: a nearby locker, one character apart
                assert abs(int(locker) - int(asked.group(1))) <= 15
                assert sum(a != b for a, b in zip(code, right, strict=True)) == 1
    classic = RecallSuite(context_tokens=[900], depths=[0.3, 0.7], haystacks=1)
    assert classic.similar == [0]
    digest = recall_data_sha256(classic, 900, max_model_len=None)
    assert digest != recall_data_sha256(spec, 900, max_model_len=None)
    rng = random.Random(1)
    needle = data_recall.Needle(key="locker 101", symbol="AB-1234", depth=0.5)
    near = data_recall.similar_needles(rng, needle, 8)
    assert len({n.key for n in near}) == 8 and all(n.key != needle.key for n in near)
    assert all(100 <= int(n.key.split()[1]) <= 999 for n in near)
