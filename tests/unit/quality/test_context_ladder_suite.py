"""The context ladder against an in-process fake server with a cliff at a prompt length.

The fake tokenizes one token per character (budgets are exact) and recalls the planted code
by reading the prompt, except for prompts longer than its cliff, where it answers a wrong
code: the run builds every bucket's haystacks in tokens, the shorter buckets pass, and the
first bucket holding a prompt past the cliff fails and is named.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from qgate.errors import BadInput
from qgate.gates.quality import evaluate_quality
from qgate.profile import ContextLadder, QualitySpec
from qgate.profile.context_ladder import buckets, first_cliff, parse_item_id
from qgate.quality.context_ladder_suite import SUITE, ladder_data_sha256, run_ladder
from qgate.quality.data_context_ladder import ladder_codes
from qgate.quality.ladder_divergence import bucket_divergence
from qgate.quality.records import SuiteRun

SPEC = ContextLadder(up_to=8192, per_bucket=4, max_flips=0, significance=False)


def _logprobs(text: str) -> dict[str, Any]:
    """vLLM's chat logprobs with token ids for a one-token-per-character answer: the generated
    character at logprob -0.1, and token 0 beside it."""
    return {
        "content": [
            {
                "token": f"token_id:{ord(c)}",
                "logprob": -0.1,
                "top_logprobs": [
                    {"token": f"token_id:{ord(c)}", "logprob": -0.1},
                    {"token": "token_id:0", "logprob": -3.0},
                ],
            }
            for c in text
        ]
    }


def _app(cliff: int | None) -> web.Application:
    async def chat(req: web.Request) -> web.Response:
        body = await req.json()
        prompt: str = body["messages"][-1]["content"]
        locker = re.search(r"access code for (locker \d+)\?", prompt)
        assert locker is not None
        code = re.search(rf"The access code for {locker.group(1)} is ([A-Z]{{2}}-\d{{4}})", prompt)
        assert code is not None
        said = code.group(1)
        if cliff is not None and len(prompt) > cliff:
            said = said[:3] + "0000"
        text = f"The code is {said}."
        choice: dict[str, Any] = {"message": {"content": text}, "finish_reason": "stop"}
        answer: dict[str, Any] = {"choices": [choice], "usage": {"completion_tokens": 6}}
        if body.get("logprobs") and body.get("return_tokens_as_token_ids"):
            choice["logprobs"] = _logprobs(text)
            answer["prompt_token_ids"] = [ord(c) for c in prompt[:64]]
        return web.json_response(answer)

    async def tokenize(req: web.Request) -> web.Response:
        body = await req.json()
        ids = [ord(c) for c in body["prompt"]]
        return web.json_response({"tokens": ids, "count": len(ids)})

    app = web.Application(client_max_size=1 << 24)
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_post("/tokenize", tokenize)
    return app


def _run(
    cliff: int | None, role: str, max_model_len: int | None = 8192, spec: ContextLadder = SPEC
) -> list[SuiteRun]:
    async def main() -> list[SuiteRun]:
        server = TestServer(_app(cliff))
        await server.start_server()
        try:
            return await run_ladder(
                str(server.make_url("/v1")),
                "m",
                spec,
                role,  # type: ignore[arg-type]
                concurrency=4,
                seed=0,
                max_model_len=max_model_len,
            )
        finally:
            await server.close()

    return asyncio.run(main())


def test_every_bucket_is_built_in_tokens_inside_its_edges() -> None:
    runs = _run(None, "reference")
    assert [r.suite for r in runs] == [
        "context.1024",
        "context.2048",
        "context.4096",
        "context.8192",
    ]
    for run, b in zip(runs, buckets(1024, 8192), strict=True):
        assert len(run.items) == 4 and all(i.correct for i in run.items)
        p = run.params
        # within a sentence of each target, never above it, never below the bucket
        assert b.lo - 80 <= int(str(p["haystack_tokens_min"]))
        assert int(str(p["haystack_tokens_max"])) < b.hi
        targets = [parse_item_id(i.id) for i in run.items]
        assert all(t is not None and b.lo <= t[2] < b.hi for t in targets)
        codes = ladder_codes(SPEC, b.centre, 4)
        assert [i.expected for i in run.items] == [codes[k][1] for k in range(4)]
    # the top bucket is clipped to max_model_len less the answer budget and the question
    top = runs[-1].params
    assert "clipped to 8032" in str(top["clip_reason"]) and runs[0].params["clip_reason"] is None
    assert int(str(top["haystack_tokens_max"])) <= 8032


def test_a_cliff_fails_the_buckets_past_it_and_names_the_first() -> None:
    ref = _run(None, "reference")
    cand = _run(3000, "candidate")  # prompts of more than 3,000 characters answer wrong
    verdicts = evaluate_quality(QualitySpec(context_ladder=SPEC), [*ref, *cand], None)
    failed = {v.suite: not v.passed for v in verdicts}
    assert failed == {
        "context.1024": False,
        "context.2048": False,  # its longest item, 2,655 tokens + the question, stays below
        "context.4096": True,
        "context.8192": True,
    }
    centres = {int(s.split(".")[1]): f for s, f in failed.items()}
    assert first_cliff(centres) == 4096


def test_a_bucket_the_runtime_cannot_hold_is_refused_naming_the_top() -> None:
    with pytest.raises(BadInput, match=r"at most 1888 tokens.*bucket\(s\) \[4096, 8192\]"):
        _run(None, "reference", max_model_len=2048)


def test_the_data_digest_follows_the_clip_and_the_seed() -> None:
    top = buckets(1024, 8192)[-1]
    digests: Callable[[Any], dict[str, str]] = lambda n: SUITE.data_digests(SPEC, n)  # noqa: E731
    assert digests(8192) == digests(8192)
    assert digests(8192)["context.1024"] == digests(16384)["context.1024"]
    assert digests(8192)["context.8192"] != digests(16384)["context.8192"]
    other = SPEC.model_copy(update={"seed": 1})
    assert ladder_data_sha256(other, top, max_model_len=8192) != digests(8192)["context.8192"]


def test_each_answer_records_its_generated_logprobs_and_a_changed_answer_compares_to_its_part() -> (
    None
):
    ref = {r.suite: r for r in _run(None, "reference")}
    cand = {r.suite: r for r in _run(3000, "candidate")}
    item = ref["context.1024"].items[0]
    assert item.generated is not None and ref["context.1024"].params["logprobs_top_k"] == 20
    assert item.generated.token_ids == [ord(c) for c in item.output]
    same = bucket_divergence(ref["context.1024"], cand["context.1024"], 20)
    # identical answers: every generated position compares, with zero KL
    assert same.positions == sum(len(i.output) for i in ref["context.1024"].items)
    assert same.mean_kld == 0.0 and same.top1_agreement == 1.0
    # past the cliff the answers part at the code's digits: the prefix and that position only
    parted = bucket_divergence(ref["context.8192"], cand["context.8192"], 20)
    prefix = len("The code is AB-")
    assert parted.positions == 4 * (prefix + 1) and parted.items == 4
    assert parted.max_kld is not None and parted.max_kld > 1.0
    assert parted.top1_agreement == pytest.approx(prefix / (prefix + 1))


def test_top_k_0_asks_no_logprobs() -> None:
    runs = _run(None, "reference", spec=SPEC.model_copy(update={"top_k": 0}))
    assert all(i.generated is None for r in runs for i in r.items)
