"""Where a side's prompt tokens came from in one perf scenario: the cache provenance shown beside
its tok/s ratio (issue 55: reuse speed the benchmark cannot inflate).

Two measurements, each where the server gives it:

- Per request (`usage.prompt_tokens_details.cached_tokens`; vLLM with
  `--enable-prompt-tokens-details`): each workload request's cached tokens are split by who
  could have written them. In a multi-turn scenario, the first `shared_prefix_tokens` are the
  shared prefix every conversation of the block writes (`across_conversations`); beyond it, up
  to the conversation's own previous turn (its prompt and answer), the conversation wrote them
  (`within_conversation`); the rest no earlier request of this workload wrote (`unexplained`):
  a warm-up, probe, other block, round or side, or a tier that outlives them. A fixed or trace
  workload shares no context, so every cached token is unexplained. Probes and graded turns
  are not workload requests and are left out.
- Per scenario (the `/metrics` deltas of `vllm:prompt_tokens_by_source_total`): prompt tokens
  computed, served from the device prefix cache, and from a host or external tier
  (`external_kv_transfer`). Their window holds the scenario's probes and graded turns too.

Both are sums over every block and round of the side. A pure function of the raw records:
`qgate verify` re-derives it (perf derivation `CACHE_FROM` on).
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import Field

from qgate.core.records import Record
from qgate.perf.counters import deltas, source_key
from qgate.perf.records import RequestRecord, ScenarioRun, is_workload

__all__ = ["CACHE_FROM", "CacheSources", "cache_sources"]

CACHE_FROM = 14
"""The perf derivation from which scenario results carry each side's cache provenance."""


class CacheSources(Record):
    """Where one side's prompt tokens in one scenario came from (every block and round)."""

    requests: int = Field(description="Workload requests that completed with a usage.")
    prompt_tokens: int = Field(description="Their prompt tokens (usage).")
    detailed: int = Field(
        description="Of them, requests whose usage said how many prompt tokens were cached."
    )
    within_conversation: int | None = Field(
        description="Cached tokens the request's own conversation wrote (its previous turn, "
        "beyond the shared prefix); None: no request said."
    )
    across_conversations: int | None = Field(
        description="Cached tokens of the shared prefix, which every conversation writes."
    )
    unexplained: int | None = Field(
        description="Cached tokens no earlier request of this workload wrote (warm-ups, probes, "
        "other blocks, rounds or sides, or a tier outliving them)."
    )
    computed: int | None = Field(description="/metrics: prompt tokens computed (local_compute).")
    device_cache: int | None = Field(
        description="/metrics: prompt tokens from the device prefix cache (local_cache_hit)."
    )
    external_tier: int | None = Field(
        description="/metrics: prompt tokens from a host or external tier (external_kv_transfer)."
    )
    salted: bool = Field(description="Every run of the side carried cache salts.")


def _split(
    cached: int, own: int, shared: int
) -> tuple[int, int, int]:  # (within, across, unexplained)
    across = min(cached, shared)
    explained = min(cached, max(own, shared))
    return explained - across, across, cached - explained


def _own(r: RequestRecord, turns: dict[tuple[int, int], RequestRecord]) -> int:
    """Tokens request r's conversation wrote before it: its previous turn's prompt and answer."""
    if r.conversation is None or not r.turn:
        return 0
    prev = turns.get((r.conversation, r.turn - 1))
    if prev is None or prev.error is not None or prev.prompt_tokens is None:
        return 0
    return prev.prompt_tokens + (prev.output_tokens or 0)


def _counted(runs: Sequence[ScenarioRun], source: str) -> int | None:
    key = source_key(source)
    got = [deltas(r.counters_before, r.counters_after).get(key) for r in runs]
    seen = [v for v in got if v is not None]
    return round(sum(seen)) if seen else None


def cache_sources(runs: Sequence[ScenarioRun]) -> CacheSources | None:
    """The provenance of one side's prompt tokens over its runs of one scenario; None: none."""
    if not runs:
        return None
    requests = prompt = detailed = within = across = unexplained = 0
    for run in runs:
        shared = int(run.params.get("shared_prefix_tokens") or 0)
        work = [r for r in run.requests if is_workload(r)]
        turns = {
            (r.conversation, r.turn): r
            for r in work
            if r.conversation is not None and r.turn is not None
        }
        for r in work:
            if r.error is not None or r.prompt_tokens is None:
                continue
            requests += 1
            prompt += r.prompt_tokens
            if r.cached_prompt_tokens is None:
                continue
            detailed += 1
            own = _own(r, turns) if run.kind == "multi_turn" else 0
            w, a, u = _split(r.cached_prompt_tokens, own, shared if run.kind == "multi_turn" else 0)
            within, across, unexplained = within + w, across + a, unexplained + u
    told = detailed > 0
    return CacheSources(
        requests=requests,
        prompt_tokens=prompt,
        detailed=detailed,
        within_conversation=within if told else None,
        across_conversations=across if told else None,
        unexplained=unexplained if told else None,
        computed=_counted(runs, "local_compute"),
        device_cache=_counted(runs, "local_cache_hit"),
        external_tier=_counted(runs, "external_kv_transfer"),
        salted=all("cache_salt" in r.params for r in runs),
    )
