"""Where a run's time went: start-ups, suites, perf windows and the rest add up to its stages."""

from __future__ import annotations

from qgate.core.serving import ServerStart
from qgate.report.derive import time_breakdown
from qgate.report.model import Report
from qgate.report.render.md import render_markdown


def _with_starts(report: Report) -> Report:
    starts = [
        ServerStart(
            side="reference", purpose="life", kind="vllm", ready_s=46.0, startup={"weights_s": 0.35}
        ),
        ServerStart(side="candidate", purpose="life", kind="vllm", ready_s=48.0),
    ]
    timings = {"load": 5.0, "reference_quality": 250.0, "candidate": 300.0}
    return report.model_copy(update={"starts": starts, "stage_timings": timings})


def test_rows_add_up_to_the_stages(report: Report) -> None:
    rows = dict(time_breakdown(_with_starts(report)))
    assert rows["start-up: 2 start(s) (reference 46 s, candidate 48 s)"] == 94.0
    assert rows["total"] == 555.0
    parts = sum(v for k, v in rows.items() if k != "total")
    assert abs(parts - 555.0) < 0.2  # 'other' is the remainder, rounded per row
    suites = [k for k in rows if k.startswith("quality ")]
    assert len(suites) >= 2 and all(rows[k] >= 0 for k in suites)
    if report.perf.runs:
        assert any(k.startswith("perf ") for k in rows)


def test_other_never_goes_negative(report: Report) -> None:
    short = _with_starts(report).model_copy(update={"stage_timings": {"load": 1.0}})
    rows = dict(time_breakdown(short))
    assert rows["other: load, emulation, preflight, warm-ups, report"] == 0.0


def test_a_report_without_starts_or_timings_has_no_rows(report: Report) -> None:
    bare = report.model_copy(update={"starts": [], "stage_timings": {}})
    assert all(not k.startswith(("start-up", "total")) for k, _ in time_breakdown(bare))


def test_the_view_shows_each_start_and_the_breakdown(report: Report) -> None:
    text = render_markdown(_with_starts(report))
    assert "Server start" in text and "Where the time went" in text
    assert "weights_s 0.35" in text


def test_side_by_side_counts_overlapping_stages_once(report: Report) -> None:
    from qgate.core.plan import Plan

    plan = Plan(mode="together", blocks=2, reference_cached=False, preflight={}, lives=[])
    timings = {"load": 2.0, "startup": 58.0, "quality": 318.0, "perf": 262.0, "report": 4.0}
    together = _with_starts(report).model_copy(update={"plan": plan, "stage_timings": timings})
    rows = time_breakdown(together)
    assert rows[0] == ("start-up, both at once (reference 46 s, candidate 48 s)", 58.0)
    assert rows[1][0].startswith("quality, both at once (reference: ") and rows[1][1] == 318.0
    assert rows[2] == ("perf, 2 interleaved block(s) per side", 262.0)
    assert rows[-2:] == [("other: load, report", 6.0), ("total", 644.0)]


def test_side_by_side_perf_rounds_have_their_own_row() -> None:
    from helpers.rounds_synthetic import rounds_report

    from qgate.core.plan import Plan

    plan = Plan(mode="together", blocks=1, rounds=3, reference_cached=False, preflight={}, lives=[])
    timings = {"startup": 50.0, "quality": 300.0, "perf": 100.0, "perf_rounds": 240.0}
    report = rounds_report(rounds=3).model_copy(update={"plan": plan, "stage_timings": timings})
    rows = time_breakdown(report)
    assert ("perf rounds 2-3, both sides in fresh lives", 240.0) in rows
    assert rows[-1] == ("total", 690.0)
    starts = [
        ServerStart(side=side, purpose="life", kind="vllm", ready_s=seconds)
        for side, seconds in [("reference", 40), ("candidate", 41), ("candidate", 30)]
    ]
    rows = time_breakdown(report.model_copy(update={"starts": starts}))
    assert (
        rows[0][0]
        == "start-up, both at once (reference 40 s, candidate 41 s, candidate (round 2) 30 s)"
    )
