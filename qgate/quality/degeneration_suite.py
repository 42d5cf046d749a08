"""The degeneration probe in the quality stage (`quality.degeneration`,
qgate/quality/degeneration_data.py says what it asks and how an answer is graded).

Two results: `degeneration.alone` (the long prompts at the suite's concurrency, nothing else
in flight) and, where `burst` is set, `degeneration.burst` (the same prompts again while a
stream of prefill-only requests, long prompts answered with one token, keeps arriving until
the last long answer is in: the mixed batch of vLLM #55357). Greedy, like every exact-answer
suite, so the two sides' answers are paired item by item.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

from qgate.core import progress
from qgate.core.files import sha256_text
from qgate.profile.degeneration import DegenerationSuite
from qgate.quality.client import HttpError, SuiteClient
from qgate.quality.degeneration_data import (
    DEGENERATION_VERSION,
    EXPECTED,
    HTTP_ERROR,
    LongItem,
    degeneration_data_sha256,
    grade_long,
    long_items,
)
from qgate.quality.records import ItemRecord, SuiteRun
from qgate.quality.runner import SuiteContext

__all__ = ["DEGENERATION", "EXPECTED", "burst_prompt"]

FILLER = [
    "river",
    "stone",
    "cloud",
    "garden",
    "piano",
    "candle",
    "tiger",
    "apple",
    "window",
    "market",
]


def burst_prompt(n: int, words: int) -> str:
    """The `n`-th prefill-only prompt: `words` filler words (about as many tokens), salted by
    `n` so that no two share a cached prefix."""
    body = " ".join(FILLER[(n + i) % len(FILLER)] for i in range(words))
    return f"Request {n}. {body}\nReply with one word."


async def _long(client: SuiteClient, item: LongItem, max_tokens: int, seed: int) -> ItemRecord:
    messages = [{"role": "user", "content": item.prompt}]
    try:
        done = await client.chat(messages, max_tokens=max_tokens, seed=seed)
        output, finish, tokens = done.text, done.finish_reason, done.completion_tokens
    except HttpError as exc:
        output, finish, tokens = f"HTTP {exc.status}: {exc.message}", HTTP_ERROR, None
    grade = grade_long(output, finish)
    return ItemRecord(
        id=item.id,
        prompt_sha256=sha256_text(item.prompt),
        output=output,
        answer=grade.answer,
        expected=EXPECTED,
        correct=grade.clean,
        output_tokens=tokens,
        finish_reason=finish,
        failure=grade.failure,
    )


async def _burst(ctx: SuiteContext, setting: DegenerationSuite, stop: asyncio.Event) -> int:
    """Prefill-only requests, `burst_concurrency` in flight, until `stop`; how many were sent."""
    sent = 0
    async with ctx.client(concurrency=setting.burst_concurrency) as client:

        async def one_after_another() -> None:
            nonlocal sent
            while not stop.is_set():
                n, sent = sent, sent + 1
                messages = [{"role": "user", "content": burst_prompt(n, setting.burst_words)}]
                with contextlib.suppress(HttpError):
                    await client.chat(messages, max_tokens=1, seed=ctx.seed)

        await asyncio.gather(*(one_after_another() for _ in range(setting.burst_concurrency)))
    return sent


class DegenerationRunner:
    """The degeneration probe (its entry is in qgate/profile/builtin_suites.py)."""

    def data_digests(self, setting: DegenerationSuite, max_model_len: int | None) -> dict[str, str]:
        digest = degeneration_data_sha256(setting.items, setting.max_tokens, setting.burst)
        return {r: digest for r in self.results(setting)}

    @staticmethod
    def results(setting: DegenerationSuite) -> list[str]:
        return ["degeneration.alone"] + (["degeneration.burst"] if setting.burst else [])

    async def run(self, setting: DegenerationSuite, ctx: SuiteContext) -> list[SuiteRun]:
        items = long_items(setting.items)
        digest = degeneration_data_sha256(setting.items, setting.max_tokens, setting.burst)
        runs = []
        for suite in self.results(setting):
            start = time.perf_counter()
            counter = progress.items(suite, len(items))
            async with ctx.client() as client:

                async def counted(
                    item: LongItem, client: SuiteClient = client, counter: Any = counter
                ) -> ItemRecord:
                    record = await _long(client, item, setting.max_tokens, ctx.seed)
                    counter.advance()
                    return record

                stop = asyncio.Event()
                burst = (
                    asyncio.ensure_future(_burst(ctx, setting, stop))
                    if suite.endswith(".burst")
                    else None
                )
                try:
                    records = list(await asyncio.gather(*(counted(i) for i in items)))
                finally:
                    stop.set()
                    sent = await burst if burst is not None else 0
            params: dict[str, str | int | float | bool | None] = {
                "max_tokens": setting.max_tokens,
                "temperature": 0.0,
                "concurrency": ctx.concurrency,
                "burst_requests": sent,
                "version": DEGENERATION_VERSION,
            }
            runs.append(
                SuiteRun(
                    suite=suite,
                    role=ctx.role,
                    data_sha256=digest,
                    params=params,
                    items=records,
                    wall_s=round(time.perf_counter() - start, 3),
                )
            )
        return runs


DEGENERATION = SUITE = DegenerationRunner()
