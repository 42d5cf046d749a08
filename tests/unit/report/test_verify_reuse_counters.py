"""`qgate verify` checks the reuse counters for their own arithmetic (issue 43, insider edits):
copies of the H200 offload run's counters, edited as a key holder could, are rejected naming the
field and both values; what rests on the signature alone is listed as such."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.examples import predicate_of

from qgate.errors import VerificationFailed
from qgate.quality.reuse_records import COMPUTED, DEVICE
from qgate.report.model import Report
from qgate.report.verify.reuse import TOTAL, check_counters
from qgate.report.verify.single import signed_only

RUN = Path(__file__).resolve().parents[3] / "examples" / "h200" / "kv-offload"


def _report() -> Report:
    return Report.model_validate(predicate_of(RUN / "report.intoto.jsonl"))


def _at(report: Report, name: str, role: str) -> int:
    return next(i for i, p in enumerate(report.quality.passes) if (p.name, p.role) == (name, role))


def test_the_real_counters_hold_their_arithmetic() -> None:
    assert check_counters(_report()) == 16


def test_a_total_that_is_not_the_sum_of_its_sources_is_rejected() -> None:
    report = _report()
    i = _at(report, "warm", "candidate")
    report.quality.passes[i].suites[0].after[TOTAL] += 5000.0
    with pytest.raises(
        VerificationFailed,
        match=r"suites\[0\]\.after\[vllm:prompt_tokens_total\] = 576,577 is not the sum of "
        r"its sources \(571,577",
    ):
        check_counters(report)


def test_a_counter_going_backwards_between_scrapes_is_rejected() -> None:
    report = _report()
    i = _at(report, "restored", "candidate")
    s = report.quality.passes[i].suites[0]
    s.before[DEVICE] -= 30000.0  # a restored window that seems to hold more device hits
    s.before[COMPUTED] += 30000.0  # keeps the total the sum of its sources
    with pytest.raises(VerificationFailed, match=r"went backwards from"):
        check_counters(report)


def test_one_side_counting_far_more_prompt_tokens_for_the_same_items_is_rejected() -> None:
    report = _report()
    i = _at(report, "warm", "reference")
    s = report.quality.passes[i].suites[0]
    for scrape in (s.after,):
        scrape[COMPUTED] += 200000.0
        scrape[TOTAL] += 200000.0
    # later scrapes of that side follow, so only the comparison of the sides can catch it
    for p in report.quality.passes[i + 1 :]:
        if p.role == "reference":
            for x in p.suites:
                for scrape in (x.before, x.after):
                    scrape[COMPUTED] += 200000.0
                    scrape[TOTAL] += 200000.0
    with pytest.raises(
        VerificationFailed,
        match=r"warm recall.1024: counter window prompt tokens candidate 70,808 .* "
        r"reference 270,808",
    ):
        check_counters(report)


def test_the_counters_are_listed_as_resting_on_the_signature() -> None:
    lines = signed_only(_report())
    assert any(line.startswith("quality.passes: the server counters") for line in lines)
