"""`qgate verify` re-grades a structured output cut by max_tokens by the report's quality
derivation: from 8 (agent_data.PREFIX_FROM) one that no continuation makes valid JSON for its
schema is `unconstrained` and the `constrained` gate FAILs; a report of derivation 7, signed by
a qgate that wrote 7, verifies with it `truncated`; an edited, re-signed report that changes
the kind either way is refused."""

from __future__ import annotations

import pytest
from helpers.agent_records import STRUCTURED as SUITE
from helpers.agent_records import rejudged, structured_profile, structured_run
from helpers.report_synthetic import (
    build_report,
    fake_compare,
    fake_scenario_verdicts,
    fake_summarize,
    make_signer,
)

from qgate.attest.statement import Subject
from qgate.core.verdict import Verdict
from qgate.errors import VerificationFailed
from qgate.gates.judgement import PERF_DERIVATION, QUALITY_DERIVATION
from qgate.gates.quality import evaluate_quality
from qgate.quality.agent_data import PREFIX_FROM, StructuredItem
from qgate.quality.records import SuiteRun
from qgate.report.model import Report
from qgate.report.signing import sign_report
from qgate.report.verify import derivation as derivations
from qgate.report.verify.recompute import Recompute
from qgate.report.verify.single import verify_bytes

N = 6
RAMBLE = "To add the two numbers, we first count the apples on the table and then"
"""SmolLM2 without the schema, cut by max_tokens (issue 53's drop:response_format run)."""
# the real quality gates (the `constrained` gate is theirs), the synthetic perf stand-ins
FNS = Recompute(evaluate_quality, fake_summarize, fake_compare, fake_scenario_verdicts)


def _run(role: str, rambled: set[int], quality: int) -> SuiteRun:
    """The result as `role` answered it, graded as quality derivation `quality` grades it:
    `rambled` items cut by max_tokens in prose, the others right."""

    def answer(n: int, item: StructuredItem, right: str) -> tuple[str, str]:
        return (RAMBLE, "length") if n in rambled else (right, "stop")

    return structured_run(role, N, answer, prefixes=quality >= PREFIX_FROM)


def _report(quality: int = QUALITY_DERIVATION) -> Report:
    """The synthetic report with one structured result: the candidate rambled on item 0."""
    report = build_report(profile_json=structured_profile(N), fns=FNS)
    ref, cand = report.quality.runs
    ours = [_run("reference", set(), quality), _run("candidate", {0}, quality)]
    report.quality.runs = [ref, ours[0], cand, ours[1]]
    return rejudged(report, quality, FNS, N)


def _relabelled(report: Report, failure: str) -> Report:
    """`report` with the rambled item's kind edited to `failure`, its verdicts made again
    from the edited records (what a key holder re-signs)."""
    cand = report.quality.runs[3]
    first = cand.items[0].model_copy(update={"failure": failure})
    report.quality.runs[3] = cand.model_copy(update={"items": [first, *cand.items[1:]]})
    return rejudged(report, report.quality.derivation, FNS, N)


def _verify(report: Report) -> object:
    signer = make_signer("ecdsa")
    subjects = [Subject(name="profile/p.yaml", sha256=report.profile_sha256)]
    return verify_bytes(sign_report(report, subjects, signer), signer.public_pem, recompute=FNS)


def _constrained(report: Report) -> Verdict:
    return next(v for v in report.quality.verdicts if v.gate == f"{SUITE}.constrained")


def _as_signed_by(report: Report, quality: int, monkeypatch: pytest.MonkeyPatch) -> None:
    assert report.fingerprint is not None
    report.fingerprint.qgate_revision = "git archive 0000007"
    monkeypatch.setitem(derivations.SIGNERS, "git archive 0000007", (quality, PERF_DERIVATION))


def test_a_cut_ramble_verifies_as_unconstrained_from_derivation_8() -> None:
    report = _report()
    assert report.quality.runs[3].items[0].failure == "unconstrained"
    gate = _constrained(report)
    assert not gate.passed and gate.observed == 1
    assert "cut by max_tokens where no continuation makes them valid (candidate 1 of 6)" in (
        gate.reason
    )
    assert report.verdict == "FAIL"
    _verify(report)  # raises on any mismatch


def test_a_kind_edited_to_truncated_is_refused() -> None:
    """The verdicts made again from the edited records agree with them: the item's re-grading
    is what refuses it."""
    report = _relabelled(_report(), "truncated")
    assert _constrained(report).passed
    with pytest.raises(
        VerificationFailed,
        match=r"item sum-0: stored failure 'truncated' but its response gives 'unconstrained'",
    ):
        _verify(report)


def test_a_derivation_7_report_verifies_it_truncated(monkeypatch: pytest.MonkeyPatch) -> None:
    """Signed by a qgate that wrote quality derivation 7 (listed in SIGNERS): the cut output is
    `truncated`, a wrong answer, and the `constrained` gate PASSes with 7's reason."""
    old = PREFIX_FROM - 1
    report = _report(old)
    assert report.quality.runs[3].items[0].failure == "truncated"
    gate = _constrained(report)
    assert gate.passed and gate.reason.endswith("valid JSON for its schema or cut by max_tokens")
    _as_signed_by(report, old, monkeypatch)
    _verify(report)
    # 7 does not call it unconstrained: an edit that does is refused
    edited = _relabelled(report, "unconstrained")
    assert not _constrained(edited).passed
    with pytest.raises(
        VerificationFailed,
        match=r"item sum-0: stored failure 'unconstrained' but its response gives 'truncated'",
    ):
        _verify(edited)


def test_a_report_cannot_claim_derivation_7_to_keep_it_truncated() -> None:
    """An unlisted signer's report is held to derivation 8: lowering the claim is refused."""
    report = _report(PREFIX_FROM - 1)
    with pytest.raises(VerificationFailed, match=r"quality\.derivation: 7 stored, 8 re-derived"):
        _verify(report)
