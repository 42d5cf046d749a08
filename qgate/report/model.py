"""The report: one versioned pydantic document; its field order is the format.

The report is the predicate of the signed in-toto Statement. It holds the raw
records (per-item suite results, per-request perf records) and every figure
derived from them, so that `qgate verify` can recompute the figures and reject
a report whose verdict does not follow from its data.

Perf summaries and comparisons are stored as the JSON form of the Perf
engineer's `ScenarioMetrics` / `MetricComparison` models (qgate/perf/metrics.py,
compare.py); keeping them as plain JSON here means verification compares the
recomputed JSON with the stored JSON exactly, whatever fields those models grow.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from qgate.attest.keys import SignerSource
from qgate.core.plan import Plan
from qgate.core.provenance import RunProvenance
from qgate.core.records import Record
from qgate.core.serving import EffectiveConfig, ServerStart
from qgate.core.verdict import Verdict
from qgate.perf.life_probes import LifeProbes
from qgate.perf.records import ScenarioRun
from qgate.quality.cache_auth import ReferenceProvenance
from qgate.quality.calibrate import CalibrationResult
from qgate.quality.noise_floor import FloorRecords
from qgate.quality.records import DivergenceRun, SuiteRun
from qgate.quality.reuse_records import PassRun
from qgate.quality.spec_counters import SpecSnapshot
from qgate.report.attribution import Attribution
from qgate.runtime.fingerprint import Fingerprint

# "2": reference provenance, per-position divergence logprobs (verify re-derives from them).
# Reports of schema "1" stay readable; verify says what it could not check in them.
SCHEMA_VERSION: Literal["2"] = "2"
SchemaVersion = Literal["1", "2"]
PREDICATE_TYPE = "https://qgate.dev/report/v1"

PerfStatus = Literal[
    "ran", "skipped: gates failed", "skipped: gates inconclusive", "skipped: --skip-perf", "ungated"
]
OverallVerdict = Literal["PASS", "FAIL", "INCONCLUSIVE", "UNGATED", "PREVIEW"]


class Artifact(Record):
    """One file the run wrote, by digest."""

    path: str = Field(description="Path relative to the run folder, POSIX separators.")
    sha256: str = Field(description="Hex sha256 of the file's bytes.")
    bytes: int = Field(ge=0, description="File size in bytes.")


class SignerInfo(Record):
    """Which key signed the report; inside the predicate so the signature covers it."""

    keyid: str = Field(description="securesystemslib key id of the signing key.")
    scheme: str = Field(description="Signature scheme, e.g. 'ecdsa-sha2-nistp256', 'ed25519'.")
    source: SignerSource = Field(
        description="Where the key came from; 'local-dev' is an unmanaged development key."
    )
    public_key_pem: str | None = Field(
        default=None, description="The public key (PEM), for convenience; never trust it alone."
    )


# 2: each quality verdict carries metric, comparator, n, power, min_detectable_drop, settled.
# 3: the warnings hold one on the candidate's changes not confirmed by the running server
# (gates/changes_applied.py), re-derived by verify; reports of 2 are verified without it.
# 4: reuse passes (gates/reuse.py STRICT): a missing or broken counter snapshot proves
# nothing, warm is judged against its cold pass; reports of 3 are verified by their own rules.
QUALITY_DERIVATION = 4
QUALITY_V2_FIELDS = ("metric", "comparator", "n", "power", "min_detectable_drop", "settled")
"""What derivation 2 added to a verdict; a derivation-1 report is compared without them."""


class QualitySection(Record):
    """Quality suites of both runtimes and the gate verdicts computed from them."""

    derivation: int = Field(
        default=1,
        ge=1,
        description="Version of the verdict fields derived from the records "
        "(QUALITY_DERIVATION when made); 1: gate, observed, limit, passed, underpowered, reason.",
    )

    runs: list[SuiteRun] = Field(
        default_factory=list, description="Per-suite per-item records, reference and candidate."
    )
    divergence: DivergenceRun | None = Field(
        default=None, description="Teacher-forced divergence records, if the suite ran."
    )
    verdicts: list[Verdict] = Field(
        default_factory=list,
        description="Gate verdicts (evaluate_quality, then evaluate_reuse), in gate order.",
    )
    passes: list[PassRun] = Field(
        default_factory=list,
        description="quality.reuse: both sides' passes (cold counters, then warm, restored, "
        "load), each suite's records and the server counters around it.",
    )
    speculative: list[SpecSnapshot] = Field(
        default_factory=list,
        description="Both sides' speculative-decoding counters before the first suite and after "
        "each (a profile with an acceptance gate; qgate/gates/speculative.py re-derives it).",
    )
    calibration: CalibrationResult | None = Field(
        default=None,
        description="What calibration to the reference decided for the math suite (its levels, "
        "their accuracy and flips), with the records it decided on; None: not calibrated.",
    )
    noise_floor: FloorRecords | None = Field(
        default=None,
        description="quality.noise_floor: the reference's second asks of its own items at "
        "another concurrency; the flip allowances it derived and the limits it marks are "
        "re-derived from these and the reference's runs (qgate/quality/noise_floor.py).",
    )


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

    @field_validator("reference", "candidate", "comparisons", mode="before")
    @classmethod
    def _json_form(cls, value: Any) -> Any:
        # accept ScenarioMetrics / MetricComparison objects as they come from the perf stage
        if isinstance(value, BaseModel):
            return value.model_dump(mode="json")
        if isinstance(value, list):
            return [v.model_dump(mode="json") if isinstance(v, BaseModel) else v for v in value]
        return value


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
PERF_DERIVATION = 10
ALONE = 10
"""The perf derivation from which life probes are judged against the reference's own."""
BOOTSTRAP_SEED = 0
"""The seed every run draws its bootstrap with (verify holds a report to it)."""


class PerfSection(Record):
    """The perf stage: raw request records and the figures derived from them."""

    status: PerfStatus = Field(description="Whether and why the perf stage ran.")
    bootstrap_resamples: int = Field(
        default=2000, ge=0, description="Bootstrap resamples used for ratio intervals."
    )
    bootstrap_seed: int = Field(
        default=BOOTSTRAP_SEED, description="Seed of the bootstrap, for re-derivation."
    )
    derivation: int = Field(
        default=1,
        ge=1,
        description="Version of the figures derived from the records (PERF_DERIVATION when "
        "made). `verify` recomputes a report of the current version exactly; one made by an "
        "older qgate, whose tables held fewer figures, must match on every figure it stores.",
    )
    runs: list[ScenarioRun] = Field(
        default_factory=list, description="Raw per-request records, both runtimes."
    )
    results: list[ScenarioResult] = Field(
        default_factory=list, description="Summaries, comparisons and checks per scenario."
    )
    gates: list[Verdict] = Field(
        default_factory=list,
        description="Perf gate verdicts (qgate.gates.speed) over the comparisons, in gate order.",
    )


class LivesSection(Record):
    """Every life graded (issue 44): the probes each server life answered at its start and
    after its idle pause, and a verdict per candidate life and kind (qgate/perf/life_probes.py)."""

    records: list[LifeProbes] = Field(
        default_factory=list, description="Each life's probe sets, in the order asked."
    )
    verdicts: list[Verdict] = Field(
        default_factory=list, description="life_verdicts over the records, candidate lives only."
    )
    excluded_rounds: list[int] = Field(
        default_factory=list,
        description="Perf rounds (0-based) a failed candidate life served: their runs stay in "
        "perf.runs but are kept out of every comparison (ratio) and speed gate.",
    )


class ReportHead(Record):
    """The fields every signed qgate report starts with, single or multi, in this order.

    Each kind narrows `schema_version` to its own versions (a field a subclass
    redeclares keeps its place). The fields both kinds hold after their own ones
    (stage timings, starts, artifacts, signer, plan, provenance) are declared
    once below as shared `Field`s: field order is the format, and the two kinds
    place their own fields between those, so they cannot live in this base.
    """

    schema_version: str = Field(description="Report format.")
    qgate_version: str = Field(description="qgate version that produced the report.")
    command_line: list[str] = Field(default_factory=list, description="argv of the run (redacted).")
    created_at: str = Field(description="UTC time the report was made, ISO 8601.")
    profile: dict[str, Any] = Field(
        description="The resolved profile (JSON form, redacted; a multi report's holds its "
        "`candidates:`)."
    )
    profile_sha256: str = Field(description="sha256 of the profile file as given.")
    fingerprint: Fingerprint | None = Field(
        default=None,
        description="Environment fingerprint: hardware, packages, checkpoint digests.",
    )


STAGE_TIMINGS: dict[str, float] = Field(
    default_factory=dict, description="Wall seconds per pipeline stage, in order."
)
STARTS: list[ServerStart] = Field(
    default_factory=list,
    description="Every server start of the run, in order, with its time to ready and the "
    "start-up phases the engine logged (empty in reports made before it was recorded).",
)
ARTIFACTS: list[Artifact] = Field(
    default_factory=list, description="Every other file the run wrote, by digest."
)
SIGNER = Field(default=None, description="The signing key; set by sign_report before signing.")
PLAN = Field(
    default=None,
    description="The run plan it followed: every server life, decided before any started "
    "(None in reports made before plans, and in the per-candidate reports of a multi run, "
    "whose plan is the multi report's).",
)
PROVENANCE = Field(
    default=None,
    description="Where it ran: the CI job (commit, ref, run id and URL, runner) and "
    "--metadata KEY=VALUE; None outside CI without metadata, and in reports made before.",
)


class Report(ReportHead):
    """The qgate report (predicate type https://qgate.dev/report/v1)."""

    schema_version: SchemaVersion = Field(default=SCHEMA_VERSION, description="Report format.")
    effective_configs: list[EffectiveConfig] = Field(
        default_factory=list, description="What each runtime reported about itself."
    )
    quality: QualitySection = Field(
        default_factory=QualitySection, description="Quality records and gate verdicts."
    )
    perf: PerfSection = Field(description="Perf records, figures and status.")
    verdict: OverallVerdict = Field(
        description="PASS, FAIL, INCONCLUSIVE (a non-inferiority gate showed neither; none "
        "failed), UNGATED (perf forced) or PREVIEW (dummy weights: speed only)."
    )
    target_mismatches: list[str] = Field(
        default_factory=list, description="Ways the machine differs from the profile's target."
    )
    emulated: list[str] = Field(
        default_factory=list, description="Components that were emulated, not native."
    )
    capability_notes: list[str] = Field(
        default_factory=list,
        description="What ran natively on this machine, what ran a fallback instead, and why.",
    )
    warnings: list[str] = Field(
        default_factory=list, description="Things people must look at that failed no gate."
    )
    stage_timings: dict[str, float] = STAGE_TIMINGS
    starts: list[ServerStart] = STARTS
    artifacts: list[Artifact] = ARTIFACTS
    signer: SignerInfo | None = SIGNER
    reference_provenance: ReferenceProvenance | None = Field(
        default=None, description="Where the reference's quality results came from (schema 2)."
    )
    plan: Plan | None = PLAN
    attribution: Attribution | None = Field(
        default=None,
        description="When the candidate failed and attribution was asked: which of its "
        "changes broke it (qgate/report/attribution.py).",
    )
    provenance: RunProvenance | None = PROVENANCE
    lives: LivesSection | None = Field(
        default=None,
        description="Life probes and their verdicts (`lives`); None when no life asked any.",
    )

    def all_verdicts(self) -> list[Verdict]:
        """Quality verdicts, then perf scenario checks, then perf gates, then life verdicts."""
        out = list(self.quality.verdicts)
        for result in self.perf.results:
            out.extend(result.verdicts)
        out.extend(self.perf.gates)
        if self.lives is not None:
            out.extend(self.lives.verdicts)
        return out
