"""The sampling canaries in the quality stage (`quality.sampling`, qgate/quality/sampling_data.py).

One result, `sampling`: one item per parameter, its requests asked one at a time through
/v1/chat/completions, each answer kept in the item's output so that `qgate verify` re-grades
it. An HTTP error is that canary's answer ("no answer"), not an infrastructure failure: a
server that refuses `top_k` is a finding.
"""

from __future__ import annotations

import time
from typing import Any

from qgate.core.files import sha256_text
from qgate.profile.sampling import SamplingSuite
from qgate.quality.client import HttpError, SuiteClient
from qgate.quality.records import ItemRecord, SuiteRun
from qgate.quality.runner import SuiteContext
from qgate.quality.sampling_data import (
    EXPECTED,
    SAMPLING_VERSION,
    Answer,
    canary,
    grade_canary,
    output_of,
    sampling_data_sha256,
    stop_word,
)

__all__ = ["EXPECTED", "SAMPLING", "SamplingRunner", "answer_of"]


def answer_of(data: dict[str, Any]) -> Answer:
    """One chat completion as a canary keeps it."""
    choices = [c for c in data.get("choices") or [] if isinstance(c, dict)]
    texts = [str((c.get("message") or {}).get("content") or "") for c in choices]
    finish = [c.get("finish_reason") for c in choices]
    usage = data.get("usage") or {}
    tokens = usage.get("completion_tokens") if isinstance(usage, dict) else None
    content = ((choices[0].get("logprobs") or {}).get("content") or []) if choices else []
    counts = [len(p.get("top_logprobs") or []) for p in content if isinstance(p, dict)]
    return Answer(texts, finish, tokens if isinstance(tokens, int) else None, counts)


async def _canary(client: SuiteClient, param: str, setting: SamplingSuite) -> ItemRecord:
    asked = canary(param, setting.max_tokens, setting.samples)
    answers: list[Answer] = []
    for n, body in enumerate(asked.bodies):
        if param == "stop" and n == 1:
            word = stop_word(answers[0].texts[0]) if answers and answers[0].texts else None
            if word is None:
                break
            body = {**body, "stop": [word]}
        messages = [{"role": "user", "content": asked.prompt}]
        try:
            answers.append(answer_of(await client.chat_body({"messages": messages, **body})))
        except HttpError:
            answers.append(Answer([], [None]))
            break
    output = output_of(answers)
    grade = grade_canary(param, output)
    return ItemRecord(
        id=param,
        prompt_sha256=sha256_text(asked.prompt),
        output=output,
        answer=grade.answer,
        expected=EXPECTED,
        correct=grade.honoured,
        output_tokens=sum(a.tokens or 0 for a in answers),
        finish_reason=None,
    )


class SamplingRunner:
    """The canaries' suite (its entry is in qgate/profile/builtin_suites.py)."""

    def data_digests(self, setting: SamplingSuite, max_model_len: int | None) -> dict[str, str]:
        return {
            "sampling": sampling_data_sha256(setting.params, setting.max_tokens, setting.samples)
        }

    async def run(self, setting: SamplingSuite, ctx: SuiteContext) -> list[SuiteRun]:
        start = time.perf_counter()
        # one request at a time: a batch of one, so batch numerics move no seeded answer
        async with ctx.client(concurrency=1) as client:
            items = [await _canary(client, p, setting) for p in setting.params]
        params: dict[str, str | int | float | bool | None] = {
            "max_tokens": setting.max_tokens,
            "samples": setting.samples,
            "concurrency": 1,
            "version": SAMPLING_VERSION,
        }
        digest = self.data_digests(setting, ctx.max_model_len)["sampling"]
        run = SuiteRun(
            suite="sampling",
            role=ctx.role,
            data_sha256=digest,
            params=params,
            items=items,
            wall_s=round(time.perf_counter() - start, 3),
        )
        return [run]


SAMPLING = SUITE = SamplingRunner()
