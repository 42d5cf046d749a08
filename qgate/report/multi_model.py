"""The multi-candidate report: one reference, several candidates, one signature.

Its own predicate type (MULTI_PREDICATE_TYPE). Each candidate's entry holds
the complete single-candidate `Report` a single run of that candidate would
have made (so every check `qgate verify` makes of a single report applies to
it unchanged); the side-by-side table and the overall verdict are derived
from those reports (qgate/report/multi_table.py) and re-derived by verify.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from qgate.core.plan import Plan
from qgate.core.provenance import RunProvenance
from qgate.core.records import Record
from qgate.core.serving import ServerStart
from qgate.gates.judgement import OverallVerdict
from qgate.report.model import (
    ARTIFACTS,
    PLAN,
    PROVENANCE,
    SIGNER,
    STAGE_TIMINGS,
    STARTS,
    Artifact,
    Report,
    ReportHead,
    SignerInfo,
)

__all__ = [
    "MULTI_PREDICATE_TYPE",
    "MULTI_SCHEMA_VERSION",
    "CandidateEntry",
    "CandidateRow",
    "CandidateVerdict",
    "MultiReport",
    "RatioCell",
    "ScenarioRatios",
]

MULTI_SCHEMA_VERSION: Literal["1"] = "1"
MULTI_PREDICATE_TYPE = "https://qgate.dev/multi-report/v1"

CandidateVerdict = Literal["PASS", "FAIL", "INCONCLUSIVE", "UNGATED", "PREVIEW", "ERROR"]
"""A candidate's verdict; ERROR: its runtime failed (no report; the cause is recorded)."""


class CandidateEntry(Record):
    """One candidate: whether it must pass, and its complete single-candidate report."""

    name: str = Field(description="The candidate's name in the profile's `candidates:`.")
    required: bool = Field(description="A failing required candidate fails the run.")
    description: str = Field(default="", description="The profile's text for people.")
    report: Report | None = Field(
        default=None,
        description="The report a single run of this candidate would have made (unsigned; the "
        "multi report's signature covers it). None when the candidate's runtime failed.",
    )
    error: str | None = Field(
        default=None, description="Why the candidate could not be evaluated (its runtime failed)."
    )


class RatioCell(Record):
    """One candidate/reference ratio and its bootstrap interval, as the comparison stores it."""

    ratio: float | None = Field(description="candidate / reference.")
    ci_low: float | None = Field(default=None, description="Lower end of the 95% interval.")
    ci_high: float | None = Field(default=None, description="Upper end of the 95% interval.")


class ScenarioRatios(Record):
    """The headline speed ratios of one perf scenario."""

    scenario: str = Field(description="Scenario name (with '@cN' for a sweep level).")
    ratios: dict[str, RatioCell] = Field(
        description="Metric (output_throughput, request_output_tok_s.p50, "
        "request_decode_tok_s.p50, ttft_ms.p90) -> ratio."
    )
    prefix_cache_hit_rate: float | None = Field(
        default=None, description="The candidate's prefix-cache hit rate in this scenario."
    )


class CandidateRow(Record):
    """One row of the side-by-side table, derived from the candidate's report."""

    candidate: str = Field(description="Candidate name.")
    required: bool = Field(description="Whether it must pass.")
    verdict: CandidateVerdict = Field(description="The candidate report's verdict, or ERROR.")
    accuracy_deltas: dict[str, float] = Field(
        default_factory=dict, description="Suite -> candidate minus reference accuracy."
    )
    lost: int = Field(
        default=0, description="Items right on the reference, wrong here (all suites)."
    )
    gained: int = Field(default=0, description="Items wrong on the reference, right here.")
    mean_kld: float | None = Field(default=None, description="Mean KL(reference || candidate).")
    top1_agreement: float | None = Field(default=None, description="Top-1 token agreement.")
    perf_status: str | None = Field(default=None, description="The candidate's perf status.")
    speed: list[ScenarioRatios] = Field(
        default_factory=list, description="Speed ratios per scenario, in the report's order."
    )


class MultiReport(ReportHead):
    """The qgate multi-candidate report (predicate type https://qgate.dev/multi-report/v1)."""

    schema_version: Literal["1"] = Field(default=MULTI_SCHEMA_VERSION, description="Format.")
    candidates: list[CandidateEntry] = Field(description="One entry per candidate, in order.")
    table: list[CandidateRow] = Field(
        description="The side-by-side table, derived from the candidates' reports."
    )
    verdict: CandidateVerdict = Field(
        description="FAIL/UNGATED/ERROR when a required candidate is; PREVIEW or PASS otherwise."
    )
    optional_failures: list[str] = Field(
        default_factory=list,
        description="Optional candidates that did not pass (they do not decide the verdict).",
    )
    stage_timings: dict[str, float] = STAGE_TIMINGS
    starts: list[ServerStart] = STARTS
    artifacts: list[Artifact] = ARTIFACTS
    signer: SignerInfo | None = SIGNER
    plan: Plan | None = PLAN
    provenance: RunProvenance | None = PROVENANCE

    def entry(self, name: str) -> CandidateEntry | None:
        return next((c for c in self.candidates if c.name == name), None)


def verdict_of(entry: CandidateEntry) -> CandidateVerdict:
    """A candidate's verdict: its report's, or ERROR when it has none."""
    if entry.report is None:
        return "ERROR"
    verdict: OverallVerdict = entry.report.verdict
    return verdict
