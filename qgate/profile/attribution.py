"""The `attribution:` block: which of a failing candidate's changes broke it."""

from __future__ import annotations

from pydantic import Field

from qgate.profile.base import Strict

__all__ = ["AttributionSpec"]


class AttributionSpec(Strict):
    """When the candidate fails its gates, run sub-candidates to find the changes to blame."""

    enabled: bool = Field(
        default=True,
        description="Attribute a failing candidate (CI key; "
        "`qgate run --attribute` turns it on too).",
    )
    max_lives: int = Field(
        default=8, ge=1, description="Server lives (sub-candidates) the search may spend."
    )
    groups: list[list[str]] = Field(
        default_factory=list,
        description="Changes that only make sense together, tried as one: names such as "
        "'args.quantization', 'env.VLLM_ROCM_USE_AITER*' (shell patterns), 'emulate_weights'.",
    )
