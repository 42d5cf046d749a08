"""Re-derive what a report states from its own records, with the one judge `run` used.

The report's evidence (`evidence_of`: every raw observation it signs) goes through
gates/judge.py `judge` with the report's derivations (`judged_of`), and every verdict group
and perf figure it makes is compared with the stored one: floats up to a relative 1e-9, a
report of an older perf derivation by the figures it holds. `Recompute` holds the gate and
perf functions the judge calls (tests hand in others). `qgate verify` (single.py) calls these
after the envelope, the subjects and the raw responses have been checked.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from qgate.core.verdict import Verdict
from qgate.errors import InfrastructureError, VerificationFailed
from qgate.gates import assembly
from qgate.gates.judge import Compare as Compare
from qgate.gates.judge import Judges, judge
from qgate.gates.judge import Summarize as Summarize
from qgate.gates.judgement import (
    BOOTSTRAP_SEED,
    PERF_DERIVATION,
    QUALITY_DERIVATION,
    QUALITY_V2_FIELDS,
    Derivation,
    Evidence,
    Judgement,
)
from qgate.gates.looks import look_problems
from qgate.perf.blocks import rounds_of
from qgate.perf.records import ScenarioRun
from qgate.profile import Profile
from qgate.quality.math_set import PROBED
from qgate.quality.settle import stop_problems
from qgate.report.model import PerfSection, Report
from qgate.report.verdict import perf_status
from qgate.report.verify.compare_values import covers, describe, dump, same_value

__all__ = [
    "Compare",
    "EvaluateQuality",
    "Recompute",
    "ScenarioVerdicts",
    "Summarize",
    "check_bootstrap",
    "check_perf_status",
    "check_status_and_verdict",
    "default_recompute",
    "evidence_of",
    "judged_of",
    "recompute_envelope",
    "recompute_perf",
    "recompute_perf_gates",
    "recompute_quality",
    "recompute_warnings",
]


def _fail(message: str) -> VerificationFailed:
    return VerificationFailed(message)


EvaluateQuality = assembly.EvaluateQuality
ScenarioVerdicts = assembly.ScenarioChecks
Recompute = Judges
"""The pure functions `run` used, which the one judge calls; verify hands the same ones in."""


def default_recompute() -> Recompute:
    """The team's gate and perf functions (the judge's own), imported here so that an
    environment that cannot import them is named (exit 3), never read as a bad report."""
    try:
        from qgate.gates.quality import evaluate_quality
        from qgate.gates.scenario import scenario_verdicts
        from qgate.perf.compare import compare
        from qgate.perf.metrics import summarize
    except ImportError as exc:
        raise InfrastructureError(f"cannot recompute verdicts: {exc}") from None
    return Judges(evaluate_quality, summarize, compare, scenario_verdicts)


def evidence_of(report: Report) -> Evidence:
    """The candidate's evidence as the report signs it: every raw observation, nothing
    derived (the value `qgate run` judged)."""
    q, perf = report.quality, report.perf
    return Evidence(
        runs=tuple(q.runs),
        divergence=q.divergence,
        passes=tuple(q.passes),
        speculative=tuple(q.speculative),
        configs=tuple(report.effective_configs),
        noise_floor=q.noise_floor,
        perf_runs=tuple(perf.runs),
        life_probes=tuple(report.lives.records) if report.lives is not None else (),
        host=report.fingerprint.hostname if report.fingerprint is not None else None,
        status=perf.status,
    )


def judged_of(
    report: Report, profile: Profile, fns: Recompute, judged_with: Profile | None = None
) -> Judgement:
    """The one judge over the report's evidence, by the report's derivations (which verify
    has held to the signer's: derivation.py): what `qgate run` would have stored.

    `profile` the signed one, `judged_with` the profile as the machine ran it (as_run)."""
    q, perf = report.quality, report.perf
    for name, stored, newest in (
        ("quality.derivation", q.derivation, QUALITY_DERIVATION),
        ("perf.derivation", perf.derivation, PERF_DERIVATION),
    ):
        if stored > newest:
            raise _fail(
                f"{name}: {stored} stored, at most {newest} re-derived by this qgate: made by "
                "a newer qgate; verify it with that one"
            )
    return judge(
        profile,
        evidence_of(report),
        Derivation(quality=q.derivation, perf=perf.derivation),
        judged_with=judged_with,
        resamples=perf.bootstrap_resamples,
        seed=perf.bootstrap_seed,
        fns=fns,
    )


def _first_verdict_difference(
    stored: Sequence[Verdict], recomputed: Sequence[Verdict], derivation: int = QUALITY_DERIVATION
) -> str:
    by_gate = {v.gate: v for v in recomputed}
    for v in stored:
        r = by_gate.get(v.gate)
        if r is None:
            return f"gate {v.gate} is not produced by the profile's policy"
        if derivation < 2:
            r = r.model_copy(update={k: getattr(v, k) for k in QUALITY_V2_FIELDS})
        if not same_value(dump(v), dump(r)):
            return describe(f"gate {v.gate}", dump(v), dump(r))
    missing = [r.gate for r in recomputed if r.gate not in {v.gate for v in stored}]
    if missing:
        return f"gate {missing[0]} is missing from the report"
    order = ", ".join(v.gate for v in recomputed)
    return f"gate verdicts are out of order (re-derived order: {order})"


def recompute_quality(
    report: Report, profile: Profile, fns: Recompute, judged: Judgement | None = None
) -> None:
    """The stored quality verdicts are the judge's over the stored records (its first group,
    with the report's quality derivation: gates/judge.py, the function `run` called)."""
    judged = judged or judged_of(report, profile, fns)
    recomputed = judged.quality
    derivation = report.quality.derivation
    stored, fresh = dump(report.quality.verdicts), dump(recomputed)
    if derivation < 2:  # made before verdicts carried the eval-result fields
        stored, fresh = _without(stored, QUALITY_V2_FIELDS), _without(fresh, QUALITY_V2_FIELDS)
    if not same_value(stored, fresh):
        raise _fail(_first_verdict_difference(report.quality.verdicts, recomputed, derivation))
    problems = stop_problems(profile.quality, report.quality.runs, recomputed)
    problems += look_problems(profile.quality, report.quality.runs, derivation)
    if problems:
        raise _fail(f"quality: {problems[0]}")


def recompute_warnings(report: Report, profile: Profile, judged: Judgement | None = None) -> int:
    """The report's warnings are the ones its profile and records give (no more, no fewer);
    returns their count."""
    fresh = (judged or judged_of(report, profile, default_recompute())).warnings
    if report.warnings != fresh:
        raise _fail(describe("warnings", report.warnings, fresh))
    return len(fresh)


def _without(verdicts: list[dict[str, Any]], keys: Sequence[str]) -> list[dict[str, Any]]:
    return [{k: v for k, v in verdict.items() if k not in keys} for verdict in verdicts]


def _scenario_spec(profile: Profile, name: str) -> None:
    if profile.perf is None:
        raise _fail(f"perf scenario {name} but the profile has no perf section")
    base = name.split("@", 1)[0]
    for spec in profile.perf.scenarios:
        if spec.name == base:
            return
    raise _fail(f"perf scenario {name} is not in the profile")


def _check_rounds(
    report: Report, profile: Profile, blocks: dict[tuple[str, str], list[ScenarioRun]]
) -> None:
    """Every side of every scenario holds the rounds the profile asks (perf.rounds) when the
    candidate's perf ran on passed gates; one round otherwise (rounds follow passed gates)."""
    spec = profile.perf
    asked = spec.rounds if spec is not None and report.perf.status == "ran" else 1
    for (name, role), side in blocks.items():
        held = rounds_of(side)
        if held != list(range(asked)):
            raise _fail(
                f"perf {name}: the {role}'s records hold round(s) {held}, the run asks "
                f"{asked} (perf.rounds {spec.rounds if spec else 1}, perf {report.perf.status})"
            )


def _check_probe_expected(report: Report) -> None:
    """Each graded probe's `probe_expected` is its side's quality-stage answer to the item
    (the probe gate leaves out the items the candidate lost there), and its `probe_truth` the
    item's expected answer there (an edited truth makes a lost probe one lost already in the
    quality stage, or a wrong answer right)."""
    answers: dict[tuple[str, str], str | None] = {
        (run.role, item.id): item.answer
        for run in report.quality.runs
        if run.suite == PROBED
        for item in run.items
    }
    truths = {
        item.id: item.expected
        for run in report.quality.runs
        if run.suite == PROBED and run.role == "reference"
        for item in run.items
    }
    for run in report.perf.runs:
        for r in run.requests:
            if r.probe_id is None or r.probe_truth is None:
                continue
            truth = truths.get(r.probe_id)
            if truth is not None and r.probe_truth != truth:
                raise _fail(
                    f"perf {run.scenario}: the {run.role}'s probe {r.probe_id}.probe_truth: "
                    f"{r.probe_truth!r} stored, {truth!r} the item's expected answer in the "
                    "reference's quality records"
                )
            key: tuple[str, str] = (run.role, r.probe_id)
            if answers.get(key) != r.probe_expected:
                raise _fail(
                    f"perf {run.scenario}: the {run.role}'s probe {r.probe_id} records "
                    f"{r.probe_expected!r} as its quality-stage answer; the quality records "
                    f"say {answers.get(key)!r}"
                )


def recompute_perf(
    report: Report, profile: Profile, fns: Recompute, judged: Judgement | None = None
) -> int:
    """Every stored perf summary, comparison and check equals the judge's."""
    perf = report.perf
    if perf.derivation >= 8:
        _check_probe_expected(report)
    blocks: dict[tuple[str, str], list[ScenarioRun]] = {}
    for r in perf.runs:
        blocks.setdefault((r.scenario, r.role), []).append(r)
    if any(len({(r.round, r.block) for r in side}) != len(side) for side in blocks.values()):
        raise _fail("perf: two runs share a scenario name, role, round and block")
    _check_rounds(report, profile, blocks)
    results = {r.scenario: r for r in perf.results}
    run_names = {s for s, _ in blocks}
    if set(results) != run_names:
        odd = sorted(set(results) ^ run_names)[0]
        raise _fail(f"perf: scenario {odd} has records without results or results without records")
    check_bootstrap(perf, profile)
    judged = judged or judged_of(report, profile, fns)
    fresh = {r.scenario: r for r in judged.scenarios}
    same = same_value if perf.derivation == PERF_DERIVATION else covers
    for name, result in results.items():
        _scenario_spec(profile, name)
        got = fresh[name]
        for role in ("reference", "candidate"):
            stored, again = getattr(result, role), getattr(got, role)
            if not same(stored, again):
                raise _fail(
                    describe(f"perf {name}: {role} summary", stored, again, covers=same is covers)
                )
        if not same(result.comparisons, got.comparisons):
            raise _fail(
                describe(
                    f"perf {name}: comparisons",
                    result.comparisons,
                    got.comparisons,
                    covers=same is covers,
                )
            )
        if not same_value(dump(result.verdicts), dump(got.verdicts)):
            raise _fail(f"perf {name}: " + _first_verdict_difference(result.verdicts, got.verdicts))
    return len(results)


def check_bootstrap(perf: PerfSection, profile: Profile) -> None:
    """The bootstrap the intervals were drawn with is the profile's (`perf.bootstrap`
    resamples) and qgate's fixed seed: a report cannot pick the draw that suits it."""
    want = profile.perf.bootstrap if profile.perf else 0
    if perf.bootstrap_resamples != want:
        raise _fail(
            f"perf.bootstrap_resamples: {perf.bootstrap_resamples} stored, {want} re-derived "
            "from the profile (perf.bootstrap)"
        )
    if perf.bootstrap_seed != BOOTSTRAP_SEED:
        raise _fail(
            f"perf.bootstrap_seed: {perf.bootstrap_seed} stored, {BOOTSTRAP_SEED} re-derived "
            "(qgate's fixed seed)"
        )


def recompute_perf_gates(report: Report, profile: Profile, judged: Judgement | None = None) -> int:
    """The stored speed-gate verdicts are the judge's (over the re-derived perf results)."""
    gates = (judged or judged_of(report, profile, default_recompute())).speed
    if not same_value(dump(report.perf.gates), dump(gates)):
        raise _fail("perf gates: " + _first_verdict_difference(report.perf.gates, gates))
    return len(gates)


def recompute_envelope(report: Report, profile: Profile, judged: Judgement | None = None) -> int:
    """The stored pooled envelope gate is the judge's, over the report's own probe records."""
    gates = (judged or judged_of(report, profile, default_recompute())).envelope
    if not same_value(dump(report.envelope), dump(gates)):
        raise _fail("envelope: " + _first_verdict_difference(report.envelope, gates))
    return len(gates)


def check_perf_status(report: Report) -> None:
    """Perf status follows from the quality gates and whether the report holds perf records:
    with records, 'ran' on passed gates and 'ungated' (forced) past gates that did not pass;
    without, a skip by the gates is theirs (--skip-perf, a flag, is not re-derived). Checked
    before anything that reads it (the rounds asked, the speed gates), so an edited status is
    named as itself."""
    status, verdicts = report.perf.status, report.quality.verdicts
    if report.perf.runs or report.perf.results:
        ran = perf_status(verdicts, skip_perf=False, force_perf=True)
        if status != ran:
            raise _fail(
                f"perf.status: {status!r} stored, {ran!r} re-derived from the quality gates "
                "and the perf records the report holds"
            )
        return
    gated = perf_status(verdicts, skip_perf=False, force_perf=False)
    if (status == "ran" and gated != "ran") or (
        status.startswith("skipped: gates") and status != gated
    ):
        raise _fail(f"perf.status: {status!r} stored, {gated!r} re-derived from the quality gates")


def check_status_and_verdict(report: Report, judged: Judgement) -> None:
    """Perf status agrees with the quality gates; the overall verdict is the judge's."""
    check_perf_status(report)
    expected = judged.verdict
    if report.verdict != expected:
        raise _fail(f"overall verdict {report.verdict} does not follow from the gates ({expected})")
