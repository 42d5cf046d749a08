"""Reports whose perf figures came from an older derivation are held to what they store."""

from __future__ import annotations

from typing import Any

from qgate.report.verify.recompute import _covers

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
    assert _covers(stored, [NEW_ROW, THROUGHPUT_NEW, ROW])
    assert _covers({"ttft_ms": {"p50": 40.0}}, {"ttft_ms": {"p50": 40.0, "p90": 51.0}})


def test_every_stored_figure_must_still_follow() -> None:
    edited = {**ROW, "ratio": 0.70}
    assert not _covers([edited, THROUGHPUT_OLD], [ROW, THROUGHPUT_NEW])
    assert not _covers([ROW], [THROUGHPUT_NEW])  # a stored row the records do not give
    assert not _covers({"ttft_ms": {"p50": 41.0}}, {"ttft_ms": {"p50": 40.0, "p90": 51.0}})
    assert not _covers({"ttft_ms": {"p50": 40.0, "p95": 1.0}}, {"ttft_ms": {"p50": 40.0}})


def test_a_stored_interval_must_match() -> None:
    wrong = {**THROUGHPUT_NEW, "ci_low": 1.25}
    assert not _covers([wrong], [THROUGHPUT_NEW])
    # an interval stored without resamples is not the "none derived" form
    forged = {**THROUGHPUT_OLD, "ratio": 9.9}
    assert not _covers([forged], [THROUGHPUT_NEW])


def test_a_newer_derivation_is_refused_by_name() -> None:
    import pytest
    from helpers.report_synthetic import FAKES, build_report, make_signer

    from qgate.attest.statement import Subject
    from qgate.errors import VerificationFailed
    from qgate.report.model import PERF_DERIVATION
    from qgate.report.signing import sign_report
    from qgate.report.verify.single import verify_bytes

    signer = make_signer("ecdsa")
    report = build_report()
    report.perf.derivation = PERF_DERIVATION + 1
    subjects = [Subject(name="profile/p.yaml", sha256=report.profile_sha256)]
    envelope = sign_report(report, subjects, signer)
    with pytest.raises(VerificationFailed, match=r"made by a newer qgate"):
        verify_bytes(envelope, signer.public_pem, recompute=FAKES)
