"""The context-length ladder suite's profile block (`quality.context_ladder`).

Its buckets' arithmetic is qgate/profile/context_ladder.py; its runner is
qgate/quality/context_ladder_suite.py.
"""

from __future__ import annotations

from typing import Self

from pydantic import Field, model_validator

from qgate.profile.base import Fraction, KeyIssue
from qgate.profile.detect import AccuracyPolicy

__all__ = ["ContextLadder"]


class ContextLadder(AccuracyPolicy):
    """Recall items in context-length buckets up to the model's limit, each bucket gated alone.

    Buckets are centred on powers of two (bucket P spans [P/sqrt(2), P*sqrt(2)) tokens), so
    every power-of-two boundary (2,048/2,049, 4,096/4,097, ...) falls inside one bucket with
    items on both sides of it; the top bucket ends at `up_to`. Result ids are
    `context.<P>`; the report names the first bucket where the candidate fails (the cliff).
    """

    up_to: int = Field(
        ge=256,
        le=10_000_000,
        description="Longest haystack in tokens: the model's own limit (SmolLM2 8192, 128K "
        "models 131072); clipped at run time to fit max_model_len with the answer budget, "
        "and the report says so.",
    )
    start: int = Field(
        default=1024,
        ge=64,
        le=10_000_000,
        description="Centre of the first bucket; a power of two (1024: the bucket [724, 1448)).",
    )
    per_bucket: int = Field(
        default=8,
        ge=1,
        le=1000,
        description="Items per bucket, at lengths spread geometrically across it (as many "
        "below its power of two as above); `detect` replaces it with the sized count.",
    )
    depths: list[Fraction] = Field(
        default_factory=lambda: [0.1, 0.5, 0.9],
        min_length=1,
        description="Where codes are planted (a fraction of the haystack), in turn per item.",
    )
    seed: int = Field(default=4321, ge=0, le=2**63 - 1, description="Seed of the haystacks.")
    max_tokens: int = Field(
        default=32, ge=1, le=10_000_000, description="Generation budget per answer."
    )
    top_k: int = Field(
        default=20,
        ge=0,
        le=100,
        description="Logprobs asked per generated token (vLLM serves at most its "
        "`max_logprobs`, 20 by default); both sides' are compared per bucket where their "
        "contexts were identical (divergence). 0: not asked, no divergence.",
    )
    max_mean_kld: float | None = Field(
        default=None,
        gt=0,
        description="Limit on each bucket's mean KL(reference || candidate) over its compared "
        "positions (unset: shown, not gated).",
    )
    max_max_kld: float | None = Field(
        default=None, gt=0, description="Limit on each bucket's largest KL (unset: not gated)."
    )
    min_top1_agreement: Fraction | None = Field(
        default=None,
        description="Floor on each bucket's top-1 agreement over its compared positions "
        "(unset: not gated).",
    )

    @model_validator(mode="after")
    def _ladder_shape(self) -> Self:
        if self.start & (self.start - 1):
            raise KeyIssue([(("start",), f"must be a power of two (not {self.start})")])
        if self.up_to < self.start:
            raise KeyIssue([(("up_to",), f"must be at least start ({self.start})")])
        if self.up_to > self.start << 20:
            raise KeyIssue([(("up_to",), "more than 20 buckets above start")])
        if self.top_k == 0:
            limits = ("max_mean_kld", "max_max_kld", "min_top1_agreement")
            found = [name for name in limits if getattr(self, name) is not None]
            if found:
                raise KeyIssue([((found[0],), "needs top_k of at least 1 (logprobs to compare)")])
        return self
