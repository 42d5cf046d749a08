"""The speculative counters are held to the tokens the suites generated (qgate/report/verify/
spec_tokens.py, issue 54): accepted tokens raised past what the math and recall items
generated, the counters' own arithmetic kept (accepted <= draft tokens, positions adding up),
are refused; the committed speculative runs verify."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.examples import predicate_of
from helpers.resign import rederived, resigned

from qgate.attest.statement import Subject
from qgate.errors import VerificationFailed
from qgate.gates.speculative import counter_problems
from qgate.profile import Profile
from qgate.quality.spec_counters import ACCEPTED, DRAFT_TOKENS, PER_POSITION
from qgate.report.model import Report
from qgate.report.verify.single import default_recompute, verify_bytes
from qgate.report.verify.spec_tokens import check_spec_generated

DRAFT = Path(__file__).resolve().parents[3] / "examples" / "h200" / "draft" / "run1"


def _candidates() -> list[Report]:
    multi = predicate_of(DRAFT / "report.intoto.jsonl")
    return [Report.model_validate(c["report"]) for c in multi["candidates"]]


def _speculating() -> Report:
    return next(r for r in _candidates() if r.quality.speculative)


def test_the_committed_speculative_runs_are_within_what_their_suites_generated() -> None:
    for report in _candidates():
        line = check_spec_generated(report, Profile.model_validate(report.profile))
        if report.quality.speculative:
            assert line == "speculative counters of 2 suite window(s) within the tokens generated"


def test_accepted_tokens_inflated_past_the_generated_tokens_are_refused() -> None:
    report = _speculating()
    profile = Profile.model_validate(report.profile)
    last = [s for s in report.quality.speculative if s.role == "candidate"][-1]
    raised = 3042.0 - last.counters[ACCEPTED]
    # the counters' own arithmetic kept: draft tokens and the last position raised with them
    last.counters[ACCEPTED] += raised
    last.counters[DRAFT_TOKENS] = max(last.counters[DRAFT_TOKENS], last.counters[ACCEPTED])
    position = max(k for k in last.counters if k.startswith(PER_POSITION + "{"))
    last.counters[position] += raised
    assert counter_problems(report.quality.speculative) == []
    with pytest.raises(
        VerificationFailed,
        match=r"^quality\.speculative \(candidate, after recall\): 2124 accepted tokens and 92 "
        r"drafts stored, at most 452 together re-derived from the 372 tokens its 20 items "
        r"generated ",
    ):
        check_spec_generated(report, profile)


def _signed_and_verified(report: Report) -> list[str]:
    subjects = [Subject(name="profile/p.yaml", sha256=report.profile_sha256)]
    envelope, public_pem = resigned(report, subjects)
    return verify_bytes(envelope, public_pem, recompute=default_recompute()).checked


def test_the_speculating_candidate_signed_alone_verifies_its_windows() -> None:
    checked = _signed_and_verified(_speculating())
    assert "speculative counters of 2 suite window(s) within the tokens generated" in checked


def test_an_insider_inflating_accepted_tokens_and_re_deriving_every_verdict_is_refused() -> None:
    """The speculating candidate's report out of the multi report, its accepted tokens raised
    (its own arithmetic kept), every verdict derived again and signed: refused by verify."""
    report = _speculating()
    last = [s for s in report.quality.speculative if s.role == "candidate"][-1]
    position = max(k for k in last.counters if k.startswith(PER_POSITION + "{"))
    for key in (ACCEPTED, DRAFT_TOKENS, position):
        last.counters[key] += 500
    rederived(report, quality=True)
    with pytest.raises(
        VerificationFailed, match=r"^quality\.speculative \(candidate, after recall"
    ):
        _signed_and_verified(report)
