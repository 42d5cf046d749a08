"""`quality.speculative`: the acceptance gate of a candidate that decodes speculatively.

A candidate speculates when its engine arguments carry `speculative_config` (vLLM's
`--speculative-config`, e.g. n-gram prompt lookup, a draft model, an MTP head). Its quality
suites are gated against the non-speculative reference as usual; this block sets the limits
of the gate on how much of the speculation the server accepted (qgate/gates/speculative.py):
the acceptance length (1 + accepted / drafts, from the server's `/metrics` counters around the
quality suites) against a floor, or against a share of the reference's where the reference
speculates too (TensorRT-LLM fails below 95% of the reference's).
"""

from __future__ import annotations

from pydantic import Field

from qgate.profile.base import Fraction, Strict

__all__ = ["SPECULATIVE_ARG", "SpeculativeSpec"]

SPECULATIVE_ARG = "speculative_config"
"""The engine argument (snake_case) that makes a side speculate."""


class SpeculativeSpec(Strict):
    """Limits of the acceptance gate of a speculative candidate."""

    min_acceptance_length: float | None = Field(
        default=None,
        ge=1,
        le=64,
        description="Floor on the candidate's acceptance length over the quality suites (1 + "
        "accepted tokens / drafts; 1 is nothing accepted, 1 + k every draft of k tokens "
        "accepted). Needed when the reference does not speculate; without it (and without a "
        "speculative reference) the gate only asks that speculation ran.",
    )
    min_share_of_reference: Fraction = Field(
        default=0.95,
        gt=0,
        description="Where the reference speculates too: the candidate's acceptance length must "
        "be at least this share of the reference's (TensorRT-LLM's rule: 0.95). With a floor "
        "as well, the higher limit holds.",
    )
    min_drafts: int = Field(
        default=1,
        ge=1,
        le=10**9,
        description="Drafts the candidate must have proposed over the quality suites; fewer is "
        "NOT EXERCISED (speculation that never ran proves nothing), never a PASS.",
    )
