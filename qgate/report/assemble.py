"""Assemble the report from the stages' raw results, with the functions `verify` recomputes."""

from __future__ import annotations

import sys
from collections.abc import Collection, Sequence
from datetime import UTC, datetime
from typing import Any

from qgate import __version__
from qgate.core.plan import Plan
from qgate.core.provenance import RunProvenance
from qgate.core.serving import EffectiveConfig, ServerStart
from qgate.core.verdict import Verdict
from qgate.gates.assembly import scenario_gates
from qgate.gates.changes_applied import change_warnings
from qgate.gates.life import excluded_rounds, life_verdicts
from qgate.gates.speed import report_gates
from qgate.perf.blocks import compare_blocks, pooled
from qgate.perf.compare import compare
from qgate.perf.life_probes import LifeProbes
from qgate.perf.metrics import summarize
from qgate.perf.records import ScenarioRun
from qgate.profile import PerfSpec, Profile
from qgate.profile.perf import is_preview
from qgate.quality.cache_auth import ReferenceProvenance
from qgate.quality.calibrate import math_calibration
from qgate.quality.noise_floor import FloorRecords, FloorSummary, floor_summary
from qgate.quality.records import DivergenceRun, SuiteRun
from qgate.quality.reuse_records import PassRun
from qgate.quality.spec_counters import SpecSnapshot
from qgate.report.attribution import Attribution
from qgate.report.model import (
    ALONE,
    BOOTSTRAP_SEED,
    PERF_DERIVATION,
    QUALITY_DERIVATION,
    LivesSection,
    PerfSection,
    PerfStatus,
    QualitySection,
    Report,
    ScenarioResult,
)
from qgate.report.multi_model import CandidateEntry, MultiReport
from qgate.report.multi_table import multi_verdict, table
from qgate.report.verdict import overall
from qgate.runtime.fingerprint import Fingerprint


def perf_results(
    spec: PerfSpec | None,
    runs: Sequence[ScenarioRun],
    *,
    resamples: int,
    seed: int,
    excluded: Collection[int] = (),
    floor: FloorSummary | None = None,
) -> list[ScenarioResult]:
    """Summaries of both runtimes, candidate/reference ratios, the candidate's stream checks
    and the scenario's probe gate (its graded probes, both sides' blocks and rounds) and
    graded-turn gate (a multi-turn scenario's graded sessions). The `excluded` rounds (a
    candidate life there failed its life probes) are in no ratio."""
    slo = spec.slo if spec else None
    by_key: dict[tuple[str, str], list[ScenarioRun]] = {}
    for r in runs:
        by_key.setdefault((r.scenario, r.role), []).append(r)
    names = list(dict.fromkeys(r.scenario for r in runs))
    out: list[ScenarioResult] = []
    for name in names:
        refs, cands = by_key.get((name, "reference"), []), by_key.get((name, "candidate"), [])
        ref = pooled(refs) if refs else None
        cand = pooled(cands) if cands else None
        out.append(
            ScenarioResult(
                scenario=name,
                reference=summarize(ref, slo).model_dump(mode="json") if ref else None,
                candidate=summarize(cand, slo).model_dump(mode="json") if cand else None,
                comparisons=compared(refs, cands, excluded, resamples=resamples, seed=seed),
                verdicts=scenario_gates(
                    spec, name, cand, refs, cands, floor, derivation=PERF_DERIVATION
                ),
            )
        )
    return out


def compared(
    refs: Sequence[ScenarioRun],
    cands: Sequence[ScenarioRun],
    excluded: Collection[int],
    *,
    resamples: int,
    seed: int,
) -> list[dict[str, Any]]:
    """The scenario's ratios from the rounds no failed life served ([]: none left)."""
    refs = [r for r in refs if r.round not in excluded]
    cands = [r for r in cands if r.round not in excluded]
    if not refs or not cands:
        return []
    got = compare_blocks(refs, cands, resamples=resamples, seed=seed, compare=compare)
    return [c.model_dump(mode="json") for c in got]


def lives_section(
    profile: Profile, suite_runs: Sequence[SuiteRun], records: Sequence[LifeProbes]
) -> LivesSection | None:
    """The life probes and their verdicts (None: no life asked any)."""
    if not records:
        return None
    verdicts = life_verdicts(profile.lives, suite_runs, records, alone=PERF_DERIVATION >= ALONE)
    return LivesSection(
        records=list(records),
        verdicts=verdicts,
        excluded_rounds=sorted(excluded_rounds(records, verdicts)),
    )


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
    warnings: Sequence[str] = (),
    reference_provenance: ReferenceProvenance | None = None,
    provenance: RunProvenance | None = None,
    attribution: Attribution | None = None,
    life_probes: Sequence[LifeProbes] = (),
    noise_floor: FloorRecords | None = None,
) -> Report:
    """The unsigned report; `write_report` redacts, digests artifacts and signs it."""
    resamples = profile.perf.bootstrap if profile.perf else 0
    lives = lives_section(profile, suite_runs, life_probes)
    excluded = lives.excluded_rounds if lives is not None else []
    floor = floor_summary(noise_floor, suite_runs)
    results = perf_results(
        profile.perf,
        perf_runs,
        resamples=resamples,
        seed=bootstrap_seed,
        excluded=excluded,
        floor=floor,
    )
    perf = PerfSection(
        status=perf_status,
        bootstrap_resamples=resamples,
        bootstrap_seed=bootstrap_seed,
        derivation=PERF_DERIVATION,
        runs=list(perf_runs),
        results=results,
        gates=report_gates(profile.perf, perf_status, results),
    )
    all_verdicts = list(verdicts) + [v for r in results for v in r.verdicts] + perf.gates
    all_verdicts += lives.verdicts if lives is not None else []
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
            verdicts=list(verdicts),
            passes=list(passes),
            speculative=list(speculative),
            calibration=math_calibration(profile.quality.math) if profile.quality.math else None,
            noise_floor=noise_floor,
        ),
        perf=perf,
        verdict=overall(all_verdicts, perf_status, is_preview(profile)),
        target_mismatches=list(target_mismatches),
        emulated=emulated,
        capability_notes=list(capability_notes),
        # the candidate's changes the running server did not confirm: derived here from what
        # the report holds, as verify re-derives it (quality derivation 3)
        warnings=[
            *warnings,
            *change_warnings(profile, effective_configs, passes, perf_runs, speculative),
        ],
        stage_timings=dict(stage_timings),
        starts=list(starts),
        plan=plan,
        reference_provenance=reference_provenance,
        provenance=provenance,
        attribution=attribution,
        lives=lives,
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
