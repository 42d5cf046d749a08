"""Every life graded, in a signed report: verify re-derives each life's verdict from its
probes, rejects an edited verdict, answer or excluded round, and a failed life's round is
kept out of the ratios (its records kept)."""

from __future__ import annotations

import pytest
from helpers.report_synthetic import build_report, make_signer
from helpers.resign import rederived

from qgate.attest.statement import Subject
from qgate.errors import VerificationFailed
from qgate.gates.judge import lives_judged
from qgate.gates.judgement import Evidence, LivesSection
from qgate.perf.life_probes import LifeProbes
from qgate.perf.probes import extract_answer, grade
from qgate.perf.records import RequestRecord
from qgate.profile import Profile
from qgate.report.model import Report
from qgate.report.render.junit import render_junit
from qgate.report.render.md import render_markdown
from qgate.report.signing import sign_report
from qgate.report.verdict import overall
from qgate.report.verify.single import default_recompute, verify_bytes
from qgate.run.report import headline

SIGNER = make_signer("ecdsa")
_REF = next(
    r
    for r in build_report(requests=4, fns=default_recompute()).quality.runs
    if r.role == "reference"
)
IDS = [i.id for i in _REF.items]
TRUTHS = [int(i.expected) for i in _REF.items]
ITEMS = [0, 2, 4, 5]  # items the reference answered right in its quality stage


def verify(report: Report) -> list[str]:
    subjects = [Subject(name="profile/p.yaml", sha256=report.profile_sha256)]
    envelope = sign_report(report, subjects, SIGNER)
    return verify_bytes(envelope, SIGNER.public_pem, recompute=default_recompute()).checked


def _probes(wrong: int) -> list[RequestRecord]:
    out = []
    for k, item in enumerate(ITEMS):
        truth = TRUTHS[item] + (5 if k < wrong else 0)
        text = f"The answer is {truth}."
        out.append(
            RequestRecord(
                index=k,
                probe_id=IDS[item],
                scheduled_ns=k,
                sent_ns=k,
                first_token_ns=k + 1,
                done_ns=k + 2,
                text=text,
                probe_answer=extract_answer(text),
                probe_truth=str(TRUTHS[item]),
                probe_correct=grade(text, str(TRUTHS[item])),
            )
        )
    return out


def lives_report(idle_wrong: int, reference_idle_wrong: int = 0) -> Report:
    """The synthetic report with both sides' first lives probed at start and after 30 s idle;
    the candidate's first `idle_wrong` idle answers corrupted, and the reference's first
    `reference_idle_wrong`."""
    report = build_report(requests=4, fns=default_recompute())
    # 8 candidate probe answers: a clean pool bounds the broken rate at 31% (95%)
    report.profile["envelope"] = {"max_broken": 0.35}
    report.profile["lives"] = {"probes": len(ITEMS), "idle_s": 30.0}  # what the records hold
    records = [
        LifeProbes(
            side=role,
            role=role,  # type: ignore[arg-type]
            life=life,
            kind=kind,  # type: ignore[arg-type]
            idle_s=30.0 if kind == "idle" else 0.0,
            requests=_probes(
                {
                    ("candidate", "idle"): idle_wrong,
                    ("reference", "idle"): reference_idle_wrong,
                }.get((role, kind), 0)
            ),
        )
        for role, life in (("reference", 0), ("candidate", 1))
        for kind in ("start", "idle")
    ]
    report.lives = LivesSection(records=records, verdicts=[])
    return rederived(report)  # the one judge, as `qgate run` makes every group


def test_passing_lives_verify_and_show() -> None:
    report = lives_report(idle_wrong=0)
    assert report.lives is not None
    assert [v.gate for v in report.lives.verdicts] == [
        "lives.reference.1.start",  # the reference's own lives graded (perf derivation 12)
        "lives.reference.1.idle",
        "lives.candidate.2.start",
        "lives.candidate.2.idle",
    ]
    assert all(v.passed for v in report.lives.verdicts)
    assert report.verdict == "PASS" and report.lives.excluded_rounds == []
    assert "4 life verdicts re-derived from 16 probes of 2 lives" in verify(report)
    md = render_markdown(report)
    assert (
        "Every life graded" in md and "| candidate life 2 (round 1) | after 30 s idle | 4/4 |" in md
    )


def test_a_life_failing_after_idle_fails_the_run_and_leaves_the_ratios() -> None:
    report = lives_report(idle_wrong=1)
    assert report.lives is not None
    failed = [v for v in report.all_verdicts() if not v.passed]
    assert [v.gate for v in failed] == ["lives.candidate.2.idle", "envelope.broken_rate"]
    assert failed[1].inconclusive and "1 broken of 8 judged" in failed[1].reason
    assert report.verdict == "FAIL" and report.lives.excluded_rounds == [0]
    assert all(r.comparisons == [] for r in report.perf.results)  # round 0 in no ratio
    assert report.perf.runs  # ... and kept in the records
    verify(report)  # a FAIL that follows from its records verifies
    assert headline(report)[0].startswith("round(s) 1 kept out of the ratios")
    md = render_markdown(report)
    assert f"LIFE FAILED: candidate life 2 (round 1) after 30 s idle: {IDS[0]} answered" in md


def test_an_edited_life_verdict_is_rejected() -> None:
    report = lives_report(idle_wrong=1)
    assert report.lives is not None
    for v in report.lives.verdicts:
        v.passed = True
    report.lives.excluded_rounds = []
    report.verdict = overall(report.all_verdicts(), report.perf.status)
    with pytest.raises(VerificationFailed, match=r"lives verdicts: lives.candidate.2.idle.passed"):
        verify(report)


def test_an_edited_probe_text_is_rejected() -> None:
    report = lives_report(idle_wrong=0)
    assert report.lives is not None
    idle = report.lives.records[3]
    idle.requests[0].text = "The answer is 1234."  # wrong now; its stored answer and verdict not
    with pytest.raises(VerificationFailed, match=r"probe_answer .* re-derived from its text"):
        verify(report)
    idle.requests[0].probe_answer = "1234"  # the answer edited too: the verdict no longer follows
    with pytest.raises(VerificationFailed, match=r"lives.candidate.2.idle"):
        verify(report)


def test_an_edited_excluded_round_is_rejected() -> None:
    report = lives_report(idle_wrong=1)
    assert report.lives is not None
    report.lives.excluded_rounds = []
    with pytest.raises(VerificationFailed, match=r"lives.excluded_rounds: \[\] stored, \[0\]"):
        verify(report)


def test_ratios_computed_over_a_failed_round_are_rejected() -> None:
    report = lives_report(idle_wrong=1)
    good = lives_report(idle_wrong=0)
    report.perf.results = good.perf.results  # the ratios of the failed life put back
    with pytest.raises(VerificationFailed, match=r"comparisons"):
        verify(report)


def test_a_started_life_relabelled_an_endpoint_is_rejected_with_its_verdicts_rederived() -> None:
    """The endpoint label is data the verdict's reason is read from, and the profile decides
    it: both sides here are started (vllm), so a record claiming an endpoint is edited."""
    report = lives_report(idle_wrong=1)
    assert report.lives is not None
    records = report.lives.records
    for p in records:
        p.endpoint = True
    report.lives = _lives(Profile.model_validate(report.profile), report, records)
    assert report.lives is not None
    reason = next(v.reason for v in report.lives.verdicts if not v.passed)
    assert reason.startswith("candidate endpoint (round 1; already running, not started by qgate)")
    assert "| candidate endpoint (round 1; already running" in render_markdown(report)
    with pytest.raises(
        VerificationFailed,
        match=r"lives: reference life 1 start: endpoint True stored, False from the profile "
        r"\(its reference engine is 'vllm'\)",
    ):
        verify(report)


def _lives(profile: Profile, report: Report, records: list[LifeProbes]) -> LivesSection | None:
    """The lives section the judge makes of `records` beside the report's quality runs."""
    runs = tuple(report.quality.runs)
    return lives_judged(profile, Evidence(runs=runs, life_probes=tuple(records)))


def test_the_pooled_envelope_gate_shows_in_every_view() -> None:
    report = lives_report(idle_wrong=1)  # 1 broken of 8 pooled answers: INCONCLUSIVE at 35%
    (pooled,) = report.envelope
    assert pooled.inconclusive and pooled.n == 8 and pooled.limit == 0.35
    md = render_markdown(report)
    assert "INCONCLUSIVE envelope.broken_rate: envelope.broken_rate: INCONCLUSIVE" in md
    assert "| envelope.broken_rate | 0.4707 | <= 0.35 | 8 |" in md
    junit = render_junit(report)
    assert '<testcase name="envelope.broken_rate" classname="envelope"' in junit
    assert 'type="GateInconclusive"' in junit


def test_an_edited_or_deleted_pooled_envelope_verdict_is_rejected() -> None:
    report = lives_report(idle_wrong=1)
    report.envelope[0].passed, report.envelope[0].inconclusive = True, False
    with pytest.raises(
        VerificationFailed,
        match=r"envelope: gate envelope\.broken_rate: passed: True stored, False re-derived",
    ):
        verify(report)
    report.envelope = []
    with pytest.raises(VerificationFailed, match=r"gate envelope\.broken_rate is missing"):
        verify(report)


def test_a_broken_reference_life_makes_the_run_inconclusive_and_verifies() -> None:
    """Issue 53 item 5: the reference's one idle life answers every item it had right in its
    quality stage wrong: INCONCLUSIVE, named by life, round and node (the fingerprint's host,
    no cluster), its round out of the ratios, and the candidate's idle life not judged
    against it (never passed silently)."""
    report = lives_report(idle_wrong=0, reference_idle_wrong=4)
    assert report.lives is not None
    unsure = [v for v in report.all_verdicts() if not v.passed]
    assert [v.gate for v in unsure] == ["lives.reference.1.idle", "lives.candidate.2.idle"]
    assert all(v.inconclusive for v in unsure)
    assert unsure[0].reason.startswith(
        "INCONCLUSIVE: reference life 1 (round 1, node ci-host) after 30 s idle: lost 4 of 4"
    )
    assert "its round is kept out of the ratios" in unsure[0].reason
    assert report.verdict == "INCONCLUSIVE" and report.lives.excluded_rounds == [0]
    assert all(r.comparisons == [] for r in report.perf.results)
    assert "4 life verdicts re-derived" in " ".join(verify(report))
    md = render_markdown(report)
    assert "REFERENCE LIFE INCONCLUSIVE: reference life 1 (round 1, node ci-host)" in md
    assert "| reference life 1 (round 1) | after 30 s idle | 0/4 | 4/4 | INCONCLUSIVE |" in md
    assert headline(report)[0].startswith("round(s) 1 kept out of the ratios")


def test_a_broken_reference_lifes_deleted_verdict_is_refused() -> None:
    report = lives_report(idle_wrong=0, reference_idle_wrong=4)
    assert report.lives is not None
    report.lives.verdicts = [v for v in report.lives.verdicts if v.gate != "lives.reference.1.idle"]
    with pytest.raises(
        VerificationFailed,
        match=r"lives verdicts: lives\.reference\.1\.idle re-derived from the records but not "
        "stored",
    ):
        verify(report)
    # ... and with everything it decided undone: the candidate's life passed, the round back
    # in the ratios, the run PASS (the insider's report of a healthy baseline)
    for v in report.lives.verdicts:
        v.passed, v.inconclusive = True, False
    report.lives.excluded_rounds = []
    report.perf.results = lives_report(idle_wrong=0).perf.results
    report.verdict = "PASS"
    with pytest.raises(VerificationFailed, match=r"lives verdicts: lives\.candidate\.2\.idle"):
        verify(report)


def test_every_life_of_both_sides_deleted_with_their_starts_is_refused() -> None:
    """Issue 54: the profile probes every life, so a report holding no life probe and no life
    start (an insider deleting them all, every verdict re-derived) does not verify."""
    report = lives_report(idle_wrong=2)
    report.lives = None
    report.starts = [s for s in report.starts if s.purpose != "life"]
    with pytest.raises(VerificationFailed, match="start probe records of no life in round"):
        verify(rederived(report))
