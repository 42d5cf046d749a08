"""What the one judge reads and what it decides (issue 54 item 1): a candidate's evidence,
the derivations it is judged by, and its verdict groups.

`Evidence` is one frozen value holding every raw observation a report signs for one
candidate against the reference (both sides' records, reference first). `judge` (judge.py)
turns it, with the signed profile and a `Derivation`, into a `Judgement`: the quality
verdicts, each perf scenario's figures and verdicts, the lives, the speed gates, the
warnings and the overall verdict. `qgate run` (report/assemble.py) stores a judgement,
`qgate verify` makes it again from the report's evidence and compares the two; the report's
views read its verdicts (`failed_answers` and `probes_failed` read a scenario's, here beside
the model that holds them, so that a view need import no gate). The derivation numbers
version what the judge derives.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from qgate.core.records import Record
from qgate.core.serving import EffectiveConfig
from qgate.core.verdict import Verdict
from qgate.perf.cache_sources import CacheSources
from qgate.perf.life_probes import LifeProbes
from qgate.perf.records import ScenarioRun
from qgate.quality.noise_floor import FloorRecords
from qgate.quality.records import DivergenceRun, SuiteRun
from qgate.quality.reuse_records import PassRun
from qgate.quality.spec_counters import SpecSnapshot

__all__ = [
    "ALONE",
    "BOOTSTRAP_SEED",
    "LIFE_SALTS",
    "PERF_DERIVATION",
    "POOLED",
    "QUALITY_DERIVATION",
    "QUALITY_V2_FIELDS",
    "REFERENCE_LIVES",
    "SHAPED",
    "Derivation",
    "Evidence",
    "Judgement",
    "LivesSection",
    "OverallVerdict",
    "PerfStatus",
    "ScenarioResult",
    "failed_answers",
    "probes_failed",
]

PerfStatus = Literal[
    "ran", "skipped: gates failed", "skipped: gates inconclusive", "skipped: --skip-perf", "ungated"
]
OverallVerdict = Literal["PASS", "FAIL", "INCONCLUSIVE", "UNGATED", "PREVIEW"]

# 2: each quality verdict carries metric, comparator, n, power, min_detectable_drop, settled.
# 3: the warnings hold one on the candidate's changes not confirmed by the running server
# (gates/changes_applied.py), re-derived by verify; reports of 2 are verified without it.
# 4: reuse passes (gates/reuse.py STRICT): a missing or broken counter snapshot proves
# nothing, warm is judged against its cold pass; reports of 3 are verified by their own rules.
# 5: a candidate whose divergence is cross-checked (quality.divergence.cross_check: always,
# or when it speculates) gets the divergence.cross_check gate, and its divergence gates fail
# as NOT TRUSTED when its scores disagree with its own generation (gates/cross_check.py).
# 6: a `rule: bound` max_drop over more than 40 paired items is judged by the score bound
# corrected to keep its level (gates/noninferiority.py CORRECTED_FROM, qgate/core/
# corrected_score.py), not Tango's plain one; reports of 5 and before by the plain one.
# 7: the exact bound (40 paired items or fewer) searches its p-value's supremum over the
# nuisance past its 61-point grid (qgate/core/exact_bound.py), and a `rule: bound` max_drop
# FAILs on the mirrored upper bound (bounds.loss_lower: exact, or corrected above 40 items),
# not Tango's plain lower one (gates/noninferiority.py REFINED_FROM); reports of 6 and before
# by the grid and the plain lower bound.
# 8: each tool-call and structured-output result (streamed too) gets `<result>.served`
# (gates/agent.py SERVED_FROM): FAIL when the candidate answered with an HTTP error items the
# reference served, which the accuracy gates count as wrong items alone and miss where the
# reference had them wrong too; reports of 7 and before are verified without it. Its FAIL
# reason quotes the server's message without the client's `POST <url>:` prefix. And a
# structured output cut by max_tokens that no continuation makes valid JSON for its schema
# (prose, a fence, a key the schema lacks) is `unconstrained`, not `truncated` (quality/
# agent_data.py PREFIX_FROM); reports of 7 and before re-grade every cut output `truncated`.
QUALITY_DERIVATION = 8
QUALITY_V2_FIELDS = ("metric", "comparator", "n", "power", "min_detectable_drop", "settled")
"""What derivation 2 added to a verdict; a derivation-1 report is compared without them."""

# 2: request output/decode rates, TTFT p90/p99, TPOT/E2E p99 and throughput intervals added.
# 3: a per-bucket time series (time_series) in the summaries, for runs that ask for one.
# 4: interleaved perf blocks (ScenarioRun.block): block ratios and intervals; one block as before.
# 5: pooled blocks keep the engine's counters (sum of each block's delta).
# 6: perf rounds in fresh lives (ScenarioRun.round): round ratios and intervals; one round as
#    before (the comparisons gain the round fields, their figures unchanged).
# 7: with rounds, each round is the unit: the ratio is the centre of the across-round interval
#    (Student's t over the round ratios, the ABBA order fitted from 4 rounds), which is its
#    interval, nothing within a round added again (qgate/perf/round_interval.py).
# 8: graded probes: a probe gate per scenario among its verdicts (perf.probes), and the ratios
#    of a scenario whose probes failed withheld from the speed gates and the headline.
# 9: graded sessions in multi-turn scenarios: a graded-turn gate per scenario among its
#    verdicts (perf.scenarios[].graded), the turns left out of the figures like probes, and
#    the ratios of a scenario whose graded turns failed withheld as a probe failure's are.
# 10: life probes judged against the reference's own probes of their kind (asked alone), not
#     its batched quality-stage answer, where its lives asked that kind (gates/life.py).
# 11: the pooled envelope gate (gates/pooled.py: every probe answer the candidate gave while
#     serving, one Clopper-Pearson bound on the rate of broken answers against
#     `envelope.max_broken`), and a candidate life that judged no item INCONCLUSIVE, not PASS
#     (its round stays in the ratios: only a failed life's is kept out).
# 12: the reference's own lives graded (gates/reference_lives.py): a verdict per reference life
#     and kind, INCONCLUSIVE for a broken one (named by life, round and node), whose round is
#     kept out of the ratios, whose answers set no floor, and beside which the candidate's
#     lives of that round and kind are INCONCLUSIVE.
# 13: perf probes at the prompt length a scenario serves (perf.probes.shaped, qgate/perf/
#     shaped_probes.py): verify holds a shaped scenario's probes to its preamble budget.
# 14: each side's cache provenance beside the scenario's figures (ScenarioResult.cache,
#     qgate/perf/cache_sources.py), and salted perf prompts (qgate/perf/salts.py).
# 15: life probes salted by side, life, round, purpose and moment, each ask apart
#     (LifeProbes.cache_salt, qgate/perf/salts.py life_scope), where the side's engine serves
#     cache_salt: no life probe reads KV its quality stage, another probe set or side wrote.
PERF_DERIVATION = 15
ALONE = 10
"""The perf derivation from which life probes are judged against the reference's own."""
POOLED = 11
"""The perf derivation from which the envelope's probe answers are pooled into one gate and
a life with nothing judged is INCONCLUSIVE."""
REFERENCE_LIVES = 12
"""The perf derivation from which the reference's own lives get verdicts and a broken one
makes the run INCONCLUSIVE."""
SHAPED = 13
"""The perf derivation from which a scenario's probes are asked at its prompt length where the
profile shapes them, and verify holds their records to it."""
LIFE_SALTS = 15
"""The perf derivation from which a life's probe sets carry their cache-salt scope where the
side's engine serves cache_salt, and verify holds them to it."""
BOOTSTRAP_SEED = 0
"""The seed every run draws its bootstrap with (verify holds a report to it)."""


class ScenarioResult(Record):
    """Derived figures of one perf scenario: summaries, ratios and checks."""

    scenario: str = Field(description="Scenario name (with '@cN' for a sweep level).")
    reference: dict[str, Any] | None = Field(
        default=None, description="ScenarioMetrics of the reference run (summarize), as JSON."
    )
    candidate: dict[str, Any] | None = Field(
        default=None, description="ScenarioMetrics of the candidate run (summarize), as JSON."
    )
    comparisons: list[dict[str, Any]] = Field(
        default_factory=list,
        description="MetricComparison list, candidate over reference (compare), as JSON.",
    )
    verdicts: list[Verdict] = Field(
        default_factory=list, description="Scenario checks of the candidate (scenario_verdicts)."
    )
    cache: dict[str, CacheSources] = Field(
        default_factory=dict,
        description="Per side ('reference', 'candidate'): where its prompt tokens came from "
        "(qgate/perf/cache_sources.py; perf derivation 14 on).",
    )

    @field_validator("reference", "candidate", "comparisons", mode="before")
    @classmethod
    def _json_form(cls, value: Any) -> Any:
        # accept ScenarioMetrics / MetricComparison objects as they come from the perf stage
        if isinstance(value, BaseModel):
            return value.model_dump(mode="json")
        if isinstance(value, list):
            return [v.model_dump(mode="json") if isinstance(v, BaseModel) else v for v in value]
        return value


def probes_failed(verdicts: Iterable[Verdict], name: str) -> bool:
    """Whether scenario run `name`'s probe gate or its graded-turn gate (a multi-turn
    scenario's graded sessions, qgate/gates/turns.py) failed: its ratios are then
    withheld."""
    return failed_answers(verdicts, name) is not None


def failed_answers(verdicts: Iterable[Verdict], name: str) -> str | None:
    """'probes' or 'turns': which graded answers of scenario run `name` failed their gate
    (probes first); None: neither."""
    failed = [v.gate for v in verdicts if not v.passed]
    for what in ("probes", "turns"):
        if any(g.startswith(f"perf.{name}.{what}.") for g in failed):
            return what
    return None


class LivesSection(Record):
    """Every life graded (issue 44): the probes each server life answered at its start and
    after its idle pause, and a verdict per life and kind (qgate/perf/life_probes.py): the
    candidate's, and from perf derivation 12 the reference's (gates/reference_lives.py)."""

    records: list[LifeProbes] = Field(
        default_factory=list, description="Each life's probe sets, in the order asked."
    )
    verdicts: list[Verdict] = Field(
        default_factory=list,
        description="The reference lives' verdicts (perf derivation 12 on), then life_verdicts "
        "over the candidate's lives.",
    )
    excluded_rounds: list[int] = Field(
        default_factory=list,
        description="Perf rounds (0-based) a failed candidate life or a broken reference life "
        "served: their runs stay in perf.runs but are kept out of every comparison (ratio) "
        "and speed gate.",
    )


class Derivation(Record):
    """The derivations a judgement is made by: the current ones in `qgate run`, the signer's
    in `qgate verify` (report/verify/derivation.py)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    quality: int = Field(default=QUALITY_DERIVATION, ge=1, description="Quality derivation.")
    perf: int = Field(default=PERF_DERIVATION, ge=1, description="Perf derivation.")


CURRENT = Derivation()
"""This qgate's derivations: what `qgate run` judges by."""


class Evidence(Record):
    """Every raw observation the report signs for one candidate against the reference: what
    the judge reads and nothing it derives. Both sides' records, reference first."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    runs: tuple[SuiteRun, ...] = Field(default=(), description="The quality suites' records.")
    divergence: DivergenceRun | None = Field(
        default=None, description="Teacher-forced divergence records, if the suite ran."
    )
    passes: tuple[PassRun, ...] = Field(default=(), description="The reuse passes' records.")
    speculative: tuple[SpecSnapshot, ...] = Field(
        default=(), description="Speculative-decoding counters around the suites."
    )
    configs: tuple[EffectiveConfig, ...] = Field(
        default=(), description="What each server reported of its configuration."
    )
    noise_floor: FloorRecords | None = Field(
        default=None, description="The reference's second asks of its own items."
    )
    perf_runs: tuple[ScenarioRun, ...] = Field(
        default=(), description="The perf stage's per-request records, both sides."
    )
    life_probes: tuple[LifeProbes, ...] = Field(
        default=(), description="Each server life's start and idle probes."
    )
    host: str | None = Field(
        default=None,
        description="The machine qgate ran on (the fingerprint's hostname): the node a life "
        "recorded without one ran on, as a broken reference life's verdict names it.",
    )
    status: PerfStatus = Field(
        default="ran",
        description="What the perf stage did, as the run decided from its quality verdicts and "
        "its flags (the judge holds it to the verdicts).",
    )


class Judgement(BaseModel):
    """Every verdict group of one candidate, as `judge` made it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    quality: list[Verdict] = Field(description="The quality verdicts, in report order.")
    scenarios: list[ScenarioResult] = Field(description="Each perf scenario's figures.")
    lives: LivesSection | None = Field(description="The lives' verdicts (None: no probes).")
    speed: list[Verdict] = Field(description="The speed gates over the comparisons.")
    envelope: list[Verdict] = Field(
        default_factory=list,
        description="The pooled envelope gate (perf derivation 11 on; []: no probe asked).",
    )
    warnings: list[str] = Field(description="What the gates leave to read, in order.")
    verdict: OverallVerdict = Field(description="The overall verdict.")

    def all_verdicts(self) -> list[Verdict]:
        """Quality, then each scenario's, then the speed gates, then the lives', then the
        pooled envelope's (report order)."""
        out = list(self.quality)
        for result in self.scenarios:
            out.extend(result.verdicts)
        out.extend(self.speed)
        if self.lives is not None:
            out.extend(self.lives.verdicts)
        out.extend(self.envelope)
        return out
