"""The reuse passes on one runtime: the chosen suites asked again, counters scraped around each.

Called by the quality stage (stage.py) once the cold suites ran. Per pass:

- warm: nothing before it; the items were just asked, so a prefix cache serves them;
- restored: `POST /reset_prefix_cache?reset_external=false` drops the device prefix cache and
  keeps the host/external tier (vLLM answers it only with VLLM_SERVER_DEV_MODE=1); where the
  server has no such endpoint, filler prompts of 1.2x its KV capacity evict the device cache;
- load: filler requests (`quality.reuse.load`) that fill the KV cache run while the items
  are asked, so the engine preempts and evicts around them.

Filler prompts are token ids (exact lengths), seeded alike on both sides and sized from
each side's own KV capacity (`vllm:cache_config_info`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import logging
import math
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

import aiohttp

from qgate.core import progress
from qgate.core.http import root_url
from qgate.profile import QualitySpec, ReuseSpec
from qgate.profile.reuse import PassName
from qgate.quality.asked_again import pass_setting
from qgate.quality.client import USAGE, UsageTally
from qgate.quality.records import SuiteRun
from qgate.quality.reuse_counters import kv_capacity_tokens, parse_pass_counters, scrape_text
from qgate.quality.reuse_records import AFTER_RESET, BEFORE_RESET, KV_USAGE, PassRun, PassSuite
from qgate.quality.runner import SuiteContext, SuiteRunner

__all__ = ["filler_prompts", "run_passes", "suite_with_counters"]

log = logging.getLogger("qgate")

EVICT_FILL = 1.2
_FILLER_IDS = (1000, 8000)  # token ids every tokenizer qgate serves has (vocabularies > 8K)
_FILLER_SEED = 20261202


async def _counters(ctx: SuiteContext) -> tuple[dict[str, float], str]:
    text = await scrape_text(ctx.base_url, ctx.headers)
    return (parse_pass_counters(text) if text else {}), text


async def suite_with_counters(
    runner: SuiteRunner, setting: Any, ctx: SuiteContext
) -> tuple[list[SuiteRun], dict[str, float], dict[str, float], dict[str, float]]:
    """Run a suite with the server's counters scraped right before and right after it, and the
    usage its own answers reported (filler traffic around it is not counted)."""
    before, _ = await _counters(ctx)
    tally = UsageTally()
    token = USAGE.set(tally)
    try:
        runs = await runner.run(setting, ctx)
    finally:
        USAGE.reset(token)
    after, _ = await _counters(ctx)
    return runs, before, after, tally.as_record()


def filler_prompts(total_tokens: int, per_prompt: int, salt: str) -> list[list[int]]:
    """Unique token-id prompts of `per_prompt` tokens adding up to at least `total_tokens`."""
    count = max(1, math.ceil(total_tokens / max(1, per_prompt)))
    out = []
    for i in range(count):
        rng = random.Random(f"{_FILLER_SEED}-{salt}-{i}")
        out.append([rng.randrange(*_FILLER_IDS) for _ in range(per_prompt)])
    return out


async def _send_fillers(
    ctx: SuiteContext, prompts: list[list[int]], output_tokens: int, in_flight: int
) -> None:
    async with ctx.client(concurrency=in_flight) as client:
        body = {"model": ctx.model, "max_tokens": output_tokens, "temperature": 0.0}
        extra = {"ignore_eos": True, "min_tokens": output_tokens}
        async with asyncio.TaskGroup() as group:
            for p in prompts:
                group.create_task(client.completions({**body, **extra, "prompt": p}, "filler"))


def _per_prompt(ctx: SuiteContext, cap: int, output_tokens: int) -> int:
    room = (ctx.max_model_len or cap + output_tokens + 16) - output_tokens - 16
    return max(16, min(cap, room))


async def _reset(ctx: SuiteContext, wait_s: float) -> bool:
    """POST /reset_prefix_cache?reset_external=false; whether the server did it."""
    await asyncio.sleep(wait_s)  # asynchronous stores to the host tier finish first
    url = root_url(ctx.base_url) + "/reset_prefix_cache?reset_external=false"
    try:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as s,
            s.post(url, headers=ctx.headers) as resp,
        ):
            return resp.status == 200
    except (aiohttp.ClientError, TimeoutError):
        return False


PROBE_TOKENS = 512


async def _probe(ctx: SuiteContext, reuse: ReuseSpec, label: str) -> PassSuite:
    """The reset probe asked once, with the counters scraped around it."""
    per = _per_prompt(ctx, min(PROBE_TOKENS, reuse.load.max_prompt_tokens), 1)
    before, _ = await _counters(ctx)
    await _send_fillers(ctx, filler_prompts(per, per, "reset-probe"), 1, 1)
    after, _ = await _counters(ctx)
    return PassSuite(suite=label, before=before, after=after)


async def _prepare_restored(ctx: SuiteContext, reuse: ReuseSpec) -> str:
    if await _reset(ctx, reuse.reset_wait_s):
        return "device prefix cache reset, host/external tier kept (reset_external=false)"
    _, text = await _counters(ctx)
    cap = kv_capacity_tokens(text)
    if cap is None:
        return "no reset endpoint (VLLM_SERVER_DEV_MODE=1?) and no KV capacity to size an eviction"
    per = _per_prompt(ctx, reuse.load.max_prompt_tokens, 1)
    prompts = filler_prompts(int(EVICT_FILL * cap), per, "evict")
    await _send_fillers(ctx, prompts, 1, ctx.concurrency)
    return (
        f"no reset endpoint: evicted by {len(prompts)} filler prompts of {per} tokens "
        f"({EVICT_FILL:g}x the KV capacity of {cap:,} tokens)"
    )


async def _under_load(
    ctx: SuiteContext, reuse: ReuseSpec, suite: str, run: Callable[[], Awaitable[PassSuite]]
) -> tuple[PassSuite, str]:
    spec = reuse.load
    _, text = await _counters(ctx)
    cap = kv_capacity_tokens(text)
    if cap is None:
        return await run(), "no KV capacity reported: the items ran without filler traffic"
    per = _per_prompt(ctx, spec.max_prompt_tokens, spec.output_tokens)
    total = int(spec.fill * cap)
    prompts = filler_prompts(total, per, f"load-{suite}")
    first = asyncio.Event()  # the first `fill` x the capacity sent

    async def fill() -> None:
        # Rounds of fresh prompts until cancelled: the items always run beside the filler,
        # however fast this machine got through the first round (a filler that ended before
        # the items joined left them alone: CI's 2-core Intel AMX kind).
        await _send_fillers(ctx, prompts, spec.output_tokens, spec.requests)
        first.set()
        for again in itertools.count(1):
            more = filler_prompts(total, per, f"load-{suite}-{again}")
            await _send_fillers(ctx, more, spec.output_tokens, spec.requests)

    filler = asyncio.create_task(fill())
    # Let the filler fill the cache before the items join it.
    deadline = time.monotonic() + 60
    during: dict[str, float] = {}
    while time.monotonic() < deadline and not first.is_set() and not filler.done():
        during, _ = await _counters(ctx)
        if during.get(KV_USAGE, 0.0) >= 0.5:
            break
        await asyncio.sleep(0.5)
    result = await run()
    filler.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):  # an aborted filler: no result
        await filler
    how = (
        f"{len(prompts)} filler requests of {per} + {spec.output_tokens} tokens, {spec.requests} "
        f"in flight ({spec.fill:g}x the KV capacity of {cap:,} tokens), fresh ones until the "
        "items' last answer"
    )
    return result.model_copy(update={"during": during}), how


async def run_passes(
    spec: QualitySpec,
    ctx: SuiteContext,
    settings: list[tuple[str, Any, SuiteRunner]],
) -> list[PassRun]:
    """Every pass of `quality.reuse` on one runtime, over (suite id, setting, runner) triples."""
    reuse = spec.reuse
    assert reuse is not None
    ctx = replace(ctx, board=None)  # a pass never stops early
    out: list[PassRun] = []
    for name in reuse.passes:
        start = time.perf_counter()
        probes: list[PassSuite] = []
        prepare = ""
        if name == "restored":
            await _probe(ctx, reuse, "probe:seed")
            probes.append(await _probe(ctx, reuse, BEFORE_RESET))
            prepare = await _prepare_restored(ctx, reuse)
            probes.append(await _probe(ctx, reuse, AFTER_RESET))
        suites: list[PassSuite] = []
        for suite, setting, runner in settings:
            part = pass_setting(setting, reuse.limit)
            if name == "load":
                call = functools.partial(_one, runner, part, ctx, suite, name)
                one, prepare = await _under_load(ctx, reuse, suite, call)
            else:
                one = await _one(runner, part, ctx, suite, name)
            suites.append(one)
        log.info(
            "%s: %s pass (%s): %.0f s",
            ctx.role,
            name,
            prepare or "as is",
            time.perf_counter() - start,
        )
        out.append(
            PassRun(
                name=name,
                role=ctx.role,
                prepare=prepare,
                suites=suites,
                probes=probes,
                wall_s=round(time.perf_counter() - start, 3),
            )
        )
    return out


async def _one(
    runner: SuiteRunner, setting: Any, ctx: SuiteContext, suite: str, name: PassName
) -> PassSuite:
    with progress.suite(ctx.role, f"{suite}@{name}"):
        runs, before, after, usage = await suite_with_counters(runner, setting, ctx)
    run = next((r for r in runs if r.suite == suite), None)
    return PassSuite(suite=suite, run=run, before=before, after=after, usage=usage)
