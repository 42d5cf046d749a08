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

from pydantic import Field, field_validator

from qgate.attest.keys import SignerSource
from qgate.core.plan import Plan
from qgate.core.provenance import RunProvenance
from qgate.core.records import Record
from qgate.core.serving import EffectiveConfig, ServerStart
from qgate.core.verdict import Verdict
from qgate.gates.judgement import (
    BOOTSTRAP_SEED,
    LivesSection,
    OverallVerdict,
    PerfStatus,
    ScenarioResult,
)
from qgate.perf.records import ScenarioRun
from qgate.profile.agent import streamed_as_run
from qgate.profile.detect import rule_as_run
from qgate.quality.cache_auth import ReferenceProvenance
from qgate.quality.calibrate import CalibrationResult
from qgate.quality.noise_floor import FloorRecords
from qgate.quality.records import DivergenceRun, SuiteRun
from qgate.quality.reuse_records import PassRun
from qgate.quality.spec_counters import SpecSnapshot
from qgate.report.attribution import Attribution
from qgate.report.items_tree import ItemsRoot
from qgate.report.preregistration import PreregistrationRef
from qgate.runtime.fingerprint import Fingerprint

# "2": reference provenance, per-position divergence logprobs (verify re-derives from them).
# Reports of schema "1" stay readable; verify says what it could not check in them.
SCHEMA_VERSION: Literal["2"] = "2"
SchemaVersion = Literal["1", "2"]
PREDICATE_TYPE = "https://qgate.dev/report/v1"


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

    @field_validator("profile", mode="before")
    @classmethod
    def _rule_as_run(cls, value: Any) -> Any:
        """A report from before `rule` existed was judged by the point rule, one from before
        `streamed` asked its agent suites as is only: say so, so that verify and the views
        judge it as it ran rather than by today's defaults."""
        return streamed_as_run(rule_as_run(value))

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
    envelope: list[Verdict] = Field(
        default_factory=list,
        description="The pooled envelope gate over every probe answer the candidate gave while "
        "serving (perf derivation 11 on; gates/pooled.py); [] when it asked none, and in "
        "reports made before.",
    )
    preregistration: PreregistrationRef | None = Field(
        default=None,
        description="The statement of the plan, margins and alpha signed before any server "
        "started (report/preregistration.py); None when the run signed none, and in reports "
        "made before.",
    )
    items_root: ItemsRoot | None = Field(
        default=None,
        description="RFC 6962 root over every per-item record of the quality suites, for "
        "spot checks of one item (report/items_tree.py); set when the report is signed.",
    )

    def all_verdicts(self) -> list[Verdict]:
        """Quality verdicts, then perf scenario checks, then perf gates, then life verdicts,
        then the pooled envelope gate."""
        out = list(self.quality.verdicts)
        for result in self.perf.results:
            out.extend(result.verdicts)
        out.extend(self.perf.gates)
        if self.lives is not None:
            out.extend(self.lives.verdicts)
        out.extend(self.envelope)
        return out
