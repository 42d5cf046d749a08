"""verify holds the reuse passes to the plan (issue 54 item 2): each side holds the cold pass and
every pass of `quality.reuse.passes`, each over the results the passes ask again, each asking
the items its suite's cut to `quality.reuse.limit` holds, and the restored pass its reset
probes. An insider who deletes the items a candidate lost in a pass (the reference's same items
with them), a whole pass, or the reset probes, derives every verdict again with the judge and
signs afresh, no longer gets a report that verifies. The committed KV-offload envelope run
(three passes over recall.1024, limit 64: 13 haystacks of 5 depths) stands in, as this qgate
would sign it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from helpers.resign import rederived, resigned_verify

from qgate.errors import VerificationFailed
from qgate.gates.judge import perf_status
from qgate.gates.judgement import PERF_DERIVATION, QUALITY_DERIVATION
from qgate.report.model import Report

RUN = Path(__file__).resolve().parents[3] / "examples" / "h200" / "kv-offload-envelope"


def _as_made_now(drop: Callable[[Report], None] | None = None) -> Callable[[Report], None]:
    """The report as this qgate would sign it, `drop` applied, every verdict (the quality
    verdicts included) derived again by the judge, and the perf status with them: where a gate
    no longer passes, the perf stage forced past it (`ungated`), as its records say it ran."""

    def edit(report: Report) -> None:
        assert report.fingerprint is not None
        report.fingerprint.qgate_revision = None  # held to this qgate's derivations
        report.quality.derivation = QUALITY_DERIVATION
        report.perf.derivation = PERF_DERIVATION
        if drop is not None:
            drop(report)
        rederived(report, quality=True)
        report.perf.status = perf_status(report.quality.verdicts, False, force_perf=True)
        rederived(report, quality=True)

    return edit


def test_the_run_holds_the_planned_passes() -> None:
    result = resigned_verify(RUN, _as_made_now())
    assert (
        "reuse passes hold the plan: 4 a side over 1 result(s), 390 items asked again"
        in result.checked
    )


def _lost_load_items_deleted(report: Report) -> None:
    """The items the candidate answered wrong in its load pass, gone from both sides' load
    pass (the pass's paired gates and its self-flips then count none of them)."""
    load = [p for p in report.quality.passes if p.name == "load"]
    cand = next(s.run for p in load if p.role == "candidate" for s in p.suites)
    assert cand is not None
    wrong = {i.id for i in cand.items if not i.correct}
    assert len(wrong) == 29
    for p in load:
        for s in p.suites:
            assert s.run is not None
            s.run.items = [i for i in s.run.items if i.id not in wrong]


def _load_pass_deleted(report: Report) -> None:
    report.quality.passes = [p for p in report.quality.passes if p.name != "load"]


def _reset_probes_deleted(report: Report) -> None:
    for p in report.quality.passes:
        p.probes = []


@pytest.mark.parametrize(
    ("drop", "message"),
    [
        (
            _lost_load_items_deleted,
            "quality.passes: the reference's load pass of recall.1024: 36 items stored, 65 "
            "planned (quality.reuse.limit 64, of the 95 its first ask planned, each once)",
        ),
        (
            _load_pass_deleted,
            "quality.passes: the reference holds passes ['cold', 'warm', 'restored'], the "
            "profile plans ['cold', 'warm', 'restored', 'load'] (the cold pass, then "
            "quality.reuse.passes): 3 stored, 4 planned",
        ),
        (
            _reset_probes_deleted,
            "quality.passes: the reference's restored pass holds reset probes [], the plan "
            "['probe:before-reset', 'probe:after-reset']",
        ),
    ],
    ids=["lost items deleted", "pass deleted", "reset probes deleted"],
)
def test_a_pass_short_of_the_plan_is_refused(drop: Callable[[Report], None], message: str) -> None:
    with pytest.raises(VerificationFailed) as info:
        resigned_verify(RUN, _as_made_now(drop))
    assert info.value.message == message, info.value.message
