"""`quality.divergence`: teacher-forced logit divergence, and the cross-check of a speculating
candidate's scores (issue 55 item 4: qgate/gates/cross_check.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from qgate.profile.base import Fraction, Strict

__all__ = ["DivergenceSuite"]


class DivergenceSuite(Strict):
    """Teacher-forced logit divergence of the candidate from the reference."""

    sequences: int = Field(default=64, ge=1, description="Prompts from the corpus.")
    tokens: int = Field(default=128, ge=1, description="Reference continuation length scored.")
    top_k: int = Field(default=20, ge=1, le=100, description="prompt_logprobs per position.")
    corpus: Path | None = Field(
        default=None, description="JSONL corpus; the shipped one if omitted."
    )
    max_mean_kld: float | None = Field(default=None, gt=0, description="Limit on mean KL.")
    max_p99_kld: float | None = Field(default=None, gt=0, description="Limit on p99 KL.")
    max_max_kld: float | None = Field(default=None, gt=0, description="Limit on the largest KL.")
    min_top1_agreement: Fraction | None = Field(
        default=None, description="Floor on top-1 token agreement."
    )
    max_mean_reverse_kld: float | None = Field(
        default=None,
        gt=0,
        description="Limit on mean KL(candidate || reference), the reverse direction (from the "
        "same stored top-k logprobs; shown in every report, gated only when set).",
    )
    cross_check: Literal["speculative", "always"] = Field(
        default="speculative",
        description="When the candidate's scores are checked by a second path: its own greedy "
        "generation of each prompt with top-k logprobs (decode, where an engine speculates) "
        "against its teacher-forced scores (prefill), on the positions where it generated the "
        "reference's tokens. 'speculative': when the candidate sets speculative_config; "
        "'always': on every candidate (an endpoint whose engine is not known). Scores the "
        "second path contradicts pass no divergence gate (NOT TRUSTED).",
    )
    max_cross_kld: float = Field(
        default=0.05,
        gt=0,
        description="The most the two paths may differ: each cross-checked sequence's mean "
        "KL(scored || generated) over its compared positions.",
    )
