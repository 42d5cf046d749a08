"""The exact-answer math suite: short prompts and the same questions behind a long preamble.

The set and its prompts are data (qgate/quality/math_set.py); this module asks them.

The long form puts one fixed preamble (evals/math/preamble.txt, identical for
every item) in front of each question, so it exercises attention and the KV
cache over thousands of positions; because the preamble is a shared prefix, a
server's prefix cache can reuse it and the suite stays cheap. The preamble is
cut to a token budget with the served model's own tokenizer (/tokenize and
/detokenize), clipped to what fits in the runtime's max_model_len.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from qgate.core.files import sha256_bytes, sha256_text
from qgate.core.records import Role
from qgate.profile import MathSuite
from qgate.quality.board import block_name, in_blocks
from qgate.quality.client import HttpError, SuiteClient
from qgate.quality.data import evals_root, read_eval_file
from qgate.quality.extract import answer_matches, extract_number
from qgate.quality.look_order import in_look_order
from qgate.quality.math_set import (
    PREAMBLE,
    PROMPT_VERSION,
    MathItem,
    long_budget,
    long_prompt,
    math_data_sha256,
    math_items,
    short_prompt,
)
from qgate.quality.records import ItemRecord, SuiteRun

if TYPE_CHECKING:
    from qgate.quality.board import Board
    from qgate.quality.client import Completion
    from qgate.quality.runner import SuiteContext

__all__ = ["SUITE", "fit_to_tokens", "run_math"]

# Used only when the server has no /tokenize endpoint (some remote endpoints).
FALLBACK_CHARS_PER_TOKEN = 3.5


async def fit_to_tokens(client: SuiteClient, text: str, tokens: int) -> tuple[str, str]:
    """`text` cut to at most `tokens` tokens at a line boundary, and how it was sized."""
    try:
        ids = await client.tokenize(text)
    except HttpError as exc:
        if exc.status not in (404, 405):
            raise
        cut = text[: int(tokens * FALLBACK_CHARS_PER_TOKEN)]
        return cut[: cut.rfind("\n") + 1] or cut, "chars-estimate"
    if len(ids) <= tokens:
        return text, "tokenizer"
    cut = await client.detokenize(ids[:tokens])
    # Whole lines only: a half-cut line reads like a prompt bug to the model.
    return cut[: cut.rfind("\n") + 1] or cut, "tokenizer"


def _records(
    items: list[MathItem], prompts: list[str], outputs: list[Completion]
) -> list[ItemRecord]:
    records: list[ItemRecord] = []
    for item, prompt, out in zip(items, prompts, outputs, strict=True):
        answer = extract_number(out.text)
        records.append(
            ItemRecord(
                id=item.id,
                prompt_sha256=sha256_text(prompt),
                output=out.text,
                answer=answer,
                expected=str(item.answer),
                correct=answer_matches(answer, item.answer),
                output_tokens=out.completion_tokens,
                finish_reason=out.finish_reason,
            )
        )
    return records


async def run_math(
    base_url: str,
    model: str,
    spec: MathSuite,
    role: Role,
    *,
    concurrency: int,
    seed: int,
    max_model_len: int | None,
    headers: dict[str, str] | None = None,
    timeout_s: float = 600.0,
    long_tokens: int | None = None,
    board: Board | None = None,
) -> list[SuiteRun]:
    """Run `math.short` and/or `math.long` (as `spec.prompts` asks) against one runtime.

    `long_tokens` overrides `spec.long_tokens` (the preamble budget in tokens),
    clipped to `max_model_len`; the budget used is recorded in the run's params.
    """
    items = math_items(spec)
    seed_order = None if board is None else board.order_seed
    items = in_look_order(items, [i.id for i in items], seed_order)  # stop: looks
    runs: list[SuiteRun] = []
    async with SuiteClient(
        base_url, model, concurrency=concurrency, timeout_s=timeout_s, headers=headers
    ) as client:
        for form in spec.prompts:
            start = time.perf_counter()
            params: dict[str, str | int | float | bool | None] = {
                "form": form,
                "temperature": 0.0,
                "seed": seed,
                "max_tokens": spec.max_tokens,
                "concurrency": concurrency,
                "prompt_version": PROMPT_VERSION,
            }
            if form == "short":
                prompts = [short_prompt(i.question) for i in items]
            else:
                budget = long_budget(
                    long_tokens or spec.long_tokens, max_model_len, spec.max_tokens
                )
                preamble_full = read_eval_file(evals_root() / PREAMBLE).decode("utf-8")
                preamble, sizing = await fit_to_tokens(client, preamble_full, budget)
                prompts = [long_prompt(preamble, i.question) for i in items]
                params["preamble_tokens_budget"] = budget
                params["preamble_chars"] = len(preamble)
                params["preamble_sizing"] = sizing
                params["preamble_sha256"] = sha256_bytes(preamble.encode())

            async def answer(
                lo: int, hi: int, form: str = form, prompts: list[str] = prompts
            ) -> list[ItemRecord]:
                outputs = await client.chat_many(
                    prompts[lo:hi],
                    max_tokens=spec.max_tokens,
                    seed=seed,
                    what=block_name(f"math.{form}", lo, hi, len(prompts)),
                )
                return _records(items[lo:hi], prompts[lo:hi], outputs)

            records, planned, stopped = await in_blocks(
                board, role, f"math.{form}", len(items), answer
            )
            runs.append(
                SuiteRun(
                    suite=f"math.{form}",
                    role=role,
                    data_sha256=math_data_sha256(
                        spec, form, max_model_len=max_model_len, long_tokens=long_tokens
                    ),
                    params=params,
                    items=records,
                    wall_s=round(time.perf_counter() - start, 3),
                    planned=planned,
                    stopped=stopped,
                )
            )
            if board is not None and board.halted(role):
                break
    return runs


class MathRunner:
    """The math suite in the quality stage (its entry is in qgate/profile/suites.py)."""

    def data_digests(self, setting: MathSuite, max_model_len: int | None) -> dict[str, str]:
        return {
            f"math.{form}": math_data_sha256(setting, form, max_model_len=max_model_len)
            for form in setting.prompts
        }

    async def run(self, setting: MathSuite, ctx: SuiteContext) -> list[SuiteRun]:
        return await run_math(ctx.base_url, ctx.model, setting, ctx.role, **ctx.common())


SUITE = MathRunner()
