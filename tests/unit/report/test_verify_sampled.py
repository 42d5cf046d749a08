"""`qgate verify` re-derives the sampled test from its records through the one judge: a report
of a greedy candidate verifies as FAIL, a forged verdict or forged samples are rejected."""

from __future__ import annotations

import random

import pytest
from helpers.sampled_records import sampled_run

from qgate.errors import VerificationFailed
from qgate.gates.judgement import QUALITY_DERIVATION
from qgate.gates.quality import evaluate_quality
from qgate.profile import Profile
from qgate.quality.sampled_data import output_of, sampled_items
from qgate.report.model import PerfSection, QualitySection, Report
from qgate.report.verdict import overall
from qgate.report.verify.item_plan import check_items_planned
from qgate.report.verify.recompute import default_recompute, recompute_quality
from qgate.report.verify.rederive import Rederived, rederive_correctness

PROFILE = Profile.model_validate(
    {
        "name": "sampled-test",
        "model": {"embedded": "smollm2"},
        "candidate": {},
        "quality": {"sampled": {"prompts": 64, "samples": 6}},
    }
)


def _report() -> Report:
    rng = random.Random(9)
    spec = PROFILE.quality.sampled
    assert spec is not None
    ref = [
        [str(i.answer + (rng.random() < 0.4) * rng.randint(1, 4)) for _ in range(spec.samples)]
        for i in sampled_items(spec)
    ]
    greedy = [[max(set(t), key=t.count)] * spec.samples for t in ref]
    runs = [sampled_run(PROFILE, "reference", ref), sampled_run(PROFILE, "candidate", greedy)]
    verdicts = evaluate_quality(PROFILE.quality, runs, None)
    return Report(
        qgate_version="test",
        created_at="2026-12-07T00:00:00+00:00",
        profile=PROFILE.model_dump(mode="json"),
        profile_sha256="0" * 64,
        quality=QualitySection(derivation=QUALITY_DERIVATION, runs=runs, verdicts=verdicts),
        perf=PerfSection(status="skipped: --skip-perf"),
        verdict=overall(verdicts, "skipped: --skip-perf", False),
    )


def test_a_greedy_candidate_verifies_as_failed_naming_temperature() -> None:
    report = _report()
    assert report.verdict == "FAIL"
    gate = next(v for v in report.quality.verdicts if v.gate == "sampled.max_diversity_change")
    assert not gate.passed and "temperature ignored" in gate.reason
    recompute_quality(report, PROFILE, default_recompute())


def test_a_forged_verdict_is_rejected() -> None:
    report = _report()
    report.quality.verdicts = [
        v.model_copy(update={"passed": True}) if v.gate == "sampled.max_diversity_change" else v
        for v in report.quality.verdicts
    ]
    with pytest.raises(VerificationFailed, match=r"sampled\.max_diversity_change"):
        recompute_quality(report, PROFILE, default_recompute())


def test_forged_samples_are_rejected() -> None:
    report = _report()
    cand = report.quality.runs[1]
    first = cand.items[0]
    forged = first.model_copy(update={"output": output_of([str(k) for k in range(6)])})
    cand.items[0] = forged
    with pytest.raises(VerificationFailed, match=r"sampled"):
        recompute_quality(report, PROFILE, default_recompute())


def test_items_are_regraded_and_held_to_the_planned_questions() -> None:
    report = _report()
    done = Rederived()
    rederive_correctness(report.quality.runs, PROFILE, done)
    assert done.items == 128 and not done.not_rederived
    assert check_items_planned(report, PROFILE) is not None
    cand = report.quality.runs[1]
    cand.items[0] = cand.items[0].model_copy(update={"output": output_of(["1"] * 6)})
    with pytest.raises(VerificationFailed, match="sampled candidate item"):
        rederive_correctness(report.quality.runs, PROFILE, Rederived())
    cand.items.pop()
    with pytest.raises(VerificationFailed, match="missing"):
        check_items_planned(report, PROFILE)
