"""Reports whose perf figures came from an older derivation are held to what they store."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers.examples import predicate_of
from helpers.report_synthetic import build_report
from helpers.resign import example_report, rederived, resigned_verify

from qgate.errors import VerificationFailed
from qgate.gates.judgement import QUALITY_DERIVATION
from qgate.report.model import Report
from qgate.report.verify.compare_values import covers
from qgate.report.verify.derivation import check_derivations, signer_derivations

ROW = {
    "metric": "tpot_ms.p50",
    "ratio": 0.71,
    "ci_low": 0.6,
    "ci_high": 0.8,
    "resamples": 2000,
    "seed": 0,
}
THROUGHPUT_OLD = {
    "metric": "output_throughput",
    "ratio": 1.37,
    "ci_low": None,
    "ci_high": None,
    "resamples": 0,
    "seed": 0,
}
THROUGHPUT_NEW = {**THROUGHPUT_OLD, "ci_low": 1.2, "ci_high": 1.5, "resamples": 2000}
NEW_ROW = {
    "metric": "request_decode_tok_s.p50",
    "ratio": 1.4,
    "ci_low": 1.3,
    "ci_high": 1.5,
    "resamples": 2000,
    "seed": 0,
}


def test_figures_derived_later_are_not_held_against_an_old_report() -> None:
    stored: list[Any] = [ROW, THROUGHPUT_OLD]
    assert covers(stored, [NEW_ROW, THROUGHPUT_NEW, ROW])
    assert covers({"ttft_ms": {"p50": 40.0}}, {"ttft_ms": {"p50": 40.0, "p90": 51.0}})


def test_every_stored_figure_must_still_follow() -> None:
    edited = {**ROW, "ratio": 0.70}
    assert not covers([edited, THROUGHPUT_OLD], [ROW, THROUGHPUT_NEW])
    assert not covers([ROW], [THROUGHPUT_NEW])  # a stored row the records do not give
    assert not covers({"ttft_ms": {"p50": 41.0}}, {"ttft_ms": {"p50": 40.0, "p90": 51.0}})
    assert not covers({"ttft_ms": {"p50": 40.0, "p95": 1.0}}, {"ttft_ms": {"p50": 40.0}})


def test_a_stored_interval_must_match() -> None:
    wrong = {**THROUGHPUT_NEW, "ci_low": 1.25}
    assert not covers([wrong], [THROUGHPUT_NEW])
    # an interval stored without resamples is not the "none derived" form
    forged = {**THROUGHPUT_OLD, "ratio": 9.9}
    assert not covers([forged], [THROUGHPUT_NEW])


def test_a_newer_derivation_is_refused_by_name() -> None:
    from helpers.report_synthetic import FAKES, build_report, make_signer

    from qgate.attest.statement import Subject
    from qgate.gates.judgement import PERF_DERIVATION
    from qgate.report.signing import sign_report
    from qgate.report.verify.single import verify_bytes

    signer = make_signer("ecdsa")
    report = build_report()
    report.perf.derivation = PERF_DERIVATION + 1
    subjects = [Subject(name="profile/p.yaml", sha256=report.profile_sha256)]
    envelope = sign_report(report, subjects, signer)
    with pytest.raises(VerificationFailed, match=r"made by a newer qgate"):
        verify_bytes(envelope, signer.public_pem, recompute=FAKES)


EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def test_every_committed_example_is_checked_at_its_signers_derivations() -> None:
    """Each example's revision is a listed older signer with the derivations it claims, or the
    example is of this qgate's derivations."""
    checked = 0
    for path in sorted(EXAMPLES.glob("**/report.intoto.jsonl")):
        predicate = predicate_of(path)
        # a run of several candidates holds one report per candidate, each with its derivations
        reports = (
            [c["report"] for c in predicate["candidates"]]
            if "candidates" in predicate
            else [predicate]
        )
        for one in reports:
            report = Report.model_validate(one)
            claimed = (report.quality.derivation, report.perf.derivation)
            assert signer_derivations(report)[:2] == claimed, path
            assert check_derivations(report)[:2] == claimed, path
            checked += 1
    assert checked > len(list(EXAMPLES.glob("**/report.intoto.jsonl")))  # a multi run's too


def _lower(section: str) -> Callable[[Report], None]:
    def edit(report: Report) -> None:
        part = getattr(report, section)
        part.derivation -= 1
        if section == "quality":  # made before the unconfirmed-changes warning: none
            report.warnings = [w for w in report.warnings if "not confirmed" not in w]
        rederived(report)

    return edit


def test_a_lowered_perf_derivation_is_rejected_naming_both_values() -> None:
    run = EXAMPLES / "cpu" / "smollm2-cpu-rounds"
    claimed = example_report(run).perf.derivation
    with pytest.raises(VerificationFailed) as info:
        resigned_verify(run, _lower("perf"))
    assert f"perf.derivation: {claimed - 1} stored" in info.value.message


def test_a_lowered_quality_derivation_is_rejected_naming_the_signer() -> None:
    run = EXAMPLES / "h200" / "kv-offload"
    with pytest.raises(VerificationFailed) as info:
        resigned_verify(run, _lower("quality"), run / "profile.yaml")
    assert info.value.message == (
        "quality.derivation: 2 stored, 3 re-derived (what qgate revision "
        "'git archive bfbcf8c' wrote)"
    )


def test_a_report_of_an_unknown_signer_is_held_to_the_newest() -> None:
    report = build_report(requests=4)
    assert report.fingerprint is not None and report.fingerprint.qgate_revision is None
    report.quality.derivation = 2
    newest = rf"quality.derivation: 2 stored, {QUALITY_DERIVATION} re-derived"
    with pytest.raises(VerificationFailed, match=newest):
        check_derivations(report)


def test_naming_an_older_signer_does_not_lower_the_checks_of_newer_records() -> None:
    """An insider names a revision that wrote perf 5; records of a later round need 6."""
    run = EXAMPLES / "cpu" / "smollm2-cpu-rounds"

    def spoof(report: Report) -> None:
        assert report.fingerprint is not None
        report.fingerprint.qgate_revision = "git archive bfbcf8c"  # wrote (3, 5)
        report.perf.derivation = 5
        rederived(report)

    with pytest.raises(VerificationFailed) as info:
        resigned_verify(run, spoof)
    message = info.value.message
    assert message.startswith("perf.derivation: 5 stored, at least 6 re-derived from the records")
    assert "perf.runs.round (perf 6)" in message
