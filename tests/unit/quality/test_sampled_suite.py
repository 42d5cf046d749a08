"""The sampled runner against a fake chat server: every question asked k times at the
profile's temperature, each sample with its own derived seed, and the texts kept so that the
grade is the stored output's."""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web

from qgate.profile.sampled import SampledSuite
from qgate.quality.records import SuiteRun
from qgate.quality.runner import SuiteContext
from qgate.quality.sampled_data import grade_sampled, sample_seed, sampled_items, texts_of
from qgate.quality.sampled_suite import SUITE


async def _run(setting: SampledSuite, asked: list[dict[str, Any]]) -> SuiteRun:
    async def chat(request: web.Request) -> web.Response:
        body = await request.json()
        asked.append(body)
        text = f"Answer {body['seed'] % 3}" if body["temperature"] > 0 else "Answer 0"
        return web.json_response(
            {
                "choices": [{"message": {"content": text}, "finish_reason": "stop"}],
                "usage": {"completion_tokens": 2},
            }
        )

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    ctx = SuiteContext(
        role="candidate",
        base_url=f"http://127.0.0.1:{port}/v1",
        model="m",
        headers={},
        concurrency=4,
        seed=0,
        max_model_len=None,
        timeout_s=30,
    )
    try:
        (run,) = await SUITE.run(setting, ctx)
    finally:
        await runner.cleanup()
    return run


def test_each_question_is_asked_k_times_with_its_derived_seeds() -> None:
    setting = SampledSuite(prompts=64, samples=3, temperature=0.7)
    asked: list[dict[str, Any]] = []
    run = asyncio.run(_run(setting, asked))
    assert len(asked) == 64 * 3 and {b["temperature"] for b in asked} == {0.7}
    items = sampled_items(setting)
    assert [i.id for i in run.items] == [i.id for i in items]
    assert {b["seed"] for b in asked} == {sample_seed(i.id, s) for i in items for s in range(3)}
    first = run.items[0]
    texts = texts_of(first.output)
    assert texts == [f"Answer {sample_seed(first.id, s) % 3}" for s in range(3)]
    grade = grade_sampled(first.output, first.expected, 3)
    assert (first.score, first.answer, first.correct) == (grade.score, grade.answer, grade.correct)
    assert (
        run.params["samples"] == 3
        and run.data_sha256 == SUITE.data_digests(setting, None)["sampled"]
    )
