"""Graded perf probes in a signed report: verify re-derives the probe gate from the
records, rejects an edited verdict or answer, and a failed scenario's ratios are withheld."""

from __future__ import annotations

import pytest
from helpers.report_synthetic import build_report, make_signer

from qgate.attest.statement import Subject
from qgate.errors import VerificationFailed
from qgate.perf.gates import report_gates
from qgate.perf.probes import extract_answer, grade
from qgate.perf.records import RequestRecord
from qgate.profile import Profile
from qgate.report.assemble import perf_results
from qgate.report.model import Report
from qgate.report.render.compare import headline_interval
from qgate.report.render.md import render_markdown
from qgate.report.signing import sign_report
from qgate.report.verdict import overall
from qgate.report.verify.single import default_recompute, verify_bytes
from qgate.run.report import headline

SIGNER = make_signer("ecdsa")
TRUTH = {"m00001": "12", "m00002": "7", "m00003": "30", "m00004": "4"}


def verify(report: Report) -> None:
    subjects = [Subject(name="profile/p.yaml", sha256=report.profile_sha256)]
    envelope = sign_report(report, subjects, SIGNER)
    verify_bytes(envelope, SIGNER.public_pem, recompute=default_recompute())


def _probe(item: str, text: str, index: int) -> RequestRecord:
    return RequestRecord(
        index=index,
        probe_id=item,
        scheduled_ns=index * 1_000_000,
        sent_ns=index * 1_000_000,
        first_token_ns=index * 1_000_000 + 5,
        done_ns=index * 1_000_000 + 10,
        text=text,
        probe_answer=extract_answer(text),
        probe_truth=TRUTH[item],
        probe_correct=grade(text, TRUTH[item]),
    )


def probe_report(wrong: int) -> Report:
    """The synthetic report with graded probes: the candidate gets `wrong` items wrong."""
    report = build_report(requests=4, fns=default_recompute())
    profile = Profile.model_validate(report.profile)
    for run in report.perf.runs:
        for k, (item, truth) in enumerate(TRUTH.items()):
            bad = run.role == "candidate" and k < wrong
            text = f"The answer is {int(truth) + 1 if bad else truth}."
            run.requests.append(_probe(item, text, 10 + k))
    perf = report.perf
    perf.results = perf_results(profile.perf, perf.runs, resamples=200, seed=7)
    perf.gates = report_gates(profile.perf, perf.status, perf.results)
    report.verdict = overall(report.all_verdicts(), perf.status)
    return report


def test_passing_probes_verify_and_show_in_the_perf_section() -> None:
    report = probe_report(wrong=0)
    gates = [v for v in report.all_verdicts() if ".probes." in v.gate]
    assert [v.gate for v in gates] == [
        "perf.short.probes.max_flips",
        "perf.short.probes.significance",
    ]
    assert all(v.passed for v in gates) and report.verdict == "PASS"
    verify(report)
    md = render_markdown(report)
    assert "Graded probes under load" in md and "leave the probe requests out" in md
    assert "| short | 4/4 | 4/4 | 0 | 0 | PASS |" in md


def test_failed_probes_fail_the_run_and_withhold_the_scenario_ratios() -> None:
    report = probe_report(wrong=3)
    assert report.verdict == "FAIL"
    flips = next(v for v in report.all_verdicts() if v.gate == "perf.short.probes.max_flips")
    assert not flips.passed and flips.observed == 3
    verify(report)  # a FAIL that follows from its records verifies
    assert headline_interval(report)[0] is None  # the only scenario's ratio is withheld
    assert headline(report) == ["short: ratios withheld (its graded probes failed)"]
    md = render_markdown(report)
    assert "PROBES FAILED in short" in md and "m00001 answered 13 (truth 12)" in md
    # the records still hold the ratios
    assert report.perf.results[0].comparisons


def test_an_edited_probe_verdict_is_rejected() -> None:
    report = probe_report(wrong=3)
    for v in report.perf.results[0].verdicts:
        if ".probes." in v.gate:
            v.passed = True
    report.verdict = overall(report.all_verdicts(), report.perf.status)
    with pytest.raises(VerificationFailed, match=r"perf short: .*probes"):
        verify(report)


def test_an_edited_probe_answer_is_rejected() -> None:
    report = probe_report(wrong=0)
    cand = next(r for r in report.perf.runs if r.role == "candidate")
    probes = [r for r in cand.requests if r.probe_id]
    for r in probes[:2]:  # the texts say wrong; the stored grade still says right
        r.text = "The answer is 0."
    with pytest.raises(VerificationFailed, match=r"perf short: .*probes"):
        verify(report)
