"""The context-length ladder: recall items in length buckets up to the model's limit.

Each bucket (qgate/profile/ladder.py: centred on a power of two, so 2,048/2,049 and
4,096/4,097 fall inside one) is its own result, `context.<centre>`, gated on its own by the
exact-answer gates; its items are recall haystacks (the recall suite's generator, measured
with the served model's tokenizer) at lengths spread across the bucket, each holding one
code at a depth. Lengths beyond max_model_len (less the answer budget and the question) are
clipped and the run's params say so.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from qgate.core.files import sha256_bytes, sha256_json
from qgate.core.records import Role
from qgate.errors import BadInput
from qgate.profile import ContextLadder
from qgate.profile.context_ladder import Bucket, buckets, item_id, targets
from qgate.quality import data_recall
from qgate.quality.board import Board, block_name, in_blocks
from qgate.quality.client import SuiteClient
from qgate.quality.data import evals_root, read_eval_file
from qgate.quality.data_context_ladder import depth_of
from qgate.quality.recall_suite import (
    MARGIN_TOKENS,
    VOCABULARY,
    RecallItem,
    Sizer,
    build_haystack,
    record_of,
)
from qgate.quality.records import ItemRecord, SuiteRun
from qgate.quality.sizing import ladder_items

if TYPE_CHECKING:
    from qgate.quality.runner import SuiteContext

__all__ = ["SUITE", "ladder_data_sha256", "ladder_top", "run_ladder"]

GENERATOR_VERSION = "1"


def ladder_top(spec: ContextLadder, max_model_len: int | None) -> tuple[int, str | None]:
    """The longest haystack the runtime fits, and why it is less than `up_to` (None: not)."""
    if max_model_len is None:
        return spec.up_to, None
    room = max_model_len - spec.max_tokens - MARGIN_TOKENS
    if room >= spec.up_to:
        return spec.up_to, None
    return room, (
        f"up_to {spec.up_to} clipped to {room} tokens to fit max_model_len {max_model_len} "
        f"with the answer budget and the question"
    )


def ladder_data_sha256(spec: ContextLadder, bucket: Bucket, *, max_model_len: int | None) -> str:
    """Digest of what defines `context.<centre>` (generator, vocabulary, seed, depths, lengths)."""
    top, _ = ladder_top(spec, max_model_len)
    return sha256_json(
        {
            "suite": bucket.suite,
            "generator_version": GENERATOR_VERSION,
            "recall_generator_version": data_recall.SIZED_GENERATOR_VERSION,
            "vocabulary_sha256": sha256_bytes(read_eval_file(evals_root() / VOCABULARY)),
            "seed": spec.seed,
            "depths": list(spec.depths),
            "targets": targets(bucket, ladder_items(spec), top),
        }
    )


async def _items(
    sizer: Sizer, spec: ContextLadder, bucket: Bucket, top: int
) -> tuple[list[RecallItem], list[int]]:
    vocab = data_recall.load_vocabulary(read_eval_file(evals_root() / VOCABULARY))
    items: list[RecallItem] = []
    sizes: list[int] = []
    for i, target in enumerate(targets(bucket, ladder_items(spec), top)):
        depth = depth_of(spec, i)
        haystack, needle, tokens = await build_haystack(
            sizer,
            vocab,
            seed=spec.seed,
            length=bucket.centre,
            built_tokens=target,
            index=i,
            depth=depth,
        )
        sizes.append(tokens)
        items.append(
            RecallItem(
                id=item_id(bucket.centre, i, target, depth),
                prompt=data_recall.recall_prompt(haystack, needle),
                symbol=needle.symbol,
            )
        )
    return items, sizes


async def run_ladder(
    base_url: str,
    model: str,
    spec: ContextLadder,
    role: Role,
    *,
    concurrency: int,
    seed: int,
    max_model_len: int | None,
    headers: dict[str, str] | None = None,
    timeout_s: float = 600.0,
    board: Board | None = None,
) -> list[SuiteRun]:
    """One `context.<centre>` run per bucket, shortest first, against one runtime."""
    runs: list[SuiteRun] = []
    top, clip_reason = ladder_top(spec, max_model_len)
    beyond = [b.centre for b in buckets(spec.start, spec.up_to) if b.lo > top]  # validate
    # refuses these where the profile states max_model_len; an endpoint reports its own
    if beyond:
        raise BadInput(
            f"context_ladder: max_model_len {max_model_len} fits haystacks of at most {top} "
            f"tokens, below every length of bucket(s) {beyond}: lower up_to to {top} or raise "
            "max_model_len"
        )
    async with SuiteClient(
        base_url, model, concurrency=concurrency, timeout_s=timeout_s, headers=headers
    ) as client:
        sizer = Sizer(client)
        for bucket in buckets(spec.start, spec.up_to):
            start = time.perf_counter()
            items, sizes = await _items(sizer, spec, bucket, top)
            name = bucket.suite

            async def answer(
                lo: int, hi: int, items: list[RecallItem] = items, name: str = name
            ) -> list[ItemRecord]:
                outputs = await client.chat_many(
                    [i.prompt for i in items[lo:hi]],
                    max_tokens=spec.max_tokens,
                    seed=seed,
                    what=block_name(name, lo, hi, len(items)),
                )
                return [record_of(i, out) for i, out in zip(items[lo:hi], outputs, strict=True)]

            records, planned, stopped = await in_blocks(board, role, name, len(items), answer)
            clipped = clip_reason if bucket.hi - 1 > top else None
            runs.append(
                SuiteRun(
                    suite=name,
                    role=role,
                    data_sha256=ladder_data_sha256(spec, bucket, max_model_len=max_model_len),
                    params={
                        "temperature": 0.0,
                        "seed": seed,
                        "max_tokens": spec.max_tokens,
                        "concurrency": concurrency,
                        "bucket_centre": bucket.centre,
                        "bucket_lo": bucket.lo,
                        "bucket_hi": bucket.hi - 1,
                        "haystack_tokens_min": min(sizes),
                        "haystack_tokens_max": max(sizes),
                        "sizing": sizer.method,
                        "clip_reason": clipped,
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


class LadderRunner:
    """The ladder in the quality stage (its entry is in qgate/profile/suites.py)."""

    def data_digests(self, setting: ContextLadder, max_model_len: int | None) -> dict[str, str]:
        return {
            b.suite: ladder_data_sha256(setting, b, max_model_len=max_model_len)
            for b in buckets(setting.start, setting.up_to)
        }

    async def run(self, setting: ContextLadder, ctx: SuiteContext) -> list[SuiteRun]:
        return await run_ladder(ctx.base_url, ctx.model, setting, ctx.role, **ctx.common())


SUITE = LadderRunner()
