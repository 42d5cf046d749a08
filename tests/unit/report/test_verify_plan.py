"""verify holds a report's probes to the plan (issue 54 item 2): every life its starts name
carries its start probes, and its idle probes where the profile pauses; every perf scenario
run carries the probe asks `perf.probes.items` places, whatever its records hold. An insider
who deletes a life's records, or a scenario's probe asks, and derives every verdict again no
longer gets a report that verifies. The committed KV-offload envelope run (perf derivation
9) stands in for a run of this qgate: its revision unnamed and its derivation 10, it verifies
as it is."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers.resign import rederived, resigned_verify

from qgate.errors import VerificationFailed
from qgate.gates.judgement import PERF_DERIVATION, QUALITY_DERIVATION
from qgate.perf.probes import extract_answer
from qgate.report.model import Report

RUN = Path(__file__).resolve().parents[3] / "examples" / "h200" / "kv-offload-envelope"


def _as_made_now(drop: Callable[[Report], None] | None = None) -> Callable[[Report], None]:
    """The edit: the report as this qgate would sign it, then `drop` applied, the life verdicts
    and every figure derived again."""

    def edit(report: Report) -> None:
        assert report.fingerprint is not None
        report.fingerprint.qgate_revision = None  # held to this qgate's derivations
        report.quality.derivation = QUALITY_DERIVATION
        report.perf.derivation = PERF_DERIVATION
        if drop is not None:
            drop(report)
        rederived(report)  # the lives, the pooled envelope and every figure, by the judge

    return edit


def test_the_run_as_this_qgate_would_sign_it_verifies() -> None:
    result = resigned_verify(RUN, _as_made_now())
    # judged today, the run's 22 clean probe answers bound its broken rate at 12.7%: not
    # shown within the default 10%, so INCONCLUSIVE, the pooled gate the only one not passed
    report = result.report
    assert report.verdict == "INCONCLUSIVE"
    assert [v.gate for v in report.all_verdicts() if not v.passed] == ["envelope.broken_rate"]
    assert report.envelope[0].n == 22 and report.envelope[0].inconclusive


def _without(kind: str, side: str) -> Callable[[Report], None]:
    def drop(report: Report) -> None:
        assert report.lives is not None
        report.lives.records = [
            p for p in report.lives.records if not (p.kind == kind and p.side == side)
        ]

    return drop


@pytest.mark.parametrize(
    ("kind", "side", "message"),
    [
        ("idle", "candidate", "lives: candidate has idle probe records for 0 of its 1 lives"),
        ("start", "candidate", "lives: candidate has start probe records for 0 of its 1 lives"),
        ("idle", "reference", "lives: reference has idle probe records for 0 of its 1 lives"),
    ],
)
def test_a_lives_deleted_probe_records_are_refused(kind: str, side: str, message: str) -> None:
    with pytest.raises(VerificationFailed) as info:
        resigned_verify(RUN, _as_made_now(_without(kind, side)))
    assert info.value.message.startswith(message), info.value.message
    assert "the profile asks 4 probe(s) of every life" in info.value.message


def test_the_whole_lives_section_deleted_is_refused() -> None:
    def drop(report: Report) -> None:
        report.lives = None

    with pytest.raises(VerificationFailed, match="lives: reference has start probe records"):
        resigned_verify(RUN, _as_made_now(drop))


def _probes_dropped(role: str, only_first: bool) -> Callable[[Report], None]:
    def drop(report: Report) -> None:
        run = next(r for r in report.perf.runs if r.role == role and r.scenario.startswith("fixed"))
        asks = [q for q in run.requests if q.probe_id is not None]
        gone = {id(q) for q in (asks[:1] if only_first else asks)}
        run.requests = [q for q in run.requests if id(q) not in gone]

    return drop


@pytest.mark.parametrize("only_first", [True, False], ids=["one ask", "every ask"])
def test_deleted_perf_probe_asks_are_refused(only_first: bool) -> None:
    with pytest.raises(VerificationFailed) as info:
        resigned_verify(RUN, _as_made_now(_probes_dropped("candidate", only_first)))
    assert "quality probes:" in info.value.message and "re-derived" in info.value.message


def _reference_idle_broken(report: Report) -> None:
    """The reference's one idle life answers every probe wrong (digits rotated by 5)."""
    assert report.lives is not None
    for p in report.lives.records:
        if (p.side, p.kind) == ("reference", "idle"):
            for r in p.requests:
                assert r.text is not None and r.probe_truth is not None
                r.text = r.text.replace(r.probe_truth, str((int(r.probe_truth) + 5) % 100))
                r.probe_answer = extract_answer(r.text)
                r.probe_correct = False


def _and_then(*edits: Callable[[Report], None]) -> Callable[[Report], None]:
    def drop(report: Report) -> None:
        for edit in edits:
            edit(report)

    return drop


def test_a_broken_reference_life_verifies_as_inconclusive_naming_its_node() -> None:
    result = resigned_verify(RUN, _as_made_now(_reference_idle_broken))
    report = result.report
    assert report.lives is not None and report.fingerprint is not None
    v = next(v for v in report.lives.verdicts if v.gate == "lives.reference.1.idle")
    assert v.inconclusive and not v.passed
    assert v.reason.startswith(
        f"INCONCLUSIVE: reference life 1 (round 1, node {report.fingerprint.hostname}) after "
        "52 s idle: lost 4 of 4"
    )
    assert report.verdict == "INCONCLUSIVE" and report.lives.excluded_rounds == [0]


def _reference_idle_record_deleted(report: Report) -> None:
    assert report.lives is not None
    report.lives.records = [
        p for p in report.lives.records if (p.side, p.kind) != ("reference", "idle")
    ]


def _reference_idle_wrong_answers_deleted(report: Report) -> None:
    assert report.lives is not None
    for p in report.lives.records:
        if (p.side, p.kind) == ("reference", "idle"):
            p.requests = p.requests[:1]  # one wrong answer left: lost 1 of 1 ...


def _reference_idle_truths_edited(report: Report) -> None:
    assert report.lives is not None
    for p in report.lives.records:
        if (p.side, p.kind) == ("reference", "idle"):
            for r in p.requests:
                r.probe_truth = r.probe_answer  # the garbled answers made "right"
                r.probe_correct = True


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            _reference_idle_record_deleted,
            "lives: reference has idle probe records for 0 of its 1 lives",
        ),
        (
            _reference_idle_wrong_answers_deleted,
            "lives: reference life 1 idle: 1 probe(s) of 1 item(s) stored, 4 distinct "
            "re-derived from the profile (lives.probes)",
        ),
        (
            _reference_idle_truths_edited,
            "lives: reference life 1 idle probe multi-0001: probe_truth",
        ),
    ],
    ids=["record deleted", "wrong answers deleted", "truths edited"],
)
def test_an_insider_hiding_a_broken_reference_life_is_refused(
    edit: Callable[[Report], None], message: str
) -> None:
    """Issue 53 item 5 held by verify: the broken reference life's record, its wrong answers
    or their known answers edited away, every verdict derived again and the report re-signed,
    is refused (its verdict would have made the run INCONCLUSIVE)."""
    with pytest.raises(VerificationFailed) as info:
        resigned_verify(RUN, _as_made_now(_and_then(_reference_idle_broken, edit)))
    assert info.value.message.startswith(message), info.value.message


def _candidate_probe_wrong_and_its_truth_edited(report: Report) -> None:
    """A candidate probe answers wrongly (digits rotated by 5) and its `probe_truth` is edited
    to that answer, so the probe gate counts it right."""
    run = next(r for r in report.perf.runs if r.role == "candidate" and r.requests)
    r = next(q for q in run.requests if q.probe_id is not None and q.probe_truth is not None)
    assert r.text is not None and r.probe_truth is not None
    wrong = str((int(r.probe_truth) + 5) % 100)
    r.text = r.text.replace(r.probe_truth, wrong)
    r.probe_answer = extract_answer(r.text)
    r.probe_truth, r.probe_correct = wrong, True


def test_a_perf_probes_edited_truth_is_refused_naming_both_values() -> None:
    """Issue 54: a perf probe's `probe_truth` was never held to the math item, so an edited
    truth turned a lost probe into a right one (or one lost already in the quality stage)."""
    with pytest.raises(VerificationFailed) as info:
        resigned_verify(RUN, _as_made_now(_candidate_probe_wrong_and_its_truth_edited))
    assert re.match(
        r"perf fixed-\S+: the candidate's probe multi-0001\.probe_truth: '14' stored, '9' the "
        r"item's expected answer in the reference's quality records$",
        info.value.message,
    ), info.value.message


def _idle_broken(side: str) -> Callable[[Report], None]:
    """The side's one life answers every idle probe wrong (digits rotated by 5): it fails."""

    def edit(report: Report) -> None:
        assert report.lives is not None
        for p in report.lives.records:
            if (p.side, p.kind) == (side, "idle"):
                for r in p.requests:
                    assert r.text is not None and r.probe_truth is not None
                    r.text = r.text.replace(r.probe_truth, str((int(r.probe_truth) + 5) % 100))
                    r.probe_answer = extract_answer(r.text)
                    r.probe_correct = False

    return edit


def _life_deleted_with_its_start(side: str) -> Callable[[Report], None]:
    def drop(report: Report) -> None:
        assert report.lives is not None
        report.lives.records = [p for p in report.lives.records if p.side != side]
        report.starts = [s for s in report.starts if (s.purpose, s.side) != ("life", side)]

    return drop


@pytest.mark.parametrize("side", ["candidate", "reference"])
def test_a_failed_life_deleted_with_its_start_is_refused(side: str) -> None:
    """Issue 54: the lives were counted from the starts, so deleting a failed life's start
    with its probe records left a side that served its quality stage and perf with no life."""
    with pytest.raises(VerificationFailed) as info:
        resigned_verify(
            RUN, _as_made_now(_and_then(_idle_broken(side), _life_deleted_with_its_start(side)))
        )
    assert info.value.message.startswith(
        f"lives: the {side} has start probe records of no life in round(s) 1, where its "
        "quality or perf records show it served"
    ), info.value.message
