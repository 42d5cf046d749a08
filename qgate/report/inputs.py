"""What one candidate's report is built from, as one frozen value (issue 54: "Evidence is one
value"): the evidence the one judge reads (gates/judgement.py `Evidence`: every raw
observation the report signs) and the run's facts signed beside it. `build_report`
(report/assemble.py) takes this one value; `qgate verify` judges the same `Evidence` again
from the report (report/verify/recompute.py `evidence_of`).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, SkipValidation, model_validator

from qgate.core.plan import Plan
from qgate.core.provenance import RunProvenance
from qgate.core.serving import ServerStart
from qgate.core.verdict import Verdict
from qgate.gates.judgement import BOOTSTRAP_SEED, Evidence
from qgate.profile import Profile
from qgate.quality.cache_auth import ReferenceProvenance
from qgate.report.attribution import Attribution
from qgate.runtime.fingerprint import Fingerprint

__all__ = ["ReportInputs"]


class ReportInputs(BaseModel):
    """One candidate's evidence and the run's facts, everything its report is built from."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    profile: Profile = Field(
        description="The profile as written (fallbacks included): what the report signs and "
        "`verify --profile FILE` compares with."
    )
    profile_sha256: str = Field(description="sha256 of the profile file.")
    fingerprint: Fingerprint | None = Field(description="The machine and packages, if taken.")
    evidence: Evidence = Field(
        description="Every raw observation the report signs, both sides (its host the "
        "fingerprint's hostname)."
    )
    verdicts: tuple[Verdict, ...] = Field(
        description="The quality verdicts the judge made already to decide the perf stage."
    )
    # Kept as the machine ran it, not validated again: engine.cpu_dtype writes the chosen dtype
    # into both sides' args, which a profile as written may not hold.
    judged_with: SkipValidation[Profile | None] = Field(
        default=None,
        description="The profile the machine ran (engine.cpu_dtype, fallbacks); None: `profile`.",
    )
    target_mismatches: tuple[str, ...] = Field(
        default=(), description="How the machine differs from the profile's target."
    )
    capability_notes: tuple[str, ...] = Field(
        default=(), description="What the machine could not do as asked, and what ran instead."
    )
    stage_timings: dict[str, float] = Field(
        default_factory=dict, description="Seconds per stage of the run."
    )
    plan: Plan | None = Field(default=None, description="What the run decided before it began.")
    starts: tuple[ServerStart, ...] = Field(
        default=(), description="The server starts of this candidate and the reference."
    )
    bootstrap_seed: int = Field(
        default=BOOTSTRAP_SEED, description="Seed of the perf intervals' bootstrap."
    )
    reference_provenance: ReferenceProvenance | None = Field(
        default=None, description="Where the reference's results came from (cache or fresh)."
    )
    provenance: RunProvenance | None = Field(
        default=None, description="The CI job, --metadata and cluster of the run."
    )
    attribution: Attribution | None = Field(
        default=None, description="Which change did it: the trials, if searched."
    )

    @model_validator(mode="after")
    def _host_is_the_fingerprints(self) -> ReportInputs:
        host = self.fingerprint.hostname if self.fingerprint is not None else None
        if self.evidence.host != host:
            raise ValueError(
                f"evidence.host: {self.evidence.host!r}, the fingerprint's hostname {host!r}"
            )
        return self
