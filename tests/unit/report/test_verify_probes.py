"""Graded perf probes in a signed report: verify re-derives the probe gate from the
records, rejects an edited verdict or answer, and a failed scenario's ratios are withheld."""

from __future__ import annotations

from typing import Any

import pytest
from helpers.report_synthetic import build_report, make_signer
from helpers.resign import rederived

from qgate.attest.statement import Subject
from qgate.errors import VerificationFailed
from qgate.perf.probes import extract_answer, grade
from qgate.perf.records import RequestRecord
from qgate.report.model import Report
from qgate.report.render.compare import headline_interval
from qgate.report.render.md import render_markdown
from qgate.report.render.probes_view import probe_table
from qgate.report.signing import sign_report
from qgate.report.verdict import overall
from qgate.report.verify.single import default_recompute, verify_bytes
from qgate.run.report import headline

SIGNER = make_signer("ecdsa")
# items of the synthetic report's math.short, by position: the candidate lost item 1 in its
# quality stage, the reference item 3; both answered the others right
ITEMS = [0, 1, 2, 4, 5]
_REF = next(
    r
    for r in build_report(requests=4, fns=default_recompute()).quality.runs
    if r.role == "reference"
)
IDS = [i.id for i in _REF.items]
TRUTHS = [int(i.expected) for i in _REF.items]


def verify(report: Report) -> Any:
    subjects = [Subject(name="profile/p.yaml", sha256=report.profile_sha256)]
    envelope = sign_report(report, subjects, SIGNER)
    return verify_bytes(envelope, SIGNER.public_pem, recompute=default_recompute())


def _probe(item: int, text: str, index: int, expected: str) -> RequestRecord:
    return RequestRecord(
        index=index,
        probe_id=IDS[item],
        scheduled_ns=index * 1_000_000,
        sent_ns=index * 1_000_000,
        first_token_ns=index * 1_000_000 + 5,
        done_ns=index * 1_000_000 + 10,
        text=text,
        probe_answer=extract_answer(text),
        probe_expected=expected,
        probe_truth=str(TRUTHS[item]),
        probe_correct=grade(text, str(TRUTHS[item])),
    )


def probe_report(wrong: int) -> Report:
    """The synthetic report with graded probes: under load the candidate gets `wrong` of the
    items it answered right in its quality stage wrong (and item 1, lost there, wrong too)."""
    report = build_report(requests=4, fns=default_recompute())
    report.profile["perf"]["probes"] = {"items": len(ITEMS)}  # the plan asks what is added
    # 4 judged answers (item 1 was lost at light load): clean, they bound the broken rate at
    # 52.7% (95%); this module shows the per-scenario gate, not the pooled one's power
    report.profile["envelope"] = {"max_broken": 0.6}
    quality = {(r.role, i.id): i.answer for r in report.quality.runs for i in r.items}
    for run in report.perf.runs:
        bad = 0
        for k, item in enumerate(ITEMS):
            wrong_here = run.role == "candidate" and (item == 1 or (item != 1 and bad < wrong))
            if run.role == "candidate" and item != 1 and bad < wrong:
                bad += 1
            truth = TRUTHS[item]
            text = f"The answer is {truth + 1 if wrong_here else truth}."
            expected = quality[(run.role, IDS[item])]
            run.requests.append(_probe(item, text, 10 + k, expected))
    return rederived(report)  # the one judge, as `qgate run` makes every group


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
    # item 1, lost in the candidate's quality stage, is left out of the pairs: 0 of 4 lost
    assert "| short | 5/5 | 4/5 | 0/4 | PASS |" in md
    flips = next(v for v in gates if v.gate.endswith("max_flips"))
    assert "1 item(s) left out, lost already in the candidate's quality stage" in flips.reason


def test_the_probe_table_shows_what_the_gate_counted() -> None:
    """The table's lost/judged is the probe gate's own max_flips verdict, not a pairing of the
    records made again in the view (issue 54 item 1)."""
    report = probe_report(wrong=0)
    (result,) = report.perf.results
    counted = [
        v.model_copy(update={"observed": 3.0, "n": 7}) if v.gate.endswith("max_flips") else v
        for v in result.verdicts
    ]
    shown = report.model_copy(
        update={
            "perf": report.perf.model_copy(
                update={"results": [result.model_copy(update={"verdicts": counted})]}
            )
        }
    )
    table = probe_table(shown)
    assert table is not None and table.rows == [["short", "5/5", "4/5", "3/7", "PASS"]]


def test_failed_probes_fail_the_run_and_withhold_the_scenario_ratios() -> None:
    report = probe_report(wrong=3)
    assert report.verdict == "FAIL"
    flips = next(v for v in report.all_verdicts() if v.gate == "perf.short.probes.max_flips")
    assert not flips.passed and flips.observed == 3
    verify(report)  # a FAIL that follows from its records verifies
    assert headline_interval(report)[0] is None  # the only scenario's ratio is withheld
    assert headline(report) == ["short: ratios withheld (its graded probes failed)"]
    md = render_markdown(report)
    assert (
        "PROBES FAILED in short" in md
        and f"{IDS[0]} answered {TRUTHS[0] + 1} (truth {TRUTHS[0]})" in md
    )
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
    probes = [r for r in cand.requests if r.probe_id in (IDS[2], IDS[4])]
    for r in probes:  # the texts say wrong; the stored grade still says right
        r.text = "The answer is 99."
    with pytest.raises(VerificationFailed, match=r"perf short: .*probes"):
        verify(report)


def test_an_edited_quality_stage_answer_of_a_probe_is_rejected() -> None:
    report = probe_report(wrong=0)
    cand = next(r for r in report.perf.runs if r.role == "candidate")
    lost = next(r for r in cand.requests if r.probe_id == IDS[1])
    lost.probe_expected = str(TRUTHS[1])  # would put the item back into the pairs
    with pytest.raises(VerificationFailed, match=rf"probe {IDS[1]} records '{TRUTHS[1]}'"):
        verify(report)


def _shaped(tokens: int) -> Report:
    """The passing probe report, its scenario serving 400-token prompts that the profile
    shapes its probes to (perf.probes.shaped: always, a 304-token preamble), each probe
    counted at `tokens` prompt tokens by the server."""
    report = probe_report(wrong=0)
    scenario = report.profile["perf"]["scenarios"][0]
    scenario["input_tokens"] = 400
    report.profile["perf"]["probes"]["shaped"] = "always"
    for run in report.perf.runs:
        for q in run.requests:
            if q.probe_id is not None:
                q.prompt_tokens = tokens
    return rederived(report)


def test_shaped_probes_asked_at_their_length_verify() -> None:
    report = _shaped(tokens=380)
    result = verify(report)
    assert result.report.verdict == report.verdict == "PASS"
    assert any("perf records hold every scenario run" in line for line in result.checked)


def test_a_short_probe_in_a_shaped_scenario_is_refused() -> None:
    """An insider who puts short-form asks (the ~60-token item alone, which a fault past a
    length never reaches) where the plan shapes them at the scenario's length."""
    with pytest.raises(VerificationFailed) as info:
        verify(_shaped(tokens=64))
    message = info.value.message
    assert "perf short: the candidate's round 1 block 1: probe" in message
    assert "64 prompt tokens stored, at least 304 re-derived (perf.probes.shaped" in message
