"""Assemble the report from the stages' raw results and the one judge's verdicts (gates/judge.py),
which `verify` makes again from the report's evidence."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from qgate import __version__
from qgate.core.plan import Plan
from qgate.core.provenance import RunProvenance
from qgate.core.serving import ServerStart
from qgate.gates.judge import judge
from qgate.gates.judgement import PERF_DERIVATION, QUALITY_DERIVATION
from qgate.quality.calibrate import math_calibration
from qgate.report.inputs import ReportInputs
from qgate.report.model import PerfSection, QualitySection, Report
from qgate.report.multi_model import CandidateEntry, MultiReport
from qgate.report.multi_table import multi_verdict, table
from qgate.runtime.fingerprint import Fingerprint


def build_report(inputs: ReportInputs) -> Report:
    """The unsigned report; `write_report` redacts, digests artifacts and signs it.

    Every derived field comes from the one judge (gates/judge.py) over the candidate's
    evidence: `inputs.verdicts` are the run's quality verdicts, which the judge made already
    to decide the perf stage (`judged_with`: the profile the machine ran, default `profile`).
    """
    profile, evidence = inputs.profile, inputs.evidence
    judged = judge(
        profile,
        evidence,
        judged_with=inputs.judged_with,
        quality=list(inputs.verdicts),
        seed=inputs.bootstrap_seed,
    )
    resamples = profile.perf.bootstrap if profile.perf else 0
    perf = PerfSection(
        status=evidence.status,
        bootstrap_resamples=resamples,
        bootstrap_seed=inputs.bootstrap_seed,
        derivation=PERF_DERIVATION,
        runs=list(evidence.perf_runs),
        results=judged.scenarios,
        gates=judged.speed,
    )
    emulated = sorted({e for c in evidence.configs for e in c.emulated})
    return Report(
        qgate_version=__version__,
        command_line=list(sys.argv),
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        profile=profile.model_dump(mode="json"),
        profile_sha256=inputs.profile_sha256,
        fingerprint=inputs.fingerprint,
        effective_configs=list(evidence.configs),
        quality=QualitySection(
            derivation=QUALITY_DERIVATION,
            runs=list(evidence.runs),
            divergence=evidence.divergence,
            verdicts=judged.quality,
            passes=list(evidence.passes),
            speculative=list(evidence.speculative),
            calibration=math_calibration(profile.quality.math) if profile.quality.math else None,
            noise_floor=evidence.noise_floor,
        ),
        perf=perf,
        verdict=judged.verdict,
        target_mismatches=list(inputs.target_mismatches),
        emulated=emulated,
        capability_notes=list(inputs.capability_notes),
        warnings=judged.warnings,
        stage_timings=dict(inputs.stage_timings),
        starts=list(inputs.starts),
        plan=inputs.plan,
        reference_provenance=inputs.reference_provenance,
        provenance=inputs.provenance,
        attribution=inputs.attribution,
        lives=judged.lives,
        envelope=judged.envelope,
    )


def build_multi_report(
    *,
    profile: dict[str, Any],
    profile_sha256: str,
    fingerprint: Fingerprint | None,
    candidates: Sequence[CandidateEntry],
    stage_timings: dict[str, float],
    plan: Plan | None = None,
    starts: Sequence[ServerStart] = (),
    provenance: RunProvenance | None = None,
) -> MultiReport:
    """The unsigned multi report; the table and the verdict derived from the entries."""
    verdict, optional = multi_verdict(candidates)
    return MultiReport(
        qgate_version=__version__,
        command_line=list(sys.argv),
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        profile=profile,
        profile_sha256=profile_sha256,
        fingerprint=fingerprint,
        candidates=list(candidates),
        table=table(candidates),
        verdict=verdict,
        optional_failures=optional,
        stage_timings=dict(stage_timings),
        starts=list(starts),
        plan=plan,
        provenance=provenance,
    )
