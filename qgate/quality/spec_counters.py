"""The speculative-decoding counters of a server's `/metrics`, snapshotted around the suites.

vLLM counts, per engine: drafts proposed (`vllm:spec_decode_num_drafts`), draft tokens in
them, accepted tokens, and accepted tokens by draft position (`position` label). A snapshot
keeps the totals summed over engines and models, and the per-position ones apart by their
position; the quality stage takes one before the first suite and one after each
(qgate/quality/stage.py), so the report holds the raw counters the acceptance gate reads
(qgate/gates/speculative.py) and `qgate verify` re-derives it from them.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from pydantic import Field

from qgate.core.records import Record, Role
from qgate.quality.reuse_counters import scrape_text

__all__ = [
    "ACCEPTED",
    "DRAFTS",
    "DRAFT_TOKENS",
    "PER_POSITION",
    "SpecSnapshot",
    "parse_spec_counters",
    "position_key",
    "snapshot",
]

DRAFTS = "vllm:spec_decode_num_drafts_total"
DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens_total"
ACCEPTED = "vllm:spec_decode_num_accepted_tokens_total"
PER_POSITION = "vllm:spec_decode_num_accepted_tokens_per_pos_total"
_TOTALS = (DRAFTS, DRAFT_TOKENS, ACCEPTED)


class SpecSnapshot(Record):
    """A side's speculative-decoding counters at one point of its quality stage."""

    role: Role = Field(description="Which runtime.")
    at: str = Field(description="'start' (before the first suite) or 'after <suite key>'.")
    seconds: float = Field(
        default=0.0,
        ge=0,
        description="Seconds since the side's first snapshot (what each suite cost, with or "
        "without speculation; not gated).",
    )
    counters: dict[str, float] = Field(
        default_factory=dict,
        description="Counter -> value, summed over engines and models; the per-position "
        'counter keyed by position (`..._per_pos_total{position="0"}`). Empty: the server '
        "exposes no speculative-decoding counters (it does not speculate, or has no /metrics).",
    )


def position_key(position: str) -> str:
    """The snapshot key of the accepted-tokens counter of one draft position."""
    return f'{PER_POSITION}{{position="{position}"}}'


def parse_spec_counters(text: str) -> dict[str, float]:
    """The speculative-decoding counters of a `/metrics` page ({} when it has none)."""
    from prometheus_client.parser import text_string_to_metric_families  # deferred: core/lazy.py

    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            key: str | None = None
            if s.name in _TOTALS:
                key = s.name
            elif s.name == PER_POSITION and "position" in s.labels:
                key = position_key(s.labels["position"])
            if key is not None:
                out[key] = out.get(key, 0.0) + float(s.value)
    return out


async def snapshot(
    role: Role,
    at: str,
    base_url: str,
    headers: Mapping[str, str] | None = None,
    since: float | None = None,
) -> SpecSnapshot:
    """Scrape the server's speculative-decoding counters now (`since`: the monotonic time of
    the side's first snapshot)."""
    now = time.monotonic()
    text = await scrape_text(base_url, headers)
    return SpecSnapshot(
        role=role,
        at=at,
        seconds=round(now - since, 3) if since is not None else 0.0,
        counters=parse_spec_counters(text) if text else {},
    )
