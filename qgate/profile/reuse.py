"""`quality.reuse`: the exact-answer items asked again, served from the cache the runtime has.

Both sides answer the chosen suites cold (the quality stage itself), then again in each
pass: `warm` (right away, from reused KV: the device prefix cache or a host tier),
`restored` (after the device prefix cache was reset keeping the host/external tier, or
evicted by filler prompts where no reset exists) and `load` (inside concurrent filler
traffic that fills the KV cache).
The gates and the counters that prove a pass ran the path it names: qgate/quality/reuse*.py
and docs/concepts/reuse.md.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from qgate.profile.base import Strict

__all__ = ["PASS_NAMES", "LoadFiller", "PassName", "ReuseSpec"]

PassName = Literal["warm", "restored", "load"]
PASS_NAMES: tuple[PassName, ...] = ("warm", "restored", "load")


class LoadFiller(Strict):
    """The concurrent traffic the `load` pass sends its items inside (each side sized alike)."""

    requests: int = Field(default=8, ge=1, description="Filler requests in flight at once.")
    fill: float = Field(
        default=1.5,
        gt=0,
        description="Filler prompt and output tokens in total, as a multiple of the side's KV "
        "cache capacity (read from the server's `vllm:cache_config_info`): above 1 the engine "
        "must preempt or evict.",
    )
    output_tokens: int = Field(
        default=64, ge=1, description="Tokens each filler request generates (ignore_eos)."
    )
    max_prompt_tokens: int = Field(
        default=8192,
        ge=16,
        description="Cap on one filler prompt (also clipped to max_model_len minus its output).",
    )
    min_preemptions: int = Field(
        default=1,
        ge=1,
        description="The load pass counts as exercised when the candidate's server preempted at "
        "least this many requests while the pass ran (`vllm:num_preemptions`).",
    )


def _warm_only() -> list[PassName]:
    return ["warm"]


class ReuseSpec(Strict):
    """Passes that serve the same items from reused, restored or pressured KV cache."""

    passes: list[PassName] = Field(
        default_factory=_warm_only,
        min_length=1,
        description="Passes after the cold one, in order: 'warm' (reused KV: device prefix "
        "cache or host tier), "
        "'restored' (host/external KV tier after a device-cache reset or eviction), 'load' "
        "(inside filler traffic that fills the KV cache).",
    )
    suites: list[str] | None = Field(
        default=None,
        description="Exact-answer results the passes ask again: ids ('math.long', "
        "'recall.1024') or families ('math', 'recall'); default every math and recall result. "
        "Short prompts (under one KV block) cannot be served from a prefix cache.",
    )
    limit: int | None = Field(
        default=None,
        ge=1,
        description="Ask only the first N items of each suite again (math: the first N "
        "questions; recall: the haystacks that hold the first N); default all of them.",
    )
    min_exercised_share: float = Field(
        default=0.5,
        gt=0.0,
        le=1.0,
        description="Share of a suite's prompt tokens the candidate must serve from the path a "
        "pass names (warm: reused, `local_cache_hit` + `external_kv_transfer`; restored: "
        "host/external, "
        "`external_kv_transfer`); below it the pass's gates are NOT EXERCISED. Warm counts "
        "against the same side's cold pass: the share of what cold computed that warm "
        "reused. Above 0: a floor that zero meets would switch NOT EXERCISED off.",
    )
    max_extra_flips: int = Field(
        default=0,
        ge=0,
        description="Cold-correct answers the candidate may lose in a pass beyond those the "
        "reference lost in the same pass (its own cold/warm noise floor).",
    )
    reset_wait_s: float = Field(
        default=2.0,
        ge=0,
        description="Seconds to wait before resetting the device cache in the restored pass, "
        "so that asynchronous stores to the host tier finish (vLLM's own offload test waits).",
    )
    load: LoadFiller = Field(
        default_factory=LoadFiller, description="The filler traffic of the 'load' pass."
    )

    @field_validator("passes")
    @classmethod
    def _unique(cls, value: list[PassName]) -> list[PassName]:
        if len(set(value)) != len(value):
            raise ValueError("each pass at most once")
        return value
