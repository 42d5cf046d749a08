"""Both sides of a suite hold the same items (qgate/report/verify/paired_items.py): an item the
candidate lost, deleted from its records and every verdict derived again, is rejected."""

from __future__ import annotations

import pytest
from helpers.report_synthetic import build_report, make_signer

from qgate.attest.statement import Subject
from qgate.errors import VerificationFailed
from qgate.gates.quality import evaluate_quality
from qgate.profile import Profile
from qgate.report.model import Report
from qgate.report.signing import sign_report
from qgate.report.verdict import overall
from qgate.report.verify.paired_items import check_paired_items
from qgate.report.verify.single import default_recompute, verify_bytes

SIGNER = make_signer("ecdsa")


def _verify(report: Report) -> list[str]:
    subjects = [Subject(name="profile/p.yaml", sha256=report.profile_sha256)]
    envelope = sign_report(report, subjects, SIGNER)
    return verify_bytes(envelope, SIGNER.public_pem, recompute=default_recompute()).checked


def _rejudged(report: Report) -> Report:
    q = report.quality
    q.verdicts = evaluate_quality(
        Profile.model_validate(report.profile).quality, q.runs, q.divergence
    )
    report.verdict = overall(report.all_verdicts(), report.perf.status)
    return report


def test_the_synthetic_report_holds_the_same_items_on_both_sides() -> None:
    assert "1 suite(s): both sides hold the same items" in _verify(
        build_report(fns=default_recompute())
    )


def test_a_lost_item_deleted_from_the_candidate_alone_is_rejected() -> None:
    report = build_report(fns=default_recompute())
    cand = next(r for r in report.quality.runs if r.role == "candidate")
    lost = next(i for i in cand.items if not i.correct)
    cand.items = [i for i in cand.items if i.id != lost.id]
    _rejudged(report)
    with pytest.raises(VerificationFailed, match=rf"item {lost.id} is missing from the candidate"):
        _verify(report)


def test_an_item_the_reference_never_answered_is_rejected() -> None:
    report = build_report(fns=default_recompute())
    ref = next(r for r in report.quality.runs if r.role == "reference")
    gone = ref.items.pop()
    with pytest.raises(VerificationFailed, match=rf"item {gone.id} is missing from the reference"):
        check_paired_items(report.quality.runs)


def test_a_side_that_says_it_stopped_early_is_left_to_the_settle_check() -> None:
    report = build_report(fns=default_recompute())
    cand = next(r for r in report.quality.runs if r.role == "candidate")
    cand.planned, cand.stopped = len(cand.items), "verdict settled"
    cand.items = cand.items[:-2]
    assert check_paired_items(report.quality.runs) == "1 suite(s): both sides hold the same items"


def test_an_item_stored_twice_is_rejected() -> None:
    report = build_report(fns=default_recompute())
    cand = next(r for r in report.quality.runs if r.role == "candidate")
    cand.items.append(cand.items[0])
    with pytest.raises(VerificationFailed, match="an item stored twice"):
        check_paired_items(report.quality.runs)
