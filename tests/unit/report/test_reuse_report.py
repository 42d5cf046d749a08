"""Reuse passes in a report: verify re-derives their verdicts and shares; the views name them."""

from __future__ import annotations

import hashlib

import pytest

from qgate.core.verdict import Verdict
from qgate.errors import VerificationFailed
from qgate.gates.changes_applied import change_warnings
from qgate.gates.judgement import QUALITY_DERIVATION
from qgate.gates.notices import quality_warnings
from qgate.gates.quality import evaluate_quality
from qgate.gates.reuse import evaluate_reuse
from qgate.profile import Profile
from qgate.quality.records import ItemRecord, SuiteRun
from qgate.quality.reuse_records import COMPUTED, DEVICE, EXTERNAL, PassRun, PassSuite
from qgate.report.model import PerfSection, QualitySection, Report
from qgate.report.render.junit import render_junit
from qgate.report.render.md import render_markdown
from qgate.report.verdict import overall
from qgate.report.verify.recompute import (
    default_recompute,
    recompute_quality,
    recompute_warnings,
)
from qgate.report.verify.rederive import Rederived
from qgate.report.verify.reuse import check_passes

PROFILE = {
    "name": "reuse-test",
    "model": {"embedded": "smollm2"},
    "candidate": {"args": {"enable_prefix_caching": True}},
    "reference": {"args": {"enable_prefix_caching": False}},
    "quality": {
        "math": {"prompts": ["long"], "max_flips": 1},
        "reuse": {"passes": ["warm"], "min_exercised_share": 0.5},
    },
}


def _items(wrong: set[int]) -> list[ItemRecord]:
    out = []
    for i in range(6):
        answer = "7" if i in wrong else "5"
        out.append(
            ItemRecord(
                id=f"m{i}",
                prompt_sha256=hashlib.sha256(f"q{i}".encode()).hexdigest(),
                output=f"The answer is {answer}",
                answer=answer,
                expected="5",
                correct=i not in wrong,
            )
        )
    return out


def _run(role: str, wrong: set[int]) -> SuiteRun:
    return SuiteRun(suite="math.long", role=role, data_sha256="d", items=_items(wrong))  # type: ignore[arg-type]


def _report(cand_device: float) -> tuple[Report, Profile]:
    profile = Profile.model_validate(PROFILE)
    runs = [_run("reference", set()), _run("candidate", set())]
    zero = {COMPUTED: 0.0, DEVICE: 0.0, EXTERNAL: 0.0}
    passes = [
        PassRun(
            name="cold",
            role=role,  # type: ignore[arg-type]
            suites=[PassSuite(suite="math.long", before=zero, after={**zero, COMPUTED: 2000.0})],
        )
        for role in ("reference", "candidate")
    ]
    for role, device in (("reference", 0.0), ("candidate", cand_device)):
        warm = {**zero, COMPUTED: 2000.0}  # where the cold pass left the counters
        after = {COMPUTED: 4000.0 - device, DEVICE: device, EXTERNAL: 0.0}
        passes.append(
            PassRun(
                name="warm",
                role=role,  # type: ignore[arg-type]
                suites=[
                    PassSuite(suite="math.long", run=_run(role, set()), before=warm, after=after)
                ],
            )
        )
    verdicts = evaluate_quality(profile.quality, runs, None)
    verdicts += evaluate_reuse(profile.quality, runs, passes)
    report = Report(
        qgate_version="test",
        created_at="2026-12-02T00:00:00+00:00",
        profile=profile.model_dump(mode="json"),
        profile_sha256="0" * 64,
        quality=QualitySection(
            derivation=QUALITY_DERIVATION, runs=runs, verdicts=verdicts, passes=passes
        ),
        perf=PerfSection(status="skipped: --skip-perf"),
        verdict=overall(verdicts, "skipped: --skip-perf", False),
    )
    return report, profile


def test_verify_recomputes_the_pass_verdicts_from_the_recorded_counters() -> None:
    report, profile = _report(cand_device=1500.0)
    recompute_quality(report, profile, default_recompute())
    assert report.verdict == "PASS"
    # a forged counter that claims the candidate served more from its cache
    report.quality.passes[3].suites[0].after[DEVICE] = 1900.0
    report.quality.passes[3].suites[0].after[COMPUTED] = 2100.0
    with pytest.raises(VerificationFailed, match=r"math\.long@warm\.exercised"):
        recompute_quality(report, profile, default_recompute())


def test_a_forged_not_exercised_pass_claimed_as_passed_is_rejected() -> None:
    report, profile = _report(cand_device=100.0)
    assert report.verdict == "FAIL"
    forged = [
        v.model_copy(update={"passed": True, "exercised": None}) for v in report.quality.verdicts
    ]
    report.quality.verdicts = forged
    with pytest.raises(VerificationFailed):
        recompute_quality(report, profile, default_recompute())


def test_pass_answers_are_re_derived_from_their_responses() -> None:
    report, profile = _report(cand_device=1500.0)
    assert check_passes(report, profile, Rederived()) == 12
    run = report.quality.passes[3].suites[0].run
    assert run is not None
    run.items[0] = run.items[0].model_copy(update={"output": "The answer is 9"})
    with pytest.raises(VerificationFailed, match="m0"):
        check_passes(report, profile, Rederived())


def test_views_show_not_exercised_as_its_own_result() -> None:
    report, _ = _report(cand_device=100.0)
    md = render_markdown(report)
    assert "NOT EXERCISED math.long@warm" in md
    assert "| NOT EXERCISED |" in md
    assert "Reuse passes: what served the prompts" in md and "5.0%" in md
    assert 'type="GateNotExercised"' in render_junit(report)
    passing, _ = _report(cand_device=1500.0)
    assert "NOT EXERCISED" not in render_markdown(passing)
    assert "75.0%" in render_markdown(passing)


def test_verify_re_derives_the_unconfirmed_changes_warning() -> None:
    report, profile = _report(cand_device=1500.0)
    profile = profile.model_copy(
        update={"candidate": profile.candidate.model_copy(update={"args": {"max_num_seqs": 2}})}
    )
    report.quality.derivation = 3
    q = report.quality
    before = quality_warnings(profile.quality, q.runs, q.divergence)  # no measurable effect
    report.warnings = before + change_warnings(profile, [], q.passes)
    assert "args.max_num_seqs unconfirmed" in report.warnings[-1]
    assert recompute_warnings(report, profile) == len(before) + 1
    report.warnings = before  # dropped by someone holding the key
    with pytest.raises(VerificationFailed, match="warnings"):
        recompute_warnings(report, profile)
    report.quality.derivation = 2  # made before the warning existed: not asked of it
    assert recompute_warnings(report, profile) == len(before)


def test_an_attribution_trial_is_judged_on_its_reuse_passes_too() -> None:
    """A failure that lives only in a reuse pass must fail the trials that hold its cause:
    a trial keeps its passes, and verify re-derives their verdicts (issue 43)."""
    from qgate.report.attribution import Trial
    from qgate.report.verify.attribution import _trial_verdicts

    def _trial_extras(report: Report, profile: Profile, trial: Trial) -> list[Verdict]:
        """The trial's reuse verdicts among all it is judged on (ids `suite@pass.gate`)."""
        verdicts = _trial_verdicts(report, profile, trial, default_recompute())
        return [v for v in verdicts if "@" in v.gate]

    report, profile = _report(cand_device=100.0)  # the warm pass is NOT EXERCISED
    cand = [p for p in report.quality.passes if p.role == "candidate"]
    runs = [r for r in report.quality.runs if r.role == "candidate"]
    trial = Trial(name="t", changes=["args.enable_prefix_caching"], verdict="FAIL", runs=runs)
    dropped = _trial_extras(report, profile, trial)  # passes dropped: failed, never PASS
    assert dropped and not any(v.passed for v in dropped)
    assert "no candidate warm pass" in dropped[-1].reason
    trial.passes = cand
    extras = _trial_extras(report, profile, trial)
    assert [v.gate for v in extras][0] == "math.long@warm.exercised"
    assert not any(v.passed for v in extras) and extras[0].observed == pytest.approx(0.05)
    report.quality.derivation = 3  # made when trials held no passes
    with pytest.raises(VerificationFailed, match="its derivation lacks"):
        _trial_extras(report, profile, trial)
