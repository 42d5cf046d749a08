"""Perf records dropped by someone who holds the key: verify holds each side's blocks per
round and requests per block to the profile (issue 43, insider edits). Each case edits a copy
of the committed CPU rounds run, derives every figure again and re-signs it with a fresh key,
as an insider would."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.resign import example_report, rederived, resigned_verify

from qgate.errors import VerificationFailed
from qgate.report.model import Report

RUN = Path(__file__).resolve().parents[3] / "examples" / "cpu" / "smollm2-cpu-rounds"
SCENARIO = "fixed-256x32@c1"


def _drop_block_pair(report: Report) -> None:
    """Round 2's second block of one scenario, both sides."""
    report.perf.runs = [
        r
        for r in report.perf.runs
        if not (r.scenario == SCENARIO and r.round == 1 and r.block == 1)
    ]
    rederived(report)


def _drop_request(report: Report) -> None:
    """The slowest measured request of the candidate's first block."""
    run = next(
        r
        for r in report.perf.runs
        if r.scenario == SCENARIO and r.role == "candidate" and r.round == 0 and r.block == 0
    )
    slowest = max(run.requests, key=lambda q: q.done_ns - q.sent_ns)
    run.requests = [q for q in run.requests if q is not slowest]
    rederived(report)


def test_the_unedited_copy_re_signed_verifies() -> None:
    result = resigned_verify(RUN, rederived)
    assert result.report.verdict == example_report(RUN).verdict


def test_a_dropped_block_pair_is_rejected_naming_blocks_per_round() -> None:
    with pytest.raises(VerificationFailed) as info:
        resigned_verify(RUN, _drop_block_pair)
    message = info.value.message
    assert f"perf {SCENARIO}: the candidate's round 2 holds blocks [1]" in message
    assert "blocks per round: 1 stored, 2 re-derived" in message


def test_a_dropped_request_is_rejected_naming_measured_requests() -> None:
    with pytest.raises(VerificationFailed) as info:
        resigned_verify(RUN, _drop_request)
    message = info.value.message
    assert f"perf {SCENARIO}: the candidate's round 1 block 1" in message
    assert "measured requests: 2 stored, 3 re-derived (perf.scenarios[0])" in message


def test_a_dropped_scenario_run_is_rejected() -> None:
    def drop(report: Report) -> None:
        report.perf.runs = [r for r in report.perf.runs if r.scenario != SCENARIO]
        rederived(report)

    with pytest.raises(VerificationFailed, match=f"scenario run {SCENARIO} of the profile"):
        resigned_verify(RUN, drop)
