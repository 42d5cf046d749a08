"""Divergence per context-ladder bucket, from the top-k logprobs of the recall answers.

No extra request and no prompt_logprobs (at 8K tokens those would compute full-vocabulary
logits for every prompt position): each recall answer also asks `logprobs` with
`top_logprobs: top_k` and `return_tokens_as_token_ids` (plus `return_token_ids`, so the
server says which prompt token ids it ran), and the two sides' distributions are compared
where their contexts were identical token for token:

- the first generated position: both sides saw the same prompt ids (the same messages, chat
  template and tokenizer; the recorded `prompt_ids_sha256` must be equal on both sides, an
  item whose digests differ or are missing is not compared);
- every later position while both sides' generated tokens so far are identical (the common
  prefix), up to and including the first position where the two generated tokens differ
  (its context is still identical; only what each side chose there differs). Positions after
  that have different contexts and are never compared.

So each item contributes at least one position (when both sides returned logprobs) and at
most one top-1 disagreement; a bucket's top-1 agreement is read with that in mind. Per
position the KL(reference || candidate) is the teacher-forced divergence suite's own
truncated top-k math (qgate/quality/divergence.py `position_divergence`), so the values
compare with that suite's.

Why these logprobs are the model's distribution (vLLM 0.32, read from its sampler and
`ModelConfig.logprobs_mode`): the default `logprobs_mode` is `raw_logprobs`, the
log-softmax of the logits before any logits processor, penalty or temperature
(vllm/v1/sample/sampler.py: "Use the original logits (before any penalties or temperature
scaling) for the top-k logprobs"); the ladder asks greedily (temperature 0) anyway. The
chat API lists the position's top-k with the generated token first when it ranked lower
(then k entries in all); the generated token's own logprob is added from the answer. A
server run with `logprobs_mode` `raw_logits` or `processed_logits` returns logits, not
logprobs: a position whose reported probabilities sum above one is refused at run time and
by verify (`generated_problem`). `processed_logprobs` (after penalties) is not detectable
from the numbers; both sides are then compared after the same processing only if both set it.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from qgate.quality.divergence import PositionDivergence, position_divergence
from qgate.quality.records import GeneratedLogprobs, ItemRecord, SuiteRun

__all__ = [
    "BucketDivergence",
    "bucket_divergence",
    "compared_positions",
    "generated_of",
    "generated_problem",
    "item_divergence",
    "request_fields",
]

SUM_TOLERANCE = 1e-3
"""How far above one a position's reported probabilities may sum (float rounding)."""


def request_fields(top_k: int) -> dict[str, Any]:
    """What a recall answer asks besides its text (nothing when top_k is 0)."""
    if top_k == 0:
        return {}
    return {
        "logprobs": True,
        "top_logprobs": top_k,
        "return_tokens_as_token_ids": True,
        "return_token_ids": True,
    }


def _token_id(token: object) -> int | None:
    if not isinstance(token, str):
        return None
    prefix, _, value = token.partition(":")
    return int(value) if prefix == "token_id" and value.lstrip("-").isdigit() else None


def _position(pos: object) -> tuple[int, dict[int, float]] | None:
    """(generated token, {id: logprob}) of one `logprobs.content` entry; None when it lacks
    token ids or numbers."""
    if not isinstance(pos, dict):
        return None
    tok = _token_id(pos.get("token"))
    found: dict[int, float] = {}
    try:
        for entry in pos.get("top_logprobs") or []:
            tid = _token_id(entry.get("token"))
            if tid is None:
                return None
            found[tid] = float(entry["logprob"])
        if tok is not None:
            found.setdefault(tok, float(pos["logprob"]))
    except (AttributeError, KeyError, TypeError, ValueError):
        return None
    return None if tok is None else (tok, found)


def generated_of(answer: dict[str, Any]) -> GeneratedLogprobs | None:
    """The generated positions' top-k logprobs of one chat answer, or None when the server
    returned none with token ids (an engine without `return_tokens_as_token_ids`)."""
    try:
        content = answer["choices"][0]["logprobs"]["content"]
    except (KeyError, IndexError, TypeError):
        return None
    if not isinstance(content, list):
        return None
    tokens: list[int] = []
    top_ids: list[list[int]] = []
    top_lps: list[list[float]] = []
    for pos in content:
        position = _position(pos)
        if position is None:
            return None
        tok, found = position
        tokens.append(tok)
        top_ids.append(sorted(found))
        top_lps.append([found[t] for t in sorted(found)])
    prompt = answer.get("prompt_token_ids")
    digest = (
        hashlib.sha256(json.dumps([int(t) for t in prompt]).encode()).hexdigest()
        if isinstance(prompt, list)
        else None
    )
    return GeneratedLogprobs(
        prompt_ids_sha256=digest, token_ids=tokens, top_ids=top_ids, top_logprobs=top_lps
    )


def generated_problem(g: GeneratedLogprobs) -> str | None:
    """What makes stored logprobs unusable (None: nothing): lengths, repeated ids, a
    generated token not among its position's ids, values that are no logprobs."""
    n = len(g.token_ids)
    if len(g.top_ids) != n or len(g.top_logprobs) != n:
        return f"{n} generated tokens but {len(g.top_ids)}/{len(g.top_logprobs)} positions"
    for i, (tok, ids, lps) in enumerate(zip(g.token_ids, g.top_ids, g.top_logprobs, strict=True)):
        if len(ids) != len(lps) or len(set(ids)) != len(ids):
            return f"position {i}: ids and logprobs do not pair one to one"
        if tok not in ids:
            return f"position {i}: the generated token {tok} is not among its ids"
        if any(v > 0 or math.isnan(v) for v in lps):
            return f"position {i}: a logprob above 0"
        if sum(math.exp(v) for v in lps) > 1 + SUM_TOLERANCE:
            return (
                f"position {i}: probabilities sum above 1: logits, not logprobs "
                "(a logprobs_mode other than raw_logprobs or processed_logprobs)"
            )
    return None


def compared_positions(ref: GeneratedLogprobs, cand: GeneratedLogprobs) -> int:
    """How many leading positions saw identical contexts on both sides: the common prefix of
    the generated tokens and the first position where they differ; 0 when the prompt ids
    are not known to be identical."""
    if ref.prompt_ids_sha256 is None or ref.prompt_ids_sha256 != cand.prompt_ids_sha256:
        return 0
    n = 0
    for a, b in zip(ref.token_ids, cand.token_ids, strict=False):
        n += 1
        if a != b:
            break
    return n


def item_divergence(
    ref: GeneratedLogprobs, cand: GeneratedLogprobs, top_k: int
) -> list[PositionDivergence]:
    """Per compared position: KL(reference || candidate), top-1 agreement, delta-p of the
    reference's generated token (the divergence suite's math)."""
    return [
        position_divergence(
            dict(zip(ref.top_ids[i], ref.top_logprobs[i], strict=True)),
            dict(zip(cand.top_ids[i], cand.top_logprobs[i], strict=True)),
            ref.token_ids[i],
            top_k,
        )
        for i in range(compared_positions(ref, cand))
    ]


@dataclass(frozen=True)
class BucketDivergence:
    """One bucket's divergence over its compared positions."""

    items: int
    """Items both sides answered with logprobs on identical prompt ids."""
    skipped: int
    """Items both sides answered but not so (no logprobs, or different prompt ids)."""
    positions: int
    mean_kld: float | None
    p99_kld: float | None
    max_kld: float | None
    top1_agreement: float | None

    def value(self, metric: str) -> float | None:
        """The figure a LIMITS metric names."""
        found: float | None = getattr(self, metric)
        return found


def _pairs(ref: SuiteRun, cand: SuiteRun) -> list[tuple[ItemRecord, ItemRecord]]:
    by_id = {i.id: i for i in cand.items}
    return [(r, by_id[r.id]) for r in ref.items if r.id in by_id]


def bucket_divergence(ref: SuiteRun, cand: SuiteRun, top_k: int) -> BucketDivergence:
    """The divergence of one bucket's paired items (items answered by one side only: none)."""
    values: list[PositionDivergence] = []
    items = skipped = 0
    for r, c in _pairs(ref, cand):
        found = (
            item_divergence(r.generated, c.generated, top_k)
            if r.generated is not None and c.generated is not None
            else []
        )
        if found:
            items += 1
            values += found
        else:
            skipped += 1
    if not values:
        return BucketDivergence(items, skipped, 0, None, None, None, None)
    kld = np.array([v.kld for v in values], dtype=np.float64)
    return BucketDivergence(
        items=items,
        skipped=skipped,
        positions=int(kld.size),
        mean_kld=float(kld.mean()),
        p99_kld=float(np.percentile(kld, 99, method="linear")),
        max_kld=float(kld.max()),
        top1_agreement=sum(v.top1_agree for v in values) / len(values),
    )
