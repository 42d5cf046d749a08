"""The sampled test in the quality stage (`quality.sampled`, qgate/quality/sampled_data.py).

One result, `sampled`: one item per question, its `samples` requests asked through
/v1/chat/completions at the profile's temperature, each with its own derived seed, every text
kept in the item's output so that `qgate verify` grades it again. The item's `score` is its
share of correct samples (the paired bound for fractional scores judges it, gates/score.py);
`correct` is every sample right.
"""

from __future__ import annotations

import asyncio
import time

from qgate.core import progress
from qgate.core.files import sha256_text
from qgate.profile.sampled import SampledSuite
from qgate.quality.client import SuiteClient
from qgate.quality.math_set import MathItem, short_prompt
from qgate.quality.records import ItemRecord, SuiteRun
from qgate.quality.runner import SuiteContext
from qgate.quality.sampled_data import (
    SAMPLED_VERSION,
    grade_sampled,
    output_of,
    sample_seed,
    sampled_data_sha256,
    sampled_items,
)

__all__ = ["SUITE", "SampledRunner"]


async def _question(
    client: SuiteClient, item: MathItem, setting: SampledSuite, counter: progress.ItemProgress
) -> ItemRecord:
    prompt = short_prompt(item.question)
    messages = [{"role": "user", "content": prompt}]
    asked = [
        client.chat(
            messages,
            max_tokens=setting.max_tokens,
            seed=sample_seed(item.id, s),
            temperature=setting.temperature,
        )
        for s in range(setting.samples)
    ]
    answers = await asyncio.gather(*asked)
    counter.advance()
    output = output_of([a.text for a in answers])
    grade = grade_sampled(output, str(item.answer), setting.samples)
    return ItemRecord(
        id=item.id,
        prompt_sha256=sha256_text(prompt),
        output=output,
        answer=grade.answer,
        expected=str(item.answer),
        correct=grade.correct,
        output_tokens=sum(a.completion_tokens or 0 for a in answers),
        finish_reason=None,
        score=grade.score,
    )


class SampledRunner:
    """The sampled test's suite (its entry is in qgate/profile/builtin_suites.py)."""

    def data_digests(self, setting: SampledSuite, max_model_len: int | None) -> dict[str, str]:
        return {"sampled": sampled_data_sha256(setting)}

    async def run(self, setting: SampledSuite, ctx: SuiteContext) -> list[SuiteRun]:
        start = time.perf_counter()
        questions = sampled_items(setting)
        counter = progress.items("sampled", len(questions), "questions")
        async with ctx.client() as client:  # the stage's concurrency bounds the requests
            try:  # the first error itself, the other requests cancelled (as `chat_many`)
                async with asyncio.TaskGroup() as group:
                    tasks = [
                        group.create_task(_question(client, i, setting, counter)) for i in questions
                    ]
            except BaseExceptionGroup as failed:
                raise failed.exceptions[0] from None
        items = [t.result() for t in tasks]
        params: dict[str, str | int | float | bool | None] = {
            "temperature": setting.temperature,
            "samples": setting.samples,
            "max_tokens": setting.max_tokens,
            "concurrency": ctx.concurrency,
            "seeds": "sha256(item, sample)",
            "version": SAMPLED_VERSION,
        }
        run = SuiteRun(
            suite="sampled",
            role=ctx.role,
            data_sha256=sampled_data_sha256(setting),
            params=params,
            items=items,
            wall_s=round(time.perf_counter() - start, 3),
        )
        return [run]


SUITE = SampledRunner()
