"""The symbol-recall suite: codes planted at several depths of token-sized haystacks.

For every (haystack index, depth) a haystack of N tokens (measured with the
served model's tokenizer through /tokenize) holds one "access code" at that
depth, and one request asks for it. The answer is the first code in the
output, and it must equal the planted one exactly. Lengths that do not fit
the runtime's max_model_len are clipped, and the params of the run say so.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from qgate.core.files import sha256_bytes, sha256_json, sha256_text
from qgate.core.records import Role
from qgate.errors import BadInput
from qgate.profile import RecallSuite
from qgate.quality import data_recall
from qgate.quality.board import Board, block_name, in_blocks
from qgate.quality.client import Completion, HttpError, SuiteClient
from qgate.quality.data import evals_root, read_eval_file
from qgate.quality.extract import extract_symbol
from qgate.quality.records import ItemRecord, SuiteRun
from qgate.quality.sizing import recall_haystacks

if TYPE_CHECKING:
    from qgate.quality.runner import SuiteContext

__all__ = [
    "SUITE",
    "RecallItem",
    "Sizer",
    "build_haystack",
    "clip_length",
    "recall_data_sha256",
    "record_of",
    "run_recall",
]
VOCABULARY = "recall/vocabulary.json"
# Room for the question and the chat template around the haystack.
MARGIN_TOKENS = 128
FALLBACK_CHARS_PER_TOKEN = 3.5


@dataclass(frozen=True)
class RecallItem:
    """One question about one planted code."""

    id: str
    prompt: str
    symbol: str


def clip_length(
    requested: int, max_model_len: int | None, max_tokens: int
) -> tuple[int, str | None]:
    """Haystack tokens to build and the reason when that is less than requested."""
    if max_model_len is None:
        return requested, None
    room = max_model_len - max_tokens - MARGIN_TOKENS
    if room < 64:
        raise BadInput(
            f"recall: max_model_len {max_model_len} leaves no room for a haystack "
            f"({room} tokens after the answer budget and the question)"
        )
    if requested > room:
        return room, (
            f"clipped from {requested} to {room} tokens to fit max_model_len {max_model_len}"
        )
    return requested, None


def recall_data_sha256(spec: RecallSuite, length: int, *, max_model_len: int | None) -> str:
    """Digest of what defines `recall.<length>` (generator, vocabulary, seed, depths, sizes)."""
    built, _ = clip_length(length, max_model_len, spec.max_tokens)
    view = {
        "suite": f"recall.{length}",
        "generator_version": data_recall.SIZED_GENERATOR_VERSION,
        "vocabulary_sha256": sha256_bytes(read_eval_file(evals_root() / VOCABULARY)),
        "seed": spec.seed,
        "depths": list(spec.depths),
        "haystacks": recall_haystacks(spec),
        "haystack_tokens": built,
    }
    if spec.similar != [0]:  # the classic needle keeps the digest (and cache) it always had
        view["similar"] = list(spec.similar)
    return sha256_json(view)


class _Sizer:
    """Counts tokens with the server's tokenizer, or estimates when it has none."""

    def __init__(self, client: SuiteClient) -> None:
        self.client = client
        self.method = "tokenizer"

    async def count(self, text: str) -> int:
        if self.method == "tokenizer":
            try:
                return await self.client.count_tokens(text)
            except HttpError as exc:
                if exc.status not in (404, 405):
                    raise
                self.method = "chars-estimate"
        return int(len(text) / FALLBACK_CHARS_PER_TOKEN) + 1


async def build_haystack(
    sizer: _Sizer,
    vocab: dict[str, list[str]],
    *,
    seed: int,
    length: int,
    built_tokens: int,
    index: int,
    depth: float,
    similar: int = 0,
) -> tuple[str, data_recall.Needle, int]:
    """The largest haystack of at most `built_tokens` tokens; its needle and token count.

    The sentences depend only on (seed, length, index), shared by every depth of
    the haystack (their prompts share the text before the code), the code on
    (seed, length, index, depth); the tokenizer only decides how many sentences
    fit (binary search over the count).
    """
    needles = data_recall.make_needles(
        data_recall.haystack_rng(seed, length, index, depth), [depth]
    )
    if similar:
        rng = random.Random(f"qgate-recall-similar:{seed}:{length}:{index}:{depth:.4f}:{similar}")
        needles += data_recall.similar_needles(rng, needles[0], similar)
    filler = data_recall.filler_rng(seed, length, index)
    pool = data_recall.filler_sentences(filler, vocab, built_tokens // 6 + 16)
    lo, hi = 0, len(pool)
    best_tokens = await sizer.count(data_recall.assemble([], needles))
    if best_tokens > built_tokens:
        raise BadInput(f"recall.{length}: the code alone exceeds {built_tokens} tokens")
    while lo < hi:
        mid = (lo + hi + 1) // 2
        tokens = await sizer.count(data_recall.assemble(pool[:mid], needles))
        if tokens <= built_tokens:
            lo, best_tokens = mid, tokens
        else:
            hi = mid - 1
    return data_recall.assemble(pool[:lo], needles), needles[0], best_tokens


async def _recall_items(
    sizer: _Sizer, spec: RecallSuite, length: int, built_tokens: int
) -> tuple[list[RecallItem], list[int]]:
    vocab = data_recall.load_vocabulary(read_eval_file(evals_root() / VOCABULARY))
    items: list[RecallItem] = []
    sizes: list[int] = []
    for k in spec.similar:
        for h in range(recall_haystacks(spec)):
            for d, depth in enumerate(spec.depths):
                haystack, needle, tokens = await build_haystack(
                    sizer,
                    vocab,
                    seed=spec.seed,
                    length=length,
                    built_tokens=built_tokens,
                    index=h,
                    depth=depth,
                    similar=k,
                )
                sizes.append(tokens)
                items.append(
                    RecallItem(
                        id=data_recall.item_id(length, k, h, d, depth),
                        prompt=data_recall.recall_prompt(haystack, needle),
                        symbol=needle.symbol,
                    )
                )
    return items, sizes


async def run_recall(
    base_url: str,
    model: str,
    spec: RecallSuite,
    role: Role,
    *,
    concurrency: int,
    seed: int,
    max_model_len: int | None,
    headers: dict[str, str] | None = None,
    timeout_s: float = 600.0,
    board: Board | None = None,
) -> list[SuiteRun]:
    """One `recall.<length>` run per length of `spec.context_tokens`, against one runtime."""
    runs: list[SuiteRun] = []
    async with SuiteClient(
        base_url, model, concurrency=concurrency, timeout_s=timeout_s, headers=headers
    ) as client:
        sizer = _Sizer(client)
        for length in spec.context_tokens:
            start = time.perf_counter()
            built, clip_reason = clip_length(length, max_model_len, spec.max_tokens)
            items, sizes = await _recall_items(sizer, spec, length, built)

            async def answer(
                lo: int, hi: int, items: list[RecallItem] = items, length: int = length
            ) -> list[ItemRecord]:
                outputs = await client.chat_many(
                    [i.prompt for i in items[lo:hi]],
                    max_tokens=spec.max_tokens,
                    seed=seed,
                    what=block_name(f"recall.{length}", lo, hi, len(items)),
                )
                return [_record(item, out) for item, out in zip(items[lo:hi], outputs, strict=True)]

            records, planned, stopped = await in_blocks(
                board, role, f"recall.{length}", len(items), answer
            )
            runs.append(
                SuiteRun(
                    suite=f"recall.{length}",
                    role=role,
                    data_sha256=recall_data_sha256(spec, length, max_model_len=max_model_len),
                    params={
                        "temperature": 0.0,
                        "seed": seed,
                        "max_tokens": spec.max_tokens,
                        "concurrency": concurrency,
                        "context_tokens_requested": length,
                        "context_tokens_built": built,
                        "haystack_tokens_min": min(sizes),
                        "haystack_tokens_max": max(sizes),
                        "sizing": sizer.method,
                        "clip_reason": clip_reason,
                    },
                    items=records,
                    wall_s=round(time.perf_counter() - start, 3),
                    planned=planned,
                    stopped=stopped,
                )
            )
            if board is not None and board.halted(role):
                break
    return runs


def _record(item: RecallItem, out: Completion) -> ItemRecord:
    answer = extract_symbol(out.text)
    return ItemRecord(
        id=item.id,
        prompt_sha256=sha256_text(item.prompt),
        output=out.text,
        answer=answer,
        expected=item.symbol,
        correct=answer == item.symbol,
        output_tokens=out.completion_tokens,
        finish_reason=out.finish_reason,
    )


Sizer = _Sizer
"""Counts tokens with the server's tokenizer (the ladder sizes its haystacks with it too)."""
record_of = _record
"""One recall answer's record (the ladder grades its items the same way)."""


class RecallRunner:
    """The recall suite in the quality stage (its entry is in qgate/profile/suites.py)."""

    def data_digests(self, setting: RecallSuite, max_model_len: int | None) -> dict[str, str]:
        return {
            f"recall.{n}": recall_data_sha256(setting, n, max_model_len=max_model_len)
            for n in setting.context_tokens
        }

    async def run(self, setting: RecallSuite, ctx: SuiteContext) -> list[SuiteRun]:
        return await run_recall(ctx.base_url, ctx.model, setting, ctx.role, **ctx.common())


SUITE = RecallRunner()
