"""The time series in a signed report: verify recomputes it, an edited bucket is rejected,
and reports of older derivations (no series) still verify on the figures they store."""

from __future__ import annotations

import pytest
from helpers.report_synthetic import build_report, make_signer
from helpers.resign import unsalted
from helpers.series_synthetic import series_report

from qgate.attest.statement import Subject
from qgate.core.verdict import Verdict
from qgate.errors import VerificationFailed
from qgate.gates.judgement import PERF_DERIVATION, QUALITY_V2_FIELDS
from qgate.report.model import Report
from qgate.report.signing import sign_report
from qgate.report.verify.single import default_recompute, verify_bytes

SIGNER = make_signer("ecdsa")


def verify(report: Report) -> None:
    subjects = [Subject(name="profile/p.yaml", sha256=report.profile_sha256)]
    envelope = sign_report(report, subjects, SIGNER)
    verify_bytes(envelope, SIGNER.public_pem, recompute=default_recompute())


def test_a_report_with_a_series_verifies() -> None:
    report = series_report()
    assert report.perf.derivation == PERF_DERIVATION == 15
    series = report.perf.results[0].candidate["time_series"]  # type: ignore[index]
    assert len(series["buckets"]) >= 3 and series["bucket_s"] == 0.05
    verify(report)


@pytest.mark.parametrize(
    ("key", "edit"),
    [
        ("output_throughput", lambda v: v * 1.01),
        ("completed", lambda v: v + 1),
        ("ttft_p90_ms", lambda v: v - 1.0),
    ],
)
def test_an_edited_bucket_is_rejected(key: str, edit: object) -> None:
    report = series_report()
    cand = report.perf.results[0].candidate
    assert cand is not None
    bucket = next(b for b in cand["time_series"]["buckets"] if b["completed"])
    bucket[key] = edit(bucket[key])  # type: ignore[operator]
    with pytest.raises(VerificationFailed, match="candidate summary: "):
        verify(report)


def test_a_dropped_series_is_rejected_at_the_current_derivation() -> None:
    report = series_report()
    cand = report.perf.results[0].candidate
    assert cand is not None
    del cand["time_series"]
    with pytest.raises(VerificationFailed, match="candidate summary: "):
        verify(report)


# revisions of committed examples that wrote perf derivation 1 and 2 (quality 1)
SIGNED_BY = {1: "git archive 7a13e74", 2: "git archive e7e159d"}


def as_signed_by_an_old_qgate(report: Report, revision: str, perf: int) -> None:
    """`report` as that revision wrote it: its derivations, no eval-result fields in the
    quality verdicts (quality 1), no unconfirmed-changes warning (quality 3)."""
    assert report.fingerprint is not None
    report.fingerprint.qgate_revision = revision
    report.perf.derivation, report.quality.derivation = perf, 1
    unsalted(report)
    report.quality.verdicts = [
        v.model_copy(update={k: Verdict.model_fields[k].default for k in QUALITY_V2_FIELDS})
        for v in report.quality.verdicts
    ]
    report.warnings = []


@pytest.mark.parametrize("derivation", [1, 2])
def test_older_derivations_without_a_series_still_verify(derivation: int) -> None:
    report = build_report(requests=4, fns=default_recompute())
    as_signed_by_an_old_qgate(report, SIGNED_BY[derivation], derivation)
    for result in report.perf.results:
        for summary in (result.reference, result.candidate):
            assert summary is not None and summary.pop("time_series") is None
    verify(report)
    # and they are still held to every figure they store
    cand = report.perf.results[0].candidate
    assert cand is not None
    cand["output_throughput"] *= 1.01
    with pytest.raises(VerificationFailed, match="candidate summary: "):
        verify(report)
