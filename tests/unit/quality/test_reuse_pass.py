"""The reuse passes against a small fake server (no engine): what each pass records.

The fake counts prompt tokens by source like vLLM (a prompt it has seen is served from its
device cache, but the last token), answers `/reset_prefix_cache` by forgetting them, and
returns per-request `usage.prompt_tokens_details.cached_tokens`. It checks the plumbing the
gates rest on: the restored pass's reset probe around the reset, and the load pass's items
counted from their own answers while the filler runs in the same window (issue 43)."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

from aiohttp import web

from qgate.gates.reuse import evaluate_reuse
from qgate.profile import MathSuite, QualitySpec
from qgate.quality.client import SuiteClient
from qgate.quality.records import ItemRecord, SuiteRun
from qgate.quality.reuse_pass import run_passes
from qgate.quality.reuse_records import AFTER_RESET, BEFORE_RESET, shares
from qgate.quality.runner import SuiteContext

BLOCKS = 64


class Fake:
    def __init__(self, kv_usage: float = 0.9) -> None:
        self.kv_usage = kv_usage  # the share of the KV cache in use that /metrics reports
        self.seen: set[str] = set()
        self.computed = self.device = 0.0
        self.resets = 0

    def _count(self, key: str, n: int) -> int:
        hit = n - 1 if key in self.seen else 0
        self.seen.add(key)
        self.device += hit
        self.computed += n - hit
        return hit

    async def chat(self, request: web.Request) -> web.Response:
        body = await request.json()
        text = body["messages"][0]["content"]
        n = len(text.split())
        hit = self._count(text, n)
        await asyncio.sleep(0.1)  # the items outlast several filler rounds (below)
        usage = {"prompt_tokens": n, "completion_tokens": 1}
        usage["prompt_tokens_details"] = {"cached_tokens": hit}  # type: ignore[assignment]
        message = {"message": {"content": "The answer is 5"}, "finish_reason": "stop"}
        return web.json_response({"choices": [message], "usage": usage})

    async def completions(self, request: web.Request) -> web.Response:
        body = await request.json()
        prompt = body["prompt"]
        # counted when its prefill ends, as vLLM counts: rounds of fillers end every 50 ms, so
        # some end inside the items' window whatever the scheduling (not only before it)
        await asyncio.sleep(0.05)
        hit = self._count(",".join(map(str, prompt)), len(prompt))
        usage = {"prompt_tokens": len(prompt), "prompt_tokens_details": {"cached_tokens": hit}}
        return web.json_response({"choices": [{"text": "x"}], "usage": usage})

    async def reset(self, request: web.Request) -> web.Response:
        self.resets += 1
        self.seen.clear()
        return web.Response(status=200)

    async def metrics(self, request: web.Request) -> web.Response:
        src = "vllm:prompt_tokens_by_source_total"
        lines = [
            f'{src}{{engine="0",source="local_compute"}} {self.computed}',
            f'{src}{{engine="0",source="local_cache_hit"}} {self.device}',
            f'{src}{{engine="0",source="external_kv_transfer"}} 0.0',
            f'vllm:prompt_tokens_total{{engine="0"}} {self.computed + self.device}',
            'vllm:num_preemptions_total{engine="0"} 0.0',
            f'vllm:kv_cache_usage_perc{{engine="0"}} {self.kv_usage}',
            f'vllm:cache_config_info{{block_size="16",num_gpu_blocks="{BLOCKS}"}} 1.0',
        ]
        return web.Response(text="\n".join(lines) + "\n")


class Runner:
    """Four items asked through the one suite client, as math and recall do."""

    def data_digests(self, setting: Any, max_model_len: int | None) -> dict[str, str]:
        return {}

    async def run(self, setting: Any, ctx: SuiteContext) -> list[SuiteRun]:
        prompts = [("shared preamble " * 20) + f"question {i}" for i in range(4)]
        async with SuiteClient(ctx.base_url, ctx.model, concurrency=2) as client:
            out = await client.chat_many(prompts, max_tokens=4, seed=0)
        items = [
            ItemRecord(
                id=f"q{i}",
                prompt_sha256=str(i),
                output=o.text,
                answer="5",
                expected="5",
                correct=True,
            )
            for i, o in enumerate(out)
        ]
        return [SuiteRun(suite="math.long", role=ctx.role, data_sha256="d", items=items)]


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _passes(fake: Fake, spec: QualitySpec) -> list[Any]:
    app = web.Application()
    app.router.add_post("/v1/chat/completions", fake.chat)
    app.router.add_post("/v1/completions", fake.completions)
    app.router.add_post("/reset_prefix_cache", fake.reset)
    app.router.add_get("/metrics", fake.metrics)
    runner = web.AppRunner(app)
    await runner.setup()
    port = _port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        ctx = SuiteContext(
            role="candidate",
            base_url=f"http://127.0.0.1:{port}/v1",
            model="m",
            headers={},
            concurrency=2,
            seed=0,
            max_model_len=512,
            timeout_s=30,
        )
        setting = MathSuite(prompts=["long"])
        await Runner().run(setting, ctx)  # the cold pass
        return await run_passes(spec, ctx, [("math.long", setting, Runner())])
    finally:
        await runner.cleanup()


SPEC = QualitySpec.model_validate(
    {
        "math": {"prompts": ["long"], "max_drop": 0.5},
        "reuse": {
            "passes": ["restored", "load"],
            "reset_wait_s": 0,
            "load": {"requests": 4, "fill": 1.0, "output_tokens": 1, "max_prompt_tokens": 64},
        },
    }
)


def test_the_restored_pass_records_its_reset_probe_around_the_reset() -> None:
    fake = Fake()
    restored, _ = asyncio.run(_passes(fake, SPEC))
    assert fake.resets == 1
    assert [p.suite for p in restored.probes] == [BEFORE_RESET, AFTER_RESET]
    before, after = (shares(p.before, p.after) for p in restored.probes)
    assert before.device is not None and before.device > 0.9  # asked a second time
    assert after.device == 0.0  # the reset took


def test_the_load_pass_counts_its_own_answers_never_the_filler() -> None:
    fake = Fake()
    _, load = asyncio.run(_passes(fake, SPEC))
    s = load.suites[0]
    assert s.usage["requests"] == 4 and s.usage["detailed"] == 4
    window = shares(s.before, s.after).prompt_tokens
    assert window is not None and s.usage["prompt_tokens"] < window  # the filler ran in it
    assert "filler requests" in load.prepare
    reference = load.model_copy(update={"role": "reference"})
    assert s.run is not None
    runs = [s.run, s.run.model_copy(update={"role": "reference"})]
    only_load = SPEC.model_copy(
        update={"reuse": SPEC.reuse.model_copy(update={"passes": ["load"]})}  # type: ignore[union-attr]
    )
    verdicts = evaluate_reuse(only_load, runs, [reference, load])
    assert "the items' own answers (usage.prompt_tokens_details" in verdicts[0].reason


def test_the_load_pass_keeps_the_filler_coming_until_the_items_answered() -> None:
    """A filler that never fills half the cache (small requests, a large cache) and ends its
    first round before the items join: fresh filler prompts keep coming, so the items still
    share their window with it (CI's fast Intel kind ran them alone before)."""
    fake = Fake(kv_usage=0.1)
    _, load = asyncio.run(_passes(fake, SPEC))
    s = load.suites[0]
    window = shares(s.before, s.after).prompt_tokens
    assert window is not None and s.usage["prompt_tokens"] < window, (s.usage, window)
    assert "fresh ones until the items' last answer" in load.prepare
