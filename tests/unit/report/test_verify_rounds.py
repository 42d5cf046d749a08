"""Perf rounds in a signed report: verify re-derives the round ratios and their interval, and
rejects an edited round ratio or records that lack a round the profile asks for."""

from __future__ import annotations

import pytest
from helpers.report_synthetic import build_report, make_signer
from helpers.rounds_synthetic import rounds_report

from qgate.attest.statement import Subject
from qgate.errors import VerificationFailed
from qgate.report.model import Report
from qgate.report.signing import sign_report
from qgate.report.verify.single import default_recompute, verify_bytes

SIGNER = make_signer("ecdsa")


def verify(report: Report) -> None:
    subjects = [Subject(name="profile/p.yaml", sha256=report.profile_sha256)]
    envelope = sign_report(report, subjects, SIGNER)
    verify_bytes(envelope, SIGNER.public_pem, recompute=default_recompute())


def _row(report: Report, metric: str) -> dict:  # type: ignore[type-arg]
    return next(c for c in report.perf.results[0].comparisons if c["metric"] == metric)


def test_a_report_with_rounds_verifies_and_holds_the_round_ratios() -> None:
    report = rounds_report(rounds=3)
    itl = _row(report, "itl_ms.p50")
    assert itl["rounds"] == 3 and len(itl["round_ratios"]) == 3
    assert itl["round_ratios"][0] < itl["round_ratios"][1] < itl["round_ratios"][2]
    assert (
        itl["round_ci_low"] < itl["round_ratios"][0] < itl["round_ratios"][2] < itl["round_ci_high"]
    )
    assert itl["ci_low"] <= itl["round_ci_low"] and itl["ci_high"] >= itl["round_ci_high"]
    verify(report)


@pytest.mark.parametrize("key", ["round_ratios", "round_ci_high", "ci_low"])
def test_an_edited_round_figure_is_rejected(key: str) -> None:
    report = rounds_report()
    row = _row(report, "itl_ms.p50")
    if key == "round_ratios":
        row[key] = [row[key][0], row[key][1] * 0.9]
    else:
        row[key] *= 1.01
    with pytest.raises(VerificationFailed, match="short: comparisons"):
        verify(report)


def test_records_without_a_round_the_profile_asks_for_are_rejected() -> None:
    report = rounds_report(rounds=3, held=2)  # consistent figures, one round short
    with pytest.raises(VerificationFailed, match=r"round\(s\) \[0, 1\], the run asks 3"):
        verify(report)


def test_one_round_needs_no_round_fields_in_the_runs() -> None:
    report = build_report(requests=4, fns=default_recompute())
    assert all(run.round == 0 for run in report.perf.runs)
    assert _row(report, "ttft_ms.p50")["rounds"] == 1
    verify(report)
