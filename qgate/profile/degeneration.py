"""`quality.degeneration`: the long-generation probe (qgate/quality/degeneration_data.py)."""

from __future__ import annotations

from pydantic import Field

from qgate.profile.detect import AccuracyPolicy

__all__ = ["DegenerationSuite"]


class DegenerationSuite(AccuracyPolicy):
    """Long prompts generated to `max_tokens`, alone and beside a prefill-only burst; an answer
    that loops, comes back empty or errs is not clean. Gated like an exact-answer suite on the
    answers the reference gave clean (the exact test by default)."""

    items: int = Field(default=8, ge=1, le=4096, description="Long prompts per result.")
    max_tokens: int = Field(
        default=1024,
        ge=64,
        le=32768,
        description="Tokens each answer may run to: the longest the candidate will serve "
        "(1-2K on the CPU; an answer that stops earlier is graded as it stopped).",
    )
    burst: bool = Field(
        default=True,
        description="Also ask the prompts while prefill-only requests keep arriving "
        "(`degeneration.burst`).",
    )
    burst_words: int = Field(
        default=1024, ge=16, le=100000, description="Words (about tokens) per burst prompt."
    )
    burst_concurrency: int = Field(default=4, ge=1, le=256, description="Burst requests in flight.")
