"""The perf block of a profile: workload scenarios, SLOs and `PerfSpec`.

Speed gates and published figures (`PerfGate`, `PublishedFigure`) and their
cross-checks live in qgate/profile/perf.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal, Self

from pydantic import Discriminator, Field, Tag, field_validator, model_validator

from qgate.profile.base import Fraction, KeyIssue, KeyPath, Strict
from qgate.profile.perf import PerfGate, PublishedFigure, check_selectors

__all__ = [
    "FixedScenario",
    "GradedTurns",
    "MultiTurnScenario",
    "PerfProbes",
    "PerfSpec",
    "Scenario",
    "ScenarioBase",
    "Slo",
    "TraceScenario",
]

DEFAULT_BUCKET_S = 60.0
"""Width of a time-series bucket when a scenario asks for a series without one."""
# A week at the default width; wider buckets for longer runs (profile/checks.py refuses more).
MAX_BUCKETS = 20_000


MIN_GATED_ROUNDS = 3
"""The fewest perf rounds (above 1) a profile with speed gates may ask (qgate/perf/
round_interval.py: each round is the unit of the across-round interval)."""
ROUNDS_TOO_FEW = (
    "2 rounds cannot bound a speed gate: the across-round 95% interval is the mean of the 2 "
    "round log-ratios -/+ t(0.975, 1) = 12.7 x s / sqrt(2), about 9 round standard deviations "
    "each side; ask for rounds: 3 or more (3: -/+ 2.5 s; 4: -/+ 2.2 s with the ABBA order "
    "fitted; 6: -/+ 1.1 s), or rounds: 1 (the interval within one life)"
)


class ScenarioBase(Strict):
    name: str = Field(min_length=1, max_length=128, description="Unique scenario name.")
    warmup: int = Field(default=2, ge=0, description="Requests sent first and not measured.")
    requests: int | None = Field(default=None, ge=1, description="Measured requests.")
    duration_s: float | None = Field(
        default=None,
        gt=0,
        description="Or: measure this long (seconds; requests in flight at the end are "
        "finished and counted). Not together with requests.",
    )
    series_bucket_s: float | None = Field(
        default=None,
        ge=1,
        description="Bucket width in seconds of the time series (output tok/s, requests, TTFT "
        "p50/p90 per bucket) in the report; default 60 for a duration-bound scenario, no "
        "series for a counted one.",
    )

    @model_validator(mode="after")
    def _count_or_duration(self) -> Self:
        if self.requests is None and self.duration_s is None:
            self.requests = 5
        return self


class FixedScenario(ScenarioBase):
    """Fixed input/output token counts (exact: ignore_eos + min_tokens)."""

    kind: Literal["fixed"] = Field(default="fixed", description="Scenario kind.")
    input_tokens: int | list[Annotated[int, Field(ge=1)]] = Field(
        description="Prompt length in tokens, exact; a list is an input-length matrix: one run "
        "per length (named name@inN), each with its own warm-ups and measured requests."
    )
    output_tokens: int = Field(ge=1, description="Output length in tokens, exact.")
    concurrency: int | list[Annotated[int, Field(ge=1)]] = Field(
        default=1, description="Requests in flight; a list sweeps levels."
    )
    request_rate: float | None = Field(
        default=None, gt=0, description="Open loop: arrivals per second (Poisson/gamma)."
    )
    burstiness: float = Field(default=1.0, gt=0, description="Gamma shape; 1.0 is Poisson.")

    @field_validator("concurrency", "input_tokens")
    @classmethod
    def _positive(cls, v: int | list[int]) -> int | list[int]:
        if isinstance(v, int) and v < 1:
            raise ValueError("must be at least 1")
        if isinstance(v, list) and not v:
            raise ValueError("must list at least one level")
        return v


class GradedTurns(Strict):
    """Graded sessions inside a multi-turn scenario (issue 42): agent sessions whose turns ask
    what only earlier turns said, paired per turn with the reference's answers.

    Each session is a chat (`/v1/chat/completions`, greedy) over a shared system prompt whose
    history grows turn by turn, so prefix caching serves the earlier turns again. Turns come
    in fours: two plant a code and add a number to a running total, the third asks the code
    planted two turns back, the fourth the running total (qgate/perf/sessions.py: generated
    from `seed`, versioned). The sessions run together, as many as the scenario's
    conversations unless `sessions` says, among its load. Per scenario, a graded turn
    counts as correct on a side when every ask of it (each block and round) was; the gate is
    the math gates' own: turns lost beyond the reference's own (a turn the reference answered
    both right and wrong across its asks), and the one-sided exact McNemar test.
    """

    sessions: int | None = Field(
        default=None,
        ge=1,
        le=256,
        description="Graded sessions per scenario run (default: the scenario's conversations).",
    )
    turns: int = Field(
        default=8,
        ge=3,
        le=64,
        description="Turns per session; turns 3, 4, 7, 8, ... (1-based) are graded.",
    )
    seed: int = Field(default=0, ge=0, description="Seed of the generated sessions.")
    max_flips: int = Field(
        default=1,
        ge=0,
        le=1024,
        description="Graded turns the candidate may lose (reference right, candidate wrong) "
        "beyond the reference's own flips across its asks, before the gate fails.",
    )
    significance: bool = Field(
        default=True,
        description="Also fail when the one-sided exact McNemar test finds the candidate's "
        "turns worse at `alpha`.",
    )
    alpha: float = Field(default=0.05, gt=0, lt=1, description="Level of that test.")


class MultiTurnScenario(ScenarioBase):
    """Agent-like conversations that reuse a long shared prefix and a growing history.

    Counted: `conversations` x `turns` requests. With `duration_s`: `conversations`
    at a time until the time is up, a new one (from the shared prefix) as one ends.
    """

    kind: Literal["multi_turn"] = Field(description="Scenario kind.")
    conversations: int = Field(
        default=4,
        ge=1,
        description="Concurrent conversations (with duration_s: kept going, a new one "
        "starting as one ends).",
    )
    turns: int = Field(default=4, ge=1, description="Turns per conversation.")
    shared_prefix_tokens: int = Field(default=1024, ge=0, description="Shared system prefix.")
    turn_input_tokens: int = Field(default=64, ge=1, description="New user/tool tokens a turn.")
    output_tokens: int = Field(default=32, ge=1, description="Output tokens a turn, exact.")
    think_time_s: float = Field(default=0.0, ge=0, description="Pause between turns.")
    graded: GradedTurns | None = Field(
        default=None,
        description="Graded sessions asked among this scenario's load, each turn answerable "
        "only from earlier ones, gated per turn against the reference (not in its figures).",
    )


class TraceScenario(ScenarioBase):
    """Replay of a JSONL trace of (timestamp, input_tokens, output_tokens)."""

    kind: Literal["trace"] = Field(description="Scenario kind.")
    path: Path = Field(description="JSONL trace file.")
    time_scale: float = Field(default=1.0, gt=0, description="Multiply trace timestamps.")


def _scenario_kind(v: Any) -> str:
    if isinstance(v, dict):
        return str(v.get("kind", "fixed"))
    return str(getattr(v, "kind", "fixed"))


Scenario = Annotated[
    Annotated[FixedScenario, Tag("fixed")]
    | Annotated[MultiTurnScenario, Tag("multi_turn")]
    | Annotated[TraceScenario, Tag("trace")],
    Discriminator(_scenario_kind),
]


class Slo(Strict):
    """Service-level objectives for goodput."""

    ttft_ms: float | None = Field(default=None, gt=0, description="Time to first token, ms.")
    tpot_ms: float | None = Field(default=None, gt=0, description="Time per output token, ms.")
    e2e_ms: float | None = Field(default=None, gt=0, description="End-to-end latency, ms.")


class PerfProbes(Strict):
    """Graded probes inside every perf scenario (issue 44): math items asked among the load.

    The items are the first `items` of the math suite's short form that the reference
    answered correctly in its quality stage (the same items on both sides), asked with the
    quality suites' sampling (greedy, the math suite's max_tokens and seed). Each answer is
    graded against the item's known answer; per scenario, an item counts as correct on a
    side when every ask of it (every block and round) was. The gate per scenario is the math
    gates' own (lost items, exact one-sided McNemar); a scenario whose probes fail keeps its
    records but its ratios are withheld from the headline and the speed gates.
    """

    items: int = Field(
        default=4,
        ge=0,
        le=64,
        description="Probe items asked in every scenario (each sweep level, block and round), "
        "at least once each; more when `probe_share` of the scenario's requests is more. "
        "0: no probes. Needs a math suite in `quality`.",
    )
    max_flips: int | None = Field(
        default=None,
        ge=0,
        le=64,
        description="Items a scenario's candidate may lose (reference correct, candidate "
        "wrong) before its probe gate fails: the allowance for the reference's own noise "
        "under load (greedy answers can change with the batch). Unset: derived from "
        "`quality.noise_floor` when the profile measures it (ceil(upper x items), at least "
        "1), else 1.",
    )
    significance: bool = Field(
        default=True,
        description="Also fail a scenario whose one-sided exact McNemar test finds the "
        "candidate's probes worse at `alpha`.",
    )
    alpha: float = Field(default=0.05, gt=0, lt=1, description="Level of that test.")
    shaped: Literal["auto", "always", "never"] = Field(
        default="auto",
        description="Probes at the prompt length a scenario serves: the item in the math "
        "suite's long form, its preamble cut to the scenario's prompt tokens (a fixed "
        "scenario's input length, a conversation's last turn) less 96. 'auto': where that "
        "length is past the longest prompt the quality suites grade (math.long, recall, the "
        "context ladder), so every length the perf stage serves is graded; 'always': every "
        "scenario long enough for a 128-token preamble; 'never': the short form everywhere.",
    )


class PerfSpec(Strict):
    """The perf stage; it runs only when every quality gate passed."""

    scenarios: list[Scenario] = Field(min_length=1, description="Workloads, run in order.")
    compare_to: Literal["reference", "none"] = Field(
        default="reference", description="Run the same scenarios on the reference as baseline."
    )
    slo: Slo | None = Field(default=None, description="SLOs for goodput.")
    max_error_rate: Fraction = Field(
        default=0.0, description="Share of failed or short responses a scenario may have."
    )
    probe_share: Fraction = Field(
        default=0.05,
        description="Probe requests per measured request of a scenario (TEST01); a scenario "
        "asks at least `probes.items` probes (and at least one after every 1/share requests "
        "in a duration-bound one).",
    )
    probes: PerfProbes = Field(
        default_factory=PerfProbes,
        description="Graded probes in every scenario and their gate (items, max_flips, "
        "significance). The perf figures leave the probe requests out.",
    )
    bootstrap: int = Field(default=2000, ge=100, description="Bootstrap resamples for ratio CIs.")
    blocks: int | None = Field(
        default=None,
        ge=1,
        le=20,
        description="Blocks per side, each running every scenario with its warm-ups. Runtimes "
        "side by side (engine.placement) interleave them (reference, candidate, reference, "
        "...) and each ratio's interval widens to cover the spread of its per-block ratios. "
        "Default: 2 side by side, 1 in sequence.",
    )
    rounds: int = Field(
        default=1,
        ge=1,
        le=10,
        description="Rounds of perf, each in fresh server lives of both sides (a restart "
        "between rounds), in ABBA order: round 1 is the run's own perf (reference, then "
        "candidate), round 2 starts the candidate first, round 3 the reference, and so on; "
        "side by side, each round starts both at once and its interleaving begins with the "
        "other side in even rounds. Rounds 2 and later run only when the candidate's gates "
        "passed and repeat every scenario with all its blocks; quality is not asked again. "
        "With rounds, each round is the unit: a ratio is the mean of its round log-ratios "
        "and its 95% interval Student's t over them (the ABBA order fitted from 4 rounds), "
        "so it holds across restarts, not only within one life. Needs compare_to: "
        "reference; with speed gates, 1 or at least 3 (2 rounds bound nothing: t is 12.7).",
    )
    gates: list[PerfGate] = Field(
        default_factory=list,
        description="Speed gates on candidate/reference ratios, judged on their bootstrap 95% "
        "interval (min_ratio: lower bound >= limit; max_ratio: upper bound <= limit); a "
        "failed one fails the run like a quality gate.",
    )
    published: list[PublishedFigure] = Field(
        default_factory=list,
        description="Published figures shown beside the measured ones, with the ratio "
        "(display only; conditions may differ).",
    )

    @model_validator(mode="after")
    def _unique_names(self) -> Self:
        seen: dict[str, int] = {}
        issues: list[tuple[KeyPath, str]] = []
        for index, scenario in enumerate(self.scenarios):
            first = seen.setdefault(scenario.name.casefold(), index)
            if first != index:
                other = self.scenarios[first].name
                case = "" if other == scenario.name else f" ({other!r} differs only in case)"
                issues.append(
                    (
                        ("scenarios", index, "name"),
                        f"duplicate scenario name {scenario.name!r}{case}; names are folders",
                    )
                )
        issues += check_selectors(self.scenarios, self.gates, self.published, self.compare_to)
        if self.rounds > 1 and self.compare_to != "reference":
            issues.append(
                (("rounds",), "rounds > 1 repeat both sides: needs compare_to: reference")
            )
        if self.gates and 1 < self.rounds < MIN_GATED_ROUNDS:
            issues.append((("rounds",), ROUNDS_TOO_FEW))
        if issues:
            raise KeyIssue(issues)
        return self
