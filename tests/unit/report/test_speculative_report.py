"""`qgate verify` re-derives the acceptance gate of a speculative candidate from the counter
snapshots the report holds (issue 42 item 4): a forged counter or a forged verdict is rejected
naming the gate; the candidate's speculation is a change confirmed by its server's log."""

from __future__ import annotations

import hashlib

import pytest

from qgate.core.serving import EffectiveConfig
from qgate.errors import VerificationFailed
from qgate.gates.changes_applied import change_warnings, contradicted_verdicts
from qgate.gates.judgement import QUALITY_DERIVATION
from qgate.gates.notices import quality_warnings
from qgate.gates.quality import evaluate_quality
from qgate.gates.speculative import evaluate_speculative
from qgate.profile import Profile
from qgate.quality.records import ItemRecord, SuiteRun
from qgate.quality.spec_counters import ACCEPTED, DRAFT_TOKENS, DRAFTS, SpecSnapshot, position_key
from qgate.report.model import PerfSection, QualitySection, Report
from qgate.report.verdict import overall
from qgate.report.verify.recompute import default_recompute, recompute_quality, recompute_warnings

NGRAM = '{"method":"ngram","num_speculative_tokens":3,"prompt_lookup_max":3,"prompt_lookup_min":2}'
PROFILE = {
    "name": "spec-test",
    "model": {"embedded": "smollm2"},
    "candidate": {"args": {"speculative_config": NGRAM}},
    "quality": {
        "math": {"prompts": ["short"], "max_flips": 1},
        "speculative": {"min_acceptance_length": 1.5},
    },
}


def _run(role: str) -> SuiteRun:
    items = [
        ItemRecord(
            id=f"m{i}",
            prompt_sha256=hashlib.sha256(f"q{i}".encode()).hexdigest(),
            output="The answer is 5",
            answer="5",
            expected="5",
            correct=True,
        )
        for i in range(6)
    ]
    return SuiteRun(suite="math.short", role=role, data_sha256="d", items=items)  # type: ignore[arg-type]


def _counts(drafts: float, accepted: list[float]) -> dict[str, float]:
    out = {DRAFTS: drafts, DRAFT_TOKENS: 3 * drafts, ACCEPTED: sum(accepted)}
    out.update({position_key(str(i)): v for i, v in enumerate(accepted)})
    return out


def _config(role: str, spec: str) -> EffectiveConfig:
    return EffectiveConfig(
        role=role,  # type: ignore[arg-type]
        kind="vllm",
        base_url="http://h:1/v1",
        served_model="m",
        speculative_config=spec,
    )


def _report(drafts: float = 20.0) -> tuple[Report, Profile]:
    profile = Profile.model_validate(PROFILE)
    runs = [_run("reference"), _run("candidate")]
    snaps = [
        SpecSnapshot(role="reference", at="start"),
        SpecSnapshot(role="reference", at="after math", seconds=4.0),
        SpecSnapshot(role="candidate", at="start", counters=_counts(0, [0, 0, 0])),
        SpecSnapshot(
            role="candidate", at="after math", seconds=3.1, counters=_counts(drafts, [12, 8, 5])
        ),
    ]
    configs = [
        _config("reference", "None"),
        _config("candidate", "SpeculativeConfig(method='ngram', model=None, num_spec_tokens=3)"),
    ]
    verdicts = evaluate_quality(profile.quality, runs, None)
    verdicts += contradicted_verdicts(profile, configs, [], snaps)
    verdicts += evaluate_speculative(profile, snaps)
    report = Report(
        qgate_version="test",
        created_at="2026-12-03T00:00:00+00:00",
        profile=profile.model_dump(mode="json"),
        profile_sha256="0" * 64,
        effective_configs=configs,
        quality=QualitySection(
            derivation=QUALITY_DERIVATION, runs=runs, verdicts=verdicts, speculative=snaps
        ),
        perf=PerfSection(status="skipped: --skip-perf"),
        verdict=overall(verdicts, "skipped: --skip-perf", False),
        # bit-identical answers, as lossless speculation should give: the no-effect warning
        warnings=quality_warnings(profile.quality, runs, None)
        + change_warnings(profile, configs, [], [], snaps),
    )
    return report, profile


def test_the_acceptance_gate_is_re_derived_from_the_snapshots() -> None:
    report, profile = _report()
    assert report.verdict == "PASS"
    gate = next(v for v in report.quality.verdicts if v.gate == "speculative.acceptance_length")
    assert gate.observed == pytest.approx(1 + 25 / 20) and gate.passed
    recompute_quality(report, profile, default_recompute())
    assert recompute_warnings(report, profile) == 1  # no effect; the change is confirmed
    assert not any("speculative_config" in w for w in report.warnings)
    # a forged counter that claims more accepted tokens: the stored verdict no longer follows
    report.quality.speculative[-1].counters[ACCEPTED] = 40.0
    report.quality.speculative[-1].counters[position_key("0")] = 27.0
    with pytest.raises(VerificationFailed, match=r"speculative\.acceptance_length"):
        recompute_quality(report, profile, default_recompute())


def test_a_not_exercised_gate_claimed_as_passed_is_rejected() -> None:
    report, profile = _report(drafts=0.0)
    gate = next(v for v in report.quality.verdicts if v.gate == "speculative.acceptance_length")
    assert gate.exercised is False and not gate.passed and report.verdict == "FAIL"
    recompute_quality(report, profile, default_recompute())
    report.quality.verdicts = [
        v.model_copy(update={"passed": True, "exercised": True}) if v.gate == gate.gate else v
        for v in report.quality.verdicts
    ]
    with pytest.raises(VerificationFailed, match=r"speculative\.acceptance_length"):
        recompute_quality(report, profile, default_recompute())


def test_counters_that_break_their_arithmetic_cannot_pass() -> None:
    report, profile = _report()
    report.quality.speculative[-1].counters[position_key("2")] = 9.0  # positions 29, total 25
    with pytest.raises(VerificationFailed, match=r"speculative\.counters"):
        recompute_quality(report, profile, default_recompute())


def test_a_server_that_logged_no_speculation_is_a_failed_gate_re_derived() -> None:
    report, profile = _report()
    report.effective_configs[1] = _config("candidate", "None")
    with pytest.raises(VerificationFailed, match=r"changes\.args\.speculative_config\.applied"):
        recompute_quality(report, profile, default_recompute())


def test_the_markdown_view_shows_acceptance_and_what_each_suite_took() -> None:
    from qgate.report.render.md import render_markdown

    report, _ = _report()
    md = render_markdown(report)
    assert "Speculative decoding: what the drafts gained" in md
    # candidate: 20 drafts, 25 of 60 draft tokens accepted: length 2.250, rate 41.7%;
    # accepted per draft by position 12/20, 8/20, 5/20
    assert "| candidate | 20 | 25 / 60 | 2.250 | 41.7% | 0: 0.60, 1: 0.40, 2: 0.25 |" in md, md
    assert "| reference | no counters |" in md
    assert "| candidate | math | 3.1 |" in md
    assert "args.speculative_config" in md


def test_the_counters_are_listed_as_resting_on_the_signature() -> None:
    from qgate.report.verify.single import signed_only

    report, _ = _report()
    assert any(line.startswith("quality.speculative: ") for line in signed_only(report))
    report.quality.speculative = []
    assert not any(line.startswith("quality.speculative: ") for line in signed_only(report))
