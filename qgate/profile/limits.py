"""Upper bounds on every number, list and total a profile can ask for.

Sizes beyond these would not fail: they would allocate until the machine runs out,
or never end. Every number key of the schema has a bound, either in its own field
(`le=`) or here (`LIMITS`); every list and mapping has at most `MAX_ITEMS` entries,
fewer where `ITEM_LIMITS` says (levels of a sweep); and the perf stage as a whole
(scenarios x levels x blocks x rounds x sides) is bounded in requests and hours.
tests/unit/profile/test_malformed.py walks the schema and fails on a number key
without a bound, so a key added later gets one.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel

from qgate.core.yamlload import KeyPath
from qgate.profile import (
    AccuracyPolicy,
    AttributionSpec,
    Calibration,
    ClusterSpec,
    ContextLadder,
    Detect,
    DivergenceSuite,
    EngineLaunch,
    EngineSpec,
    FixedScenario,
    GradedTurns,
    LmEvalTask,
    LoadFiller,
    MathSuite,
    MultiTurnScenario,
    PerfGate,
    PerfSpec,
    PublishedFigure,
    QualitySpec,
    RecallSuite,
    ReuseSpec,
    ScenarioBase,
    Slo,
    StructuredSuite,
    Target,
    ToolCallsSuite,
    TraceScenario,
    WeightEmulation,
)

__all__ = [
    "ITEM_LIMITS",
    "LIMITS",
    "MAX_CONCURRENCY",
    "MAX_COUNT",
    "MAX_ITEMS",
    "MAX_LEVELS",
    "MAX_PERF_REQUESTS",
    "MAX_SECONDS",
    "MAX_SEED",
    "MAX_TOKENS",
    "limit_problems",
    "number",
    "perf_total_problems",
]

Found = list[tuple[KeyPath, str]]

MAX_TOKENS = 10_000_000
MAX_COUNT = 1_000_000
MAX_CONCURRENCY = 10_000
MAX_SECONDS = 7 * 24 * 3600
MAX_SEED = 2**63 - 1
MAX_ITEMS = 1000
"""Entries of any list or mapping in a profile (a profile is written by hand)."""
MAX_LEVELS = 64
"""Levels of one sweep (concurrency levels, input lengths, context lengths, depths)."""
MAX_PERF_REQUESTS = 10_000_000
"""Requests of the whole perf stage: every scenario's runs, blocks, rounds and sides."""

_TOKENS = " tokens; no model's context is that long"
_COUNT = "; a run that large would not finish"
_WEEK = " s, a week"
_RATIO = "; no speed ratio is that large"
_KLD = " nats; a divergence that large is no limit"
LIMITS: dict[tuple[type[BaseModel], str], tuple[int, str]] = {
    (AccuracyPolicy, "max_flips"): (MAX_COUNT, " items" + _COUNT),
    (MathSuite, "max_tokens"): (MAX_TOKENS, _TOKENS),
    (MathSuite, "long_tokens"): (MAX_TOKENS, _TOKENS),
    (MathSuite, "limit"): (MAX_COUNT, " items" + _COUNT),
    (Calibration, "min_items"): (MAX_COUNT, " records" + _COUNT),
    (Detect, "max_items"): (MAX_COUNT, " items" + _COUNT),
    (RecallSuite, "context_tokens"): (MAX_TOKENS, _TOKENS),
    (RecallSuite, "max_tokens"): (MAX_TOKENS, _TOKENS),
    (RecallSuite, "haystacks"): (MAX_COUNT, " haystacks" + _COUNT),
    (RecallSuite, "seed"): (MAX_SEED, "; seeds are 64-bit"),
    (DivergenceSuite, "sequences"): (MAX_COUNT, " sequences" + _COUNT),
    (DivergenceSuite, "tokens"): (MAX_TOKENS, _TOKENS),
    (DivergenceSuite, "max_mean_kld"): (1000, _KLD),
    (DivergenceSuite, "max_p99_kld"): (1000, _KLD),
    (DivergenceSuite, "max_max_kld"): (1000, _KLD),
    (DivergenceSuite, "max_mean_reverse_kld"): (1000, _KLD),
    (DivergenceSuite, "max_cross_kld"): (1000, _KLD),
    (ContextLadder, "max_mean_kld"): (1000, _KLD),
    (ContextLadder, "max_max_kld"): (1000, _KLD),
    (LmEvalTask, "limit"): (MAX_COUNT, " documents" + _COUNT),
    (LmEvalTask, "num_fewshot"): (1000, " examples; no prompt holds that many"),
    (ToolCallsSuite, "items"): (MAX_COUNT, " items" + _COUNT),
    (ToolCallsSuite, "seed"): (MAX_SEED, "; seeds are 64-bit"),
    (ToolCallsSuite, "max_tokens"): (MAX_TOKENS, _TOKENS),
    (StructuredSuite, "items"): (MAX_COUNT, " items" + _COUNT),
    (StructuredSuite, "seed"): (MAX_SEED, "; seeds are 64-bit"),
    (StructuredSuite, "max_tokens"): (MAX_TOKENS, _TOKENS),
    (QualitySpec, "concurrency"): (MAX_CONCURRENCY, " requests in flight"),
    (QualitySpec, "seed"): (MAX_SEED, "; engines take a 64-bit seed"),
    (QualitySpec, "stop_block"): (MAX_COUNT, " items" + _COUNT),
    (ReuseSpec, "limit"): (MAX_COUNT, " items" + _COUNT),
    (ReuseSpec, "max_extra_flips"): (MAX_COUNT, " items" + _COUNT),
    (ReuseSpec, "reset_wait_s"): (3600, " s, an hour"),
    (LoadFiller, "requests"): (MAX_CONCURRENCY, " requests in flight"),
    (LoadFiller, "fill"): (100, " times the KV cache; the pass would not finish"),
    (LoadFiller, "output_tokens"): (MAX_TOKENS, _TOKENS),
    (LoadFiller, "max_prompt_tokens"): (MAX_TOKENS, _TOKENS),
    (LoadFiller, "min_preemptions"): (MAX_COUNT, " preemptions" + _COUNT),
    (ScenarioBase, "warmup"): (MAX_COUNT, " requests" + _COUNT),
    (ScenarioBase, "requests"): (MAX_COUNT, " requests" + _COUNT),
    (ScenarioBase, "duration_s"): (MAX_SECONDS, _WEEK),
    (ScenarioBase, "series_bucket_s"): (MAX_SECONDS, _WEEK),
    (FixedScenario, "input_tokens"): (MAX_TOKENS, _TOKENS),
    (FixedScenario, "output_tokens"): (MAX_TOKENS, _TOKENS),
    (FixedScenario, "concurrency"): (MAX_CONCURRENCY, " requests in flight"),
    (FixedScenario, "request_rate"): (MAX_COUNT, " requests a second"),
    (FixedScenario, "burstiness"): (1000, "; a gamma shape that large is a fixed interval"),
    (MultiTurnScenario, "conversations"): (MAX_CONCURRENCY, " conversations in flight"),
    (MultiTurnScenario, "turns"): (MAX_COUNT, " turns" + _COUNT),
    (MultiTurnScenario, "shared_prefix_tokens"): (MAX_TOKENS, _TOKENS),
    (MultiTurnScenario, "turn_input_tokens"): (MAX_TOKENS, _TOKENS),
    (MultiTurnScenario, "output_tokens"): (MAX_TOKENS, _TOKENS),
    (MultiTurnScenario, "think_time_s"): (MAX_SECONDS, _WEEK),
    (GradedTurns, "seed"): (MAX_SEED, "; seeds are 64-bit"),
    (TraceScenario, "time_scale"): (1_000_000, "; the replay would not finish"),
    (Slo, "ttft_ms"): (MAX_SECONDS * 1000, " ms, a week"),
    (Slo, "tpot_ms"): (MAX_SECONDS * 1000, " ms, a week"),
    (Slo, "e2e_ms"): (MAX_SECONDS * 1000, " ms, a week"),
    (PerfSpec, "bootstrap"): (MAX_COUNT, " resamples" + _COUNT),
    (PerfGate, "min_ratio"): (1000, _RATIO),
    (PerfGate, "max_ratio"): (1000, _RATIO),
    (PublishedFigure, "concurrency"): (MAX_COUNT, " requests in flight"),
    (PublishedFigure, "value"): (10**15, "; no measured figure is that large"),
    (EngineLaunch, "startup_timeout_s"): (MAX_SECONDS, _WEEK),
    (EngineSpec, "request_timeout_s"): (MAX_SECONDS, _WEEK),
    (WeightEmulation, "group_size"): (1 << 20, " weights; no layer is that wide"),
    (Target, "count"): (4096, " accelerators; no node has that many"),
    (AttributionSpec, "max_lives"): (1000, " server lives" + _COUNT),
    (ClusterSpec, "cpus"): (MAX_CONCURRENCY, " cores; no node has that many"),
    (ClusterSpec, "reference"): (MAX_COUNT, "; Ray has no node with that much"),
    (ClusterSpec, "candidates"): (MAX_COUNT, "; Ray has no node with that much"),
}
"""(model, field) -> (largest sensible absolute value, why); a subclass's field is bound by
its base's entry (`ScenarioBase` for every scenario kind)."""

_LEVELS = f"; a sweep of more than {MAX_LEVELS} levels would not finish"
ITEM_LIMITS: dict[tuple[type[BaseModel], str], tuple[int, str]] = {
    (FixedScenario, "concurrency"): (MAX_LEVELS, _LEVELS),
    (FixedScenario, "input_tokens"): (MAX_LEVELS, _LEVELS),
    (RecallSuite, "context_tokens"): (MAX_LEVELS, _LEVELS),
    (RecallSuite, "depths"): (MAX_LEVELS, _LEVELS),
    (PerfSpec, "scenarios"): (256, "; a perf stage that large would not finish"),
    (QualitySpec, "lm_eval"): (256, "; a quality stage that large would not finish"),
}
"""(model, list field) -> (most entries, why), where fewer than MAX_ITEMS make sense."""


def number(value: float) -> str:
    """1,000,000 or 0.5: a number as a message shows it."""
    if isinstance(value, int):
        return f"{value:,}"  # exact, however large (float() of 10**400 overflows)
    return f"{int(value):,}" if value.is_integer() else f"{value:,}"


def _rule(
    table: dict[tuple[type[BaseModel], str], tuple[int, str]], model: type[BaseModel], name: str
) -> tuple[int, str] | None:
    for owner in model.__mro__:
        rule = table.get((owner, name))
        if rule is not None:
            return rule
    return None


def _over_limit(value: Any, limit: int, why: str) -> tuple[KeyPath, str] | None:
    """(where in a list or mapping, or (), and the message) for the first value beyond `limit`."""
    if isinstance(value, list):
        items: list[tuple[Any, Any]] = list(enumerate(value))
    elif isinstance(value, dict):
        items = list(value.items())
    else:
        items = [(None, value)]
    for index, item in items:
        is_number = isinstance(item, int | float) and not isinstance(item, bool)
        # Infinity and NaN never get here: the schema refuses them.
        finite = isinstance(item, int) or (is_number and math.isfinite(item))
        if is_number and finite and abs(item) > limit:
            where = () if index is None else (index,)
            bound = f"at least {-limit:,}" if item < 0 else f"at most {limit:,}"
            return where, f"must be {bound}{why} (got {number(item)})"
    return None


def limit_problems(model: BaseModel, path: KeyPath = ()) -> Found:
    """Numbers beyond their bound and lists or mappings longer than theirs, in every model."""
    found: Found = []
    for name in type(model).model_fields:
        value = getattr(model, name)
        rule = _rule(LIMITS, type(model), name)
        over = _over_limit(value, *rule) if rule is not None else None
        if over:
            found.append(((*path, name, *over[0]), over[1]))
        if isinstance(value, list | dict):
            most, why = _rule(ITEM_LIMITS, type(model), name) or (MAX_ITEMS, "")
            if len(value) > most:
                found.append(
                    ((*path, name), f"must list at most {most:,} entries{why} (got {len(value):,})")
                )
                continue
        children = value if isinstance(value, list) else [value]
        for index, child in enumerate(children):
            if isinstance(child, BaseModel):
                where = (*path, name, index) if isinstance(value, list) else (*path, name)
                found += limit_problems(child, where)
    return found


def _seconds(seconds: float) -> str:
    return number(round(seconds)) if math.isfinite(seconds) else "more than 10**308"


def _runs(scenario: Any) -> int:
    """Runs of one scenario: its input lengths times its concurrency levels."""
    inputs = getattr(scenario, "input_tokens", None)
    levels = getattr(scenario, "concurrency", None)
    return (len(inputs) if isinstance(inputs, list) else 1) * (
        len(levels) if isinstance(levels, list) else 1
    )


def perf_total_problems(perf: PerfSpec | None) -> Found:
    """A perf stage too large as a whole, and a conversation longer than any context."""
    if perf is None:
        return []
    found: Found = []
    repeats = (perf.blocks or 2) * perf.rounds * (2 if perf.compare_to == "reference" else 1)
    requests = 0
    seconds = 0.0
    for index, s in enumerate(perf.scenarios):
        each = s.requests or 0
        if isinstance(s, MultiTurnScenario):
            each = s.conversations * s.turns if s.duration_s is None else 0
            history = s.shared_prefix_tokens + s.turns * (s.turn_input_tokens + s.output_tokens)
            if history > MAX_TOKENS:
                found.append(
                    (
                        ("scenarios", index, "turns"),
                        f"the last turn's prompt would hold {number(history)} tokens "
                        f"(at most {MAX_TOKENS:,}{_TOKENS})",
                    )
                )
        requests += (each + s.warmup) * _runs(s) * repeats
        seconds += (s.duration_s or 0.0) * _runs(s) * repeats
    if requests > MAX_PERF_REQUESTS:
        found.append(
            (
                ("scenarios",),
                f"the perf stage would send {number(requests)} requests (every scenario's "
                f"runs, blocks, rounds and sides; at most {MAX_PERF_REQUESTS:,}){_COUNT}",
            )
        )
    if seconds > MAX_SECONDS:
        found.append(
            (
                ("scenarios",),
                f"the perf stage would measure for {_seconds(seconds)} s (every "
                f"scenario's runs, blocks, rounds and sides; at most {MAX_SECONDS:,}{_WEEK})",
            )
        )
    return [(("perf", *path), message) for path, message in found]
