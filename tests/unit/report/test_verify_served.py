"""`qgate verify` re-derives each agent result's `served` gate (quality derivation 8) from the
records: a report whose candidate refused items the reference served verifies as FAIL, and an
edited, re-signed report whose gate is flipped or deleted is refused; a report of derivation 7,
signed by a qgate that wrote 7, verifies without the gate, and a report cannot claim 7 to
escape it."""

from __future__ import annotations

import pytest
from helpers.agent_records import STRUCTURED as SUITE
from helpers.agent_records import rejudged, right_json, structured_profile, structured_run
from helpers.report_synthetic import FAKES, build_report, make_signer

from qgate.attest.statement import Subject
from qgate.core.verdict import Verdict
from qgate.errors import VerificationFailed
from qgate.gates.agent import SERVED_FROM
from qgate.gates.judgement import PERF_DERIVATION, QUALITY_DERIVATION
from qgate.quality.agent_data import HTTP_ERROR, StructuredItem
from qgate.quality.records import SuiteRun
from qgate.report.model import Report
from qgate.report.signing import sign_report
from qgate.report.verify import derivation as derivations
from qgate.report.verify.single import verify_bytes

N = 6
REFUSED = "HTTP 400: response_format: schema not supported"


def _run(role: str, refused: set[int], wrong: set[int] = frozenset()) -> SuiteRun:  # type: ignore[assignment]
    """The result as `role` answered it: `refused` with HTTP 400, `wrong` with a wrong value."""

    def answer(n: int, item: StructuredItem, right: str) -> tuple[str, str]:
        if n in refused:
            return REFUSED, HTTP_ERROR
        return (right_json(item, wrong=True) if n in wrong else right), "stop"

    return structured_run(role, N, answer)


def _report(refused: set[int], quality: int = QUALITY_DERIVATION) -> Report:
    """The synthetic report with one structured result: the reference serves every item and
    has `refused` wrong, the candidate answers those with HTTP 400 (tools-25's shape: no loss
    for the accuracy gates to see); its perf ran where the quality gates passed."""
    report = build_report(profile_json=structured_profile(N))
    ref, cand = report.quality.runs
    report.quality.runs = [ref, _run("reference", set(), refused), cand, _run("candidate", refused)]
    return rejudged(report, quality, FAKES, N)


def _verify(report: Report) -> object:
    signer = make_signer("ecdsa")
    subjects = [Subject(name="profile/p.yaml", sha256=report.profile_sha256)]
    return verify_bytes(sign_report(report, subjects, signer), signer.public_pem, recompute=FAKES)


def _served(report: Report) -> Verdict:
    return next(v for v in report.quality.verdicts if v.gate == f"{SUITE}.served")


def test_a_refusing_candidate_verifies_as_failed_on_the_served_gate() -> None:
    report = _report({1, 4})
    gate = _served(report)
    assert not gate.passed and gate.observed == 2 and "HTTP 400: response_format" in gate.reason
    assert report.verdict == "FAIL" and report.perf.status == "skipped: gates failed"
    assert [v.gate for v in report.quality.verdicts if not v.passed] == [gate.gate]
    _verify(report)  # raises on any mismatch
    assert _served(_report(set())).passed


@pytest.mark.parametrize("edit", ["flipped", "deleted"])
def test_a_flipped_or_deleted_served_gate_is_refused(edit: str) -> None:
    report = _report({1, 4})
    verdicts = report.quality.verdicts
    if edit == "flipped":
        report.quality.verdicts = [
            v.model_copy(update={"passed": True, "observed": 0.0})
            if v.gate.endswith(".served")
            else v
            for v in verdicts
        ]
    else:
        report.quality.verdicts = [v for v in verdicts if not v.gate.endswith(".served")]
    report.verdict = "PASS" if all(v.passed for v in report.all_verdicts()) else report.verdict
    with pytest.raises(VerificationFailed, match=r"structured\.response_format\.served"):
        _verify(report)


def test_a_derivation_7_report_verifies_without_the_gate(monkeypatch: pytest.MonkeyPatch) -> None:
    """Signed by a qgate that wrote quality derivation 7 (listed in SIGNERS): no served gate
    is made or expected, the refusals cost nothing, as they did then."""
    old = SERVED_FROM - 1
    report = _report({1, 4}, quality=old)
    assert not any(v.gate.endswith(".served") for v in report.quality.verdicts)
    assert report.verdict == "PASS"
    assert report.fingerprint is not None
    report.fingerprint.qgate_revision = "git archive 0000007"
    monkeypatch.setitem(derivations.SIGNERS, "git archive 0000007", (old, PERF_DERIVATION))
    _verify(report)
    # the gate added to a derivation-7 report is refused too: 7 makes none
    report.quality.verdicts = _report({1, 4}).quality.verdicts
    with pytest.raises(VerificationFailed, match=r"structured\.response_format\.served"):
        _verify(report)


def test_a_report_cannot_claim_derivation_7_to_drop_the_gate() -> None:
    """An unlisted signer's report is held to derivation 8: lowering the claim is refused."""
    report = _report({1, 4}, quality=SERVED_FROM - 1)
    with pytest.raises(VerificationFailed, match=r"quality\.derivation: 7 stored, 8 re-derived"):
        _verify(report)
