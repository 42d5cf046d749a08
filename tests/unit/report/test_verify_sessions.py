"""Graded session turns in a signed report (perf derivation 9): verify re-derives each turn's
truth from the profile's seed and the graded-turn gate from the records' texts; a dropped,
edited or re-graded turn is rejected naming it; the views show accuracy by turn."""

from __future__ import annotations

import copy
from collections.abc import Callable

import pytest
from helpers.report_synthetic import PROFILE, build_report, make_signer
from helpers.resign import rederived, unsalted

from qgate.attest.statement import Subject
from qgate.errors import VerificationFailed
from qgate.gates.judge import perf_results
from qgate.gates.speed import report_gates
from qgate.perf.records import RequestRecord
from qgate.perf.sessions import session_turns
from qgate.profile import Profile
from qgate.report.model import Report
from qgate.report.render.md import render_markdown
from qgate.report.signing import sign_report
from qgate.report.verdict import overall
from qgate.report.verify.single import default_recompute, verify_bytes

SIGNER = make_signer("ecdsa")


def verify(report: Report) -> list[str]:
    subjects = [Subject(name="profile/p.yaml", sha256=report.profile_sha256)]
    envelope = sign_report(report, subjects, SIGNER)
    return verify_bytes(envelope, SIGNER.public_pem, recompute=default_recompute()).checked


def _turn(k: int, t: int, text: str, index: int) -> RequestRecord:
    turn = session_turns(3, k, 4)[t]
    return RequestRecord(
        index=index,
        turn=t,
        concurrency=2,
        scheduled_ns=index * 1_000_000,
        sent_ns=index * 1_000_000,
        first_token_ns=index * 1_000_000 + 5,
        done_ns=index * 1_000_000 + 10,
        text=text,
        prompt_tokens=100,
        cached_prompt_tokens=25 * t,  # the history the prefix cache served, turn by turn
        probe_truth=turn.truth,
        probe_correct=None if turn.truth is None else text == turn.truth,
        graded_turn=turn.id,
    )


def refresh(report: Report) -> Report:
    """Results, gates and verdict re-made from the records, as run makes them."""
    profile = Profile.model_validate(report.profile)
    perf = report.perf
    perf.results = perf_results(
        profile.perf, perf.runs, resamples=perf.bootstrap_resamples, seed=perf.bootstrap_seed
    )
    perf.gates = report_gates(profile.perf, perf.status, perf.results)
    report.verdict = overall(report.all_verdicts(), perf.status)
    return report


def session_report(lost: int) -> Report:
    """The synthetic report whose scenario is a multi-turn one with 2 graded sessions of 4
    turns; the candidate answers its first `lost` graded turns wrongly."""
    profile = copy.deepcopy(PROFILE)
    profile["perf"]["scenarios"] = [
        {
            "name": "short",
            "kind": "multi_turn",
            "conversations": 2,
            "turns": 2,
            "graded": {"sessions": 2, "turns": 4, "seed": 3},
        }
    ]
    report = build_report(requests=4, fns=default_recompute(), profile_json=profile)
    for run in report.perf.runs:
        bad = lost if run.role == "candidate" else 0
        for k in range(2):
            for t, turn in enumerate(session_turns(3, k, 4)):
                text = "OK" if turn.truth is None else turn.truth
                if turn.truth is not None and bad > 0:
                    text, bad = "I do not know", bad - 1
                run.requests.append(_turn(k, t, text, 100 + 4 * k + t))
    return refresh(report)


def test_a_report_with_graded_turns_verifies_and_shows_accuracy_by_turn() -> None:
    report = session_report(lost=0)
    (result,) = report.perf.results
    assert [v.gate for v in result.verdicts][-2:] == [
        "perf.short.turns.max_flips",
        "perf.short.turns.significance",
    ]
    assert report.verdict == "PASS"
    checked = verify(report)
    assert any("and 16 graded session turns as the profile asks" in line for line in checked)
    md = render_markdown(report)
    assert "Graded session turns by turn index" in md
    assert "| short | 2 (code two turns back) | 2/2 | 2/2 | 50% | PASS |" in md
    assert "| short | 3 (running total) | 2/2 | 2/2 | 75% | PASS |" in md


def test_lost_turns_fail_the_gate_and_withhold_the_ratios() -> None:
    report = session_report(lost=2)
    assert report.verdict == "FAIL"
    (result,) = report.perf.results
    failed = [v for v in result.verdicts if not v.passed]
    assert [v.gate for v in failed] == ["perf.short.turns.max_flips"]
    verify(report)
    md = render_markdown(report)
    assert "GRADED TURNS FAILED in short: its ratios are withheld" in md
    assert "s0.t2 answered nothing (truth " in md


def test_an_edited_grade_or_text_no_longer_follows() -> None:
    report = session_report(lost=2)
    for r in report.perf.runs[1].requests:  # the candidate's: claims its wrong turns right
        if r.graded_turn and r.probe_truth:
            r.probe_correct = True
    verify(report)  # the grade is re-derived from the text, never read
    for r in report.perf.runs[1].requests:
        if r.graded_turn and r.probe_truth:
            r.text = r.probe_truth
    with pytest.raises(VerificationFailed, match=r"perf short: gate perf.short.turns.max_flips"):
        verify(report)


def test_a_dropped_turn_or_an_edited_truth_is_rejected_naming_it() -> None:
    report = session_report(lost=0)
    run = report.perf.runs[1]
    run.requests = [r for r in run.requests if r.graded_turn != "s1.t3"]
    with pytest.raises(VerificationFailed, match=r"graded turns: 7 stored, 8 re-derived"):
        verify(refresh(report))
    report = session_report(lost=0)
    turn = next(r for r in report.perf.runs[0].requests if r.graded_turn == "s0.t3")
    turn.probe_truth = turn.text = "999"
    with pytest.raises(VerificationFailed, match=r"graded turn s0.t3.probe_truth: '999' stored"):
        verify(refresh(report))


def test_graded_turns_need_perf_derivation_9() -> None:
    report = session_report(lost=0)
    report.perf.derivation = 8
    unsalted(report)
    with pytest.raises(VerificationFailed, match=r"perf.derivation: 8 stored, at least 9"):
        verify(report)


def _side_deleted(report: Report) -> None:
    report.perf.runs = [r for r in report.perf.runs if r.role != "candidate"]


def _lost_turns_deleted(report: Report) -> None:
    for run in report.perf.runs:
        run.requests = [r for r in run.requests if r.probe_correct is not False]


@pytest.mark.parametrize(
    ("drop", "message"),
    [
        (
            _side_deleted,
            "perf.runs: the candidate holds no records, perf ran plans 1 scenario run(s) x 1 "
            "round(s) x 1 block(s) (perf.blocks unset: 1 in sequence) of it; graded session "
            "turns: 0 stored, 8 re-derived",
        ),
        (
            _lost_turns_deleted,
            "perf short: the candidate's round 1 block 1: graded turns: 6 stored, 8 re-derived "
            "(2 sessions x 4 turns, each once)",
        ),
    ],
    ids=["the side with its lost turns", "the lost turns"],
)
def test_graded_turns_deleted_and_every_verdict_derived_again_are_refused(
    drop: Callable[[Report], None], message: str
) -> None:
    """Issue 54 item 2: the graded turns a side lost, deleted with the side's perf records or
    alone, every verdict derived again by the one judge and the report signed afresh, are
    refused (the turn gate and the speed gates would PASS on what is left)."""
    report = session_report(lost=2)
    assert report.verdict == "FAIL"
    drop(report)
    rederived(report, quality=True)
    with pytest.raises(VerificationFailed) as info:
        verify(report)
    assert info.value.message == message, info.value.message
