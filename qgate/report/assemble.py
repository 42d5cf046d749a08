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
from qgate.core.serving import EffectiveConfig, ServerStart
from qgate.core.verdict import Verdict
from qgate.gates.judge import judge
from qgate.gates.judgement import (
    BOOTSTRAP_SEED,
    PERF_DERIVATION,
    QUALITY_DERIVATION,
    Evidence,
    PerfStatus,
)
from qgate.perf.life_probes import LifeProbes
from qgate.perf.records import ScenarioRun
from qgate.profile import Profile
from qgate.quality.cache_auth import ReferenceProvenance
from qgate.quality.calibrate import math_calibration
from qgate.quality.noise_floor import FloorRecords
from qgate.quality.records import DivergenceRun, SuiteRun
from qgate.quality.reuse_records import PassRun
from qgate.quality.spec_counters import SpecSnapshot
from qgate.report.attribution import Attribution
from qgate.report.model import PerfSection, QualitySection, Report
from qgate.report.multi_model import CandidateEntry, MultiReport
from qgate.report.multi_table import multi_verdict, table
from qgate.runtime.fingerprint import Fingerprint


def build_report(
    *,
    profile: Profile,
    profile_sha256: str,
    fingerprint: Fingerprint | None,
    effective_configs: Sequence[EffectiveConfig],
    suite_runs: Sequence[SuiteRun],
    divergence: DivergenceRun | None,
    passes: Sequence[PassRun] = (),
    speculative: Sequence[SpecSnapshot] = (),
    verdicts: Sequence[Verdict],
    perf_status: PerfStatus,
    perf_runs: Sequence[ScenarioRun],
    target_mismatches: Sequence[str],
    stage_timings: dict[str, float],
    plan: Plan | None = None,
    starts: Sequence[ServerStart] = (),
    bootstrap_seed: int = BOOTSTRAP_SEED,
    capability_notes: Sequence[str] = (),
    reference_provenance: ReferenceProvenance | None = None,
    provenance: RunProvenance | None = None,
    attribution: Attribution | None = None,
    life_probes: Sequence[LifeProbes] = (),
    noise_floor: FloorRecords | None = None,
    judged_with: Profile | None = None,
) -> Report:
    """The unsigned report; `write_report` redacts, digests artifacts and signs it.

    Every derived field comes from the one judge (gates/judge.py) over the candidate's
    evidence: `verdicts` are the run's quality verdicts, which the judge made already to
    decide the perf stage (`judged_with`: the profile the machine ran, default `profile`).
    """
    evidence = Evidence(
        runs=tuple(suite_runs),
        divergence=divergence,
        passes=tuple(passes),
        speculative=tuple(speculative),
        configs=tuple(effective_configs),
        noise_floor=noise_floor,
        perf_runs=tuple(perf_runs),
        life_probes=tuple(life_probes),
        host=fingerprint.hostname if fingerprint is not None else None,
        status=perf_status,
    )
    judged = judge(
        profile,
        evidence,
        judged_with=judged_with,
        quality=verdicts,
        seed=bootstrap_seed,
    )
    resamples = profile.perf.bootstrap if profile.perf else 0
    perf = PerfSection(
        status=perf_status,
        bootstrap_resamples=resamples,
        bootstrap_seed=bootstrap_seed,
        derivation=PERF_DERIVATION,
        runs=list(perf_runs),
        results=judged.scenarios,
        gates=judged.speed,
    )
    emulated = sorted({e for c in effective_configs for e in c.emulated})
    return Report(
        qgate_version=__version__,
        command_line=list(sys.argv),
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        profile=profile.model_dump(mode="json"),
        profile_sha256=profile_sha256,
        fingerprint=fingerprint,
        effective_configs=list(effective_configs),
        quality=QualitySection(
            derivation=QUALITY_DERIVATION,
            runs=list(suite_runs),
            divergence=divergence,
            verdicts=judged.quality,
            passes=list(passes),
            speculative=list(speculative),
            calibration=math_calibration(profile.quality.math) if profile.quality.math else None,
            noise_floor=noise_floor,
        ),
        perf=perf,
        verdict=judged.verdict,
        target_mismatches=list(target_mismatches),
        emulated=emulated,
        capability_notes=list(capability_notes),
        warnings=judged.warnings,
        stage_timings=dict(stage_timings),
        starts=list(starts),
        plan=plan,
        reference_provenance=reference_provenance,
        provenance=provenance,
        attribution=attribution,
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
