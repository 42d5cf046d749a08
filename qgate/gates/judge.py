"""The one judge (issue 54 item 1): every verdict group of one candidate from its evidence.

`judge(profile, evidence, derivation)` makes, in report order, the quality verdicts, each perf
scenario's summaries, ratios and verdicts, the lives' verdicts and the rounds a failed life
served, the speed gates, the warnings and the overall verdict. `qgate run` calls it once the
perf stage ran (report/assemble.py), with this qgate's derivations; `qgate verify` calls it
on the report's own evidence with the signer's derivations and compares every group with
the stored one (report/verify/recompute.py). Nothing else assembles a verdict group: a new
gate family joins here and is made by the one and recomputed by the other.

The quality verdicts decide whether the perf stage runs, so `qgate run` makes them first
with `quality_verdicts` (the judge's own group) and hands them in; verify never does.
`perf_status` and `overall` are the two rules every side of qgate reads a verdict by.
Pure functions: records in, verdicts out.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from qgate.core.verdict import Verdict
from qgate.gates.assembly import EvaluateQuality, ScenarioChecks, candidate_verdicts, scenario_gates
from qgate.gates.changes_applied import change_warnings
from qgate.gates.judgement import (
    ALONE,
    BOOTSTRAP_SEED,
    CURRENT,
    POOLED,
    REFERENCE_LIVES,
    Derivation,
    Evidence,
    Judgement,
    LivesSection,
    OverallVerdict,
    PerfStatus,
    ScenarioResult,
)
from qgate.gates.life import excluded_rounds, life_verdicts
from qgate.gates.notices import quality_warnings
from qgate.gates.pooled import envelope_verdicts
from qgate.gates.quality import evaluate_quality
from qgate.gates.reference_lives import ReferenceLives, reference_lives
from qgate.gates.scenario import scenario_verdicts
from qgate.gates.speed import report_gates
from qgate.perf.blocks import compare_blocks, pooled
from qgate.perf.cache_sources import CACHE_FROM, CacheSources, cache_sources
from qgate.perf.compare import compare
from qgate.perf.metrics import summarize
from qgate.perf.records import ScenarioRun
from qgate.profile import PerfSpec, Profile
from qgate.profile.perf import is_preview
from qgate.quality.noise_floor import FloorSummary, floor_summary

__all__ = [
    "Judges",
    "envelope_judged",
    "judge",
    "lives_judged",
    "overall",
    "reference_judged",
    "perf_results",
    "perf_status",
    "quality_verdicts",
    "warnings_of",
]

Summarize = Callable[[ScenarioRun, Any], Any]
Compare = Callable[..., Any]


@dataclass(frozen=True)
class Judges:
    """The gate and perf functions the judge calls (verify's tests hand in others to show
    that it calls them, never a copy)."""

    evaluate_quality: EvaluateQuality = evaluate_quality
    summarize: Summarize = summarize
    compare: Compare = compare
    scenario_verdicts: ScenarioChecks = scenario_verdicts


def judge(
    profile: Profile,
    evidence: Evidence,
    derivation: Derivation = CURRENT,
    *,
    judged_with: Profile | None = None,
    quality: Sequence[Verdict] | None = None,
    resamples: int | None = None,
    seed: int = BOOTSTRAP_SEED,
    fns: Judges = Judges(),  # noqa: B008  (frozen: one shared value)
) -> Judgement:
    """Every verdict group of the candidate whose raw observations `evidence` holds.

    `profile` is the signed one (the warnings and the speed design read it); `judged_with`
    the profile as the machine ran it (fallbacks and the CPU dtype applied: the quality
    gates read it; default `profile`). `quality`: the run's quality verdicts, made already
    by `quality_verdicts` to decide the perf stage. `resamples`: the bootstrap's (default
    the profile's `perf.bootstrap`), drawn with `seed`.
    """
    ran = judged_with or profile
    if resamples is None:
        resamples = profile.perf.bootstrap if profile.perf else 0
    made = (
        list(quality)
        if quality is not None
        else quality_verdicts(ran, evidence, derivation, fns.evaluate_quality)
    )
    lives = lives_judged(profile, evidence, derivation)
    status = evidence.status
    results = perf_results(
        profile.perf,
        evidence.perf_runs,
        resamples=resamples,
        seed=seed,
        excluded=lives.excluded_rounds if lives is not None else (),
        floor=floor_summary(evidence.noise_floor, evidence.runs),
        derivation=derivation,
        fns=fns,
    )
    speed = report_gates(profile.perf, status, results)
    envelope = envelope_judged(profile, evidence, derivation)
    every = made + [v for r in results for v in r.verdicts] + speed + envelope
    every += lives.verdicts if lives is not None else []
    return Judgement(
        quality=made,
        scenarios=results,
        lives=lives,
        speed=speed,
        envelope=envelope,
        warnings=warnings_of(profile, evidence, derivation),
        verdict=overall(every, status, is_preview(profile)),
    )


def quality_verdicts(
    profile: Profile,
    evidence: Evidence,
    derivation: Derivation = CURRENT,
    evaluate: EvaluateQuality = evaluate_quality,
) -> list[Verdict]:
    """The candidate's quality verdicts (gates/assembly.py), the judge's first group."""
    return candidate_verdicts(
        profile,
        evidence.runs,
        evidence.divergence,
        evidence.passes,
        evidence.configs,
        evidence.speculative,
        evidence.noise_floor,
        derivation=derivation.quality,
        evaluate=evaluate,
    )


def lives_judged(
    profile: Profile, evidence: Evidence, derivation: Derivation = CURRENT
) -> LivesSection | None:
    """The life probes and their verdicts (the reference's lives', from perf derivation 12,
    then the candidate's), and the rounds a failed or broken life served (None: no life asked
    any)."""
    records = evidence.life_probes
    if not records:
        return None
    alone, pooled = derivation.perf >= ALONE, derivation.perf >= POOLED
    reference = reference_judged(profile, evidence, derivation)
    verdicts = life_verdicts(
        profile.lives,
        evidence.runs,
        records,
        alone=alone,
        pooled=pooled,
        reference=reference,
        host=evidence.host,
    )
    own = reference.verdicts if reference is not None else []
    return LivesSection(
        records=list(records),
        verdicts=own + verdicts,
        excluded_rounds=sorted(excluded_rounds(records, verdicts, reference)),
    )


def reference_judged(
    profile: Profile, evidence: Evidence, derivation: Derivation = CURRENT
) -> ReferenceLives | None:
    """The reference's own lives graded (perf derivation 12 on; None before)."""
    if derivation.perf < REFERENCE_LIVES:
        return None
    return reference_lives(profile.lives, evidence.runs, evidence.life_probes, evidence.host)


def envelope_judged(
    profile: Profile, evidence: Evidence, derivation: Derivation = CURRENT
) -> list[Verdict]:
    """The pooled envelope gate over every probe answer (perf derivation 11 on; [] before, and
    when the candidate asked no graded probe); from 12, its lives' answers judged as the life
    gates judge them (no floor from a broken reference life)."""
    if derivation.perf < POOLED:
        return []
    reference = reference_judged(profile, evidence, derivation)
    return envelope_verdicts(
        profile.envelope,
        evidence.runs,
        evidence.perf_runs,
        evidence.life_probes,
        leave_out=reference.keys() if reference is not None else (),
    )


def warnings_of(
    profile: Profile, evidence: Evidence, derivation: Derivation = CURRENT
) -> list[str]:
    """What the gates leave to read: no measurable effect, capped sizing, failed asks, and
    (quality derivation 3 on) the candidate's changes the running server did not confirm."""
    out = quality_warnings(profile.quality, evidence.runs, evidence.divergence)
    if derivation.quality >= 3:
        out += change_warnings(
            profile, evidence.configs, evidence.passes, evidence.perf_runs, evidence.speculative
        )
    return out


def _cache(refs: Sequence[ScenarioRun], cands: Sequence[ScenarioRun]) -> dict[str, CacheSources]:
    """Each side's cache provenance over its runs of one scenario."""
    sides = {"reference": cache_sources(refs), "candidate": cache_sources(cands)}
    return {role: got for role, got in sides.items() if got is not None}


def perf_results(
    spec: PerfSpec | None,
    runs: Sequence[ScenarioRun],
    *,
    resamples: int,
    seed: int,
    excluded: Collection[int] = (),
    floor: FloorSummary | None = None,
    derivation: Derivation = CURRENT,
    fns: Judges = Judges(),  # noqa: B008
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
    counters = derivation.perf >= 5  # pooled blocks keep the engine's counters from 5 on
    out: list[ScenarioResult] = []
    for name in names:
        refs, cands = by_key.get((name, "reference"), []), by_key.get((name, "candidate"), [])
        ref = pooled(refs, counters=counters) if refs else None
        cand = pooled(cands, counters=counters) if cands else None
        out.append(
            ScenarioResult(
                scenario=name,
                reference=fns.summarize(ref, slo) if ref else None,
                candidate=fns.summarize(cand, slo) if cand else None,
                comparisons=compared(
                    refs,
                    cands,
                    excluded,
                    resamples=resamples,
                    seed=seed,
                    derivation=derivation,
                    fns=fns,
                ),
                verdicts=scenario_gates(
                    spec,
                    name,
                    cand,
                    refs,
                    cands,
                    floor,
                    derivation=derivation.perf,
                    checks=fns.scenario_verdicts,
                ),
                cache=_cache(refs, cands) if derivation.perf >= CACHE_FROM else {},
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
    derivation: Derivation = CURRENT,
    fns: Judges = Judges(),  # noqa: B008
) -> list[Any]:
    """The scenario's ratios from the rounds no failed life served ([]: none left)."""
    refs = [r for r in refs if r.round not in excluded]
    cands = [r for r in cands if r.round not in excluded]
    if not refs or not cands:
        return []
    return list(
        compare_blocks(
            refs,
            cands,
            resamples=resamples,
            seed=seed,
            compare=fns.compare,
            legacy_rounds=derivation.perf < 7,
        )
    )


def perf_status(
    quality_verdicts: Sequence[Verdict], skip_perf: bool, force_perf: bool
) -> PerfStatus:
    """What the perf stage does given the quality gates and the CLI flags: it runs only when
    every gate passed; a gate failed outright skips it, else an INCONCLUSIVE one does."""
    if skip_perf:
        return "skipped: --skip-perf"
    if all(v.passed for v in quality_verdicts):
        return "ran"
    if force_perf:
        return "ungated"
    if any(not v.passed and not v.inconclusive for v in quality_verdicts):
        return "skipped: gates failed"
    return "skipped: gates inconclusive"


def overall(
    verdicts: Iterable[Verdict], perf_status: PerfStatus, preview: bool = False
) -> OverallVerdict:
    """FAIL if any gate failed outright; INCONCLUSIVE if none did but a non-inferiority gate
    showed neither (issue 53); UNGATED if perf was forced past gates that did not pass; else
    PASS.

    A forced perf run is only possible after a failed gate, and its numbers
    were never earned, so UNGATED wins over FAIL: the report must not be read
    as a normal gated FAIL with valid perf figures either.

    A preview (dummy weights, no quality suites) is never PASS: nothing showed
    the candidate answers correctly. It is PREVIEW (exit 0) when its perf
    gates hold and FAIL (exit 1) when one does not, since speed gates are valid
    on random weights.
    """
    if perf_status == "ungated":
        return "UNGATED"
    verdicts = list(verdicts)
    if any(not v.passed and not v.inconclusive for v in verdicts):
        return "FAIL"
    if any(not v.passed for v in verdicts):
        return "INCONCLUSIVE"
    return "PREVIEW" if preview else "PASS"
