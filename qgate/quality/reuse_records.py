"""Records of the reuse passes (quality.reuse) and what their server counters say they served.

A pass holds, per suite, the items as answered in that pass and the server's counters
scraped right before and right after the suite ran (each side has its own server, and the
suites of a pass run one after another, so a delta belongs to one suite). `shares` turns a
pair of scrapes into the share of prompt tokens computed, served from the device prefix
cache and from the host/external tier: the one function the gates, the views and `qgate
verify` read them with.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from pydantic import Field

from qgate.core.records import Record, Role
from qgate.quality.records import SuiteRun

__all__ = [
    "AFTER_RESET",
    "BEFORE_RESET",
    "COMPUTED",
    "DEVICE",
    "EXTERNAL",
    "KV_USAGE",
    "PREEMPTIONS",
    "PassRun",
    "PassSuite",
    "ItemUsage",
    "Shares",
    "item_usage",
    "shares",
    "snapshot_problem",
]

# Keys of the recorded counters: vLLM's sample names (labels summed over engines and models,
# prompt tokens kept apart by their `source` label); qgate/quality/reuse_counters.py reads them.
COMPUTED = 'vllm:prompt_tokens_by_source_total{source="local_compute"}'
DEVICE = 'vllm:prompt_tokens_by_source_total{source="local_cache_hit"}'
EXTERNAL = 'vllm:prompt_tokens_by_source_total{source="external_kv_transfer"}'
PREEMPTIONS = "vllm:num_preemptions_total"
BEFORE_RESET, AFTER_RESET = "probe:before-reset", "probe:after-reset"
"""The restored pass's reset probe, as PassRun.probes names it."""
KV_USAGE = "vllm:kv_cache_usage_perc"
"""A gauge: the scrape's current value, not a counter (shown, never differenced)."""

PassKind = Literal["cold", "warm", "restored", "load"]


class PassSuite(Record):
    """One suite of one pass on one side: its answers and the counters around it."""

    suite: str = Field(description="Suite id, e.g. 'math.long', 'recall.1024'.")
    run: SuiteRun | None = Field(
        default=None,
        description="The items as answered in this pass (None in the cold pass: its items are "
        "the quality stage's own run of the suite).",
    )
    before: dict[str, float] = Field(
        default_factory=dict, description="Server counters scraped right before the suite."
    )
    after: dict[str, float] = Field(
        default_factory=dict, description="Server counters scraped right after the suite."
    )
    usage: dict[str, float] = Field(
        default_factory=dict,
        description="What the server reported for this suite's own answers, summed: requests, "
        "prompt_tokens, detailed (answers that carried usage.prompt_tokens_details."
        "cached_tokens) and cached_tokens. Unlike the counters it never holds filler traffic; "
        "empty: not recorded (a report made before quality derivation 4).",
    )
    during: dict[str, float] = Field(
        default_factory=dict,
        description="Counters scraped while the suite's items were in flight (load pass: the "
        "KV cache usage with the filler running); shown, never gated.",
    )


class PassRun(Record):
    """One pass on one side: what was done before it, and each suite's records."""

    name: PassKind = Field(description="cold, warm, restored or load.")
    role: Role = Field(description="Which runtime.")
    prepare: str = Field(
        default="",
        description="What qgate did to the server before the pass, in words (a device-cache "
        "reset, filler prompts that evicted it, the filler traffic of the load pass).",
    )
    suites: list[PassSuite] = Field(default_factory=list, description="Per suite, in order.")
    probes: list[PassSuite] = Field(
        default_factory=list,
        description="Restored pass: one fixed probe prompt asked with the counters around it, "
        "'probe:before-reset' (asked a second time, so the device cache holds it) and "
        "'probe:after-reset' (after the reset or eviction): the device-cache hits falling to "
        "about zero show the reset took.",
    )
    wall_s: float = Field(default=0.0, description="Wall time of the pass.")


@dataclass(frozen=True)
class Shares:
    """What a pair of scrapes says a suite's prompts were served from."""

    prompt_tokens: float | None  # None: the server reports no prompt tokens by source
    computed: float | None
    device: float | None
    external: float | None
    preemptions: float | None
    problem: str | None = None  # why the scrapes say nothing (a missing or broken snapshot)

    def of(self, path: Literal["reused", "external"]) -> float | None:
        """The share from a pass's path: 'reused' (device cache or host/external tier, not
        computed again) or 'external' (the host/external tier alone)."""
        if path == "external":
            return self.external
        if self.device is None or self.external is None:
            return None
        return self.device + self.external


def _delta(before: Mapping[str, float], after: Mapping[str, float], key: str) -> float | None:
    if key not in after:
        return None
    d = after[key] - before.get(key, 0.0)
    return after[key] if d < 0 else d  # a restarted server counts from zero


_COUNTED = (COMPUTED, DEVICE, EXTERNAL, PREEMPTIONS)


def snapshot_problem(before: Mapping[str, float], after: Mapping[str, float]) -> str | None:
    """Why a pair of scrapes cannot be differenced, or None: a scrape that is missing (it timed
    out: its delta would be the server's lifetime totals), a counter one scrape has and the
    other lacks, a value that is not a finite count, a counter that went backwards."""
    if not after:
        return "no counters scraped after the suite"
    if not before:
        return "no counters scraped before the suite (its window would be the server's lifetime)"
    for key in _COUNTED:
        if (key in before) != (key in after):
            where = "before" if key in after else "after"
            return f"{key} missing from the scrape {where} the suite"
        if key not in after:
            continue
        b, a = before[key], after[key]
        if not (math.isfinite(b) and math.isfinite(a)) or b < 0 or a < 0:
            return f"{key} is not a count ({b!r} before, {a!r} after)"
        if a < b:
            return f"{key} went backwards ({b:,.0f} before, {a:,.0f} after)"
    return None


def shares(
    before: Mapping[str, float], after: Mapping[str, float], *, strict: bool = True
) -> Shares:
    """Shares of the prompt tokens computed, from device cache, from the host/external tier.

    Strict (quality derivation 4 on): a pair of scrapes with a `snapshot_problem` says nothing
    (every share None, the problem named). Not strict (older reports, as they were derived): a
    missing counter before counts from zero, one that went backwards counts from zero."""
    if strict:
        problem = snapshot_problem(before, after)
        if problem is not None:
            return Shares(None, None, None, None, None, problem)
    parts = [_delta(before, after, k) for k in (COMPUTED, DEVICE, EXTERNAL)]
    preempted = _delta(before, after, PREEMPTIONS)
    if all(p is None for p in parts):
        return Shares(None, None, None, None, preempted)
    computed, device, external = (p or 0.0 for p in parts)
    total = computed + device + external
    if total <= 0:
        return Shares(0.0, None, None, None, preempted)
    return Shares(total, computed / total, device / total, external / total, preempted)


@dataclass(frozen=True)
class ItemUsage:
    """A suite's own answers as the server reported them (PassSuite.usage)."""

    requests: int
    prompt_tokens: float
    cached_share: float | None  # None: the server returned no per-request cached tokens

    def text(self) -> str:
        """'24 answers, 12,345 prompt tokens, 40.0% cached (per request)'."""
        head = f"{self.requests} answers, {self.prompt_tokens:,.0f} prompt tokens"
        if self.cached_share is None:
            return head + ", no per-request cached tokens returned"
        return head + f", {100 * self.cached_share:.1f}% cached (per request)"


def item_usage(usage: Mapping[str, float]) -> ItemUsage | None:
    """The items' own usage, or None where none was recorded; the cached share only where
    every answer carried its cached tokens."""
    requests = usage.get("requests")
    if not requests:
        return None
    prompt = usage.get("prompt_tokens", 0.0)
    whole = usage.get("detailed", 0.0) == requests and prompt > 0
    share = usage.get("cached_tokens", 0.0) / prompt if whole else None
    return ItemUsage(int(requests), prompt, share)
