"""Where the damage sits: divergence per part of the continuation, accuracy per prompt length,
and the worst part named beside a failed gate's stored reason in every view."""

from __future__ import annotations

import hashlib
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from helpers.report_synthetic import build_report, divergence_sequence

from qgate.core.verdict import Verdict
from qgate.quality.records import DivergenceRun, DivergenceSequence, ItemRecord, SuiteRun
from qgate.report.localise import (
    bucket_bounds,
    length_groups,
    position_buckets,
    worst_note,
    worst_notes,
)
from qgate.report.model import Report
from qgate.report.render.html import render_html
from qgate.report.render.junit import render_junit
from qgate.report.render.localise_plot import localise_plot
from qgate.report.render.md import render_markdown
from qgate.report.render.plots import all_plots

LATE = 1.0  # KL of the last quarter of every sequence; the rest is 0.01


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _sequence(j: int, kld: list[float], agree: list[bool] | None = None) -> DivergenceSequence:
    return DivergenceSequence(
        id=f"s{j}",
        prompt_sha256=_sha(f"p{j}"),
        token_ids=list(range(len(kld))),
        kld=kld,
        top1_agree=agree if agree is not None else [True] * len(kld),
        delta_p=[0.0] * len(kld),
    )


def late_divergence(sequences: int = 3, tokens: int = 32) -> DivergenceRun:
    """KL 0.01 everywhere but the last quarter (LATE + a little per sequence); top-1 agreement
    lost at positions 28-31 of every sequence."""
    seqs = []
    for j in range(sequences):
        kld = [0.01] * 24 + [LATE + 0.1 * j] * 8
        agree = [True] * 28 + [False] * 4
        seqs.append(_sequence(j, kld, agree))
    return DivergenceRun(data_sha256=_sha("corpus"), top_k=20, tokens=tokens, sequences=seqs)


def _item(item_id: str, correct: bool) -> ItemRecord:
    return ItemRecord(
        id=item_id,
        prompt_sha256=_sha(item_id),
        output="x",
        answer="x",
        expected="x" if correct else "y",
        correct=correct,
    )


def _run(suite: str, role: str, items: list[ItemRecord]) -> SuiteRun:
    return SuiteRun(suite=suite, role=role, data_sha256=_sha(suite), items=items)  # type: ignore[arg-type]


def recall_runs(length: int = 1024) -> list[SuiteRun]:
    """Four haystacks at depths 10, 50, 90%: the candidate loses 3 of the 4 at 90% only."""
    depths = [(0, 10), (1, 50), (2, 90)]
    ids = [f"recall.{length}.h{h}.d{d}-{pct:02d}" for h in range(4) for d, pct in depths]
    ref = [_item(i, True) for i in ids]
    cand = [_item(i, not (i.endswith("d2-90") and ".h3." not in i)) for i in reversed(ids)]
    suite = f"recall.{length}"
    return [_run(suite, "reference", ref), _run(suite, "candidate", cand)]


def math_runs() -> list[SuiteRun]:
    """math.short: nothing lost; math.long: 2 of 4 lost; an lm_eval suite with no length axis."""
    out = []
    for suite, lost in (("math.short", set()), ("math.long", {1, 2}), ("lm_eval.gsm8k", {0})):
        ids = [f"m{i}" for i in range(4)]
        out.append(_run(suite, "reference", [_item(i, True) for i in ids]))
        out.append(_run(suite, "candidate", [_item(f"m{i}", i not in lost) for i in range(4)]))
    return out


def _verdict(gate: str, suite: str, passed: bool, reason: str, **kw: object) -> Verdict:
    return Verdict(
        gate=gate, suite=suite, observed=1.0, limit=0.5, passed=passed, reason=reason, **kw
    )  # type: ignore[arg-type]


def report_with(
    runs: list[SuiteRun], divergence: DivergenceRun | None, verdicts: list[Verdict]
) -> Report:
    report = build_report(perf_status="skipped: gates failed")
    report.quality.runs = runs
    report.quality.divergence = divergence
    report.quality.verdicts = verdicts
    report.verdict = "FAIL" if any(not v.passed for v in verdicts) else "PASS"
    return report


def test_the_continuation_is_cut_into_four_equal_parts() -> None:
    assert bucket_bounds(32) == [(0, 7), (8, 15), (16, 23), (24, 31)]
    assert bucket_bounds(10) == [(0, 1), (2, 4), (5, 6), (7, 9)]
    assert bucket_bounds(2) == [(0, 0), (1, 1)]  # fewer positions than parts: no empty part


def test_kl_rising_only_late_shows_in_the_last_bucket_alone() -> None:
    div = late_divergence()
    buckets = position_buckets(div)
    assert [(b.lo, b.hi, b.n) for b in buckets] == [
        (0, 7, 24),
        (8, 15, 24),
        (16, 23, 24),
        (24, 31, 24),
    ]
    assert [b.mean_kld for b in buckets[:3]] == pytest.approx([0.01] * 3)
    late = [LATE + 0.1 * j for j in range(3) for _ in range(8)]
    assert buckets[3].mean_kld == pytest.approx(np.mean(late))
    assert buckets[3].p99_kld == pytest.approx(np.percentile(late, 99, method="linear"))
    assert buckets[3].max_kld == pytest.approx(LATE + 0.2)
    assert [b.top1_agreement for b in buckets] == [1.0, 1.0, 1.0, 0.5]
    assert buckets[3].label == "positions 24-31"


def test_a_sequence_that_ended_early_counts_only_where_it_has_positions() -> None:
    div = late_divergence()
    div.sequences.append(_sequence(9, [0.5] * 10))
    buckets = position_buckets(div)
    assert [b.n for b in buckets] == [32, 26, 24, 24]
    assert buckets[1].mean_kld == pytest.approx((0.01 * 24 + 0.5 * 2) / 26)
    assert position_buckets(None) == []
    assert position_buckets(late_divergence(sequences=0)) == []


def test_recall_losses_only_at_depth_90_show_there_and_items_pair_by_id() -> None:
    groups = length_groups(report_with(math_runs() + recall_runs(), None, []))
    rows = [(g.label, g.n, g.reference, g.candidate, g.lost, g.gained) for g in groups]
    assert rows == [
        ("math.short", 4, 1.0, 1.0, 0, 0),
        ("math.long", 4, 1.0, 0.5, 2, 0),
        ("recall.1024", 12, 1.0, 0.75, 3, 0),
        ("recall.1024 depth 10%", 4, 1.0, 1.0, 0, 0),
        ("recall.1024 depth 50%", 4, 1.0, 1.0, 0, 0),
        ("recall.1024 depth 90%", 4, 1.0, 0.25, 3, 0),
    ]  # lm_eval.gsm8k has no prompt-length axis


def test_an_item_the_candidate_lacks_is_left_out_of_the_pairs() -> None:
    ref, cand = recall_runs()
    cand.items = [i for i in cand.items if i.id != "recall.1024.h0.d2-90"]
    depth90 = length_groups(report_with([ref, cand], None, []))[-1]
    assert (depth90.n, depth90.lost) == (3, 2)


def test_a_failed_kl_gate_names_the_last_bucket_and_how_much_worse_it_is() -> None:
    failed = _verdict("divergence.max_mean_kld", "divergence", False, "divergence: mean KL high")
    report = report_with([], late_divergence(), [failed])
    mean_late = LATE + 0.1
    assert worst_note(report, failed) == (
        f"worst: positions 24-31, mean KL {mean_late:.3g} ({mean_late / 0.01:.0f}x the first "
        "bucket)"
    )
    p99 = failed.model_copy(update={"gate": "divergence.max_p99_kld"})
    assert (worst_note(report, p99) or "").startswith("worst: positions 24-31, p99 KL 1.2 (")


def test_a_failed_top1_gate_names_the_bucket_with_the_lowest_agreement() -> None:
    failed = _verdict("divergence.min_top1_agreement", "divergence", False, "top-1 low")
    report = report_with([], late_divergence(), [failed])
    assert worst_note(report, failed) == (
        "worst: positions 24-31, top-1 agreement 50.0% (first bucket 100.0%)"
    )


def test_a_failed_reverse_kl_gate_reads_the_reverse_direction() -> None:
    # the synthetic sequences differ most at position 2, where their top-1 token differs
    div = DivergenceRun(
        data_sha256=_sha("c"),
        top_k=20,
        tokens=4,
        sequences=[divergence_sequence(j) for j in range(2)],
    )
    failed = _verdict("divergence.max_mean_reverse_kld", "divergence", False, "reverse high")
    note = worst_note(report_with([], div, [failed]), failed)
    assert note is not None and note.startswith("worst: position 2, mean KL(cand||ref) ")


def test_when_the_first_bucket_is_worst_the_note_says_so() -> None:
    div = late_divergence()
    for s in div.sequences:
        s.kld.reverse()
    failed = _verdict("divergence.max_mean_kld", "divergence", False, "high")
    note = worst_note(report_with([], div, [failed]), failed)
    assert note == "worst: positions 0-7, mean KL 1.1 (the first bucket; the last 0.01)"


def test_a_failed_recall_gate_names_the_depth_with_most_lost_items() -> None:
    failed = _verdict("recall.1024.max_drop", "recall.1024", False, "recall.1024: drop 25 pts")
    report = report_with(recall_runs(), None, [failed])
    assert worst_note(report, failed) == (
        "worst: depth 90%, 3 of 4 lost (candidate 25.0%, reference 100.0%)"
    )


def test_passed_unsettled_math_and_recordless_gates_get_no_note() -> None:
    report = report_with(math_runs() + recall_runs(), late_divergence(), [])
    passed = _verdict("divergence.max_mean_kld", "divergence", True, "fine")
    unsettled = _verdict("recall.1024.max_drop", "recall.1024", False, "open", settled=False)
    math = _verdict("math.long.max_drop", "math.long", False, "math.long: drop 50 pts")
    no_records = passed.model_copy(update={"observed": None, "passed": False})
    for v in (passed, unsettled, math, no_records):
        assert worst_note(report, v) is None, v.gate
    report.quality.verdicts = [passed, math]
    assert worst_notes(report) == {}


def failing_report() -> Report:
    verdicts = [
        _verdict("recall.1024.max_drop", "recall.1024", False, "recall.1024: drop 25 pts"),
        _verdict("divergence.max_mean_kld", "divergence", False, "divergence: mean KL 0.26"),
    ]
    return report_with(math_runs() + recall_runs(), late_divergence(), verdicts)


def test_every_view_puts_the_worst_part_beside_the_stored_reason_which_is_unchanged() -> None:
    report = failing_report()
    md = render_markdown(report)
    kl_note = " — worst: positions 24-31, mean KL 1.1 (110x the first bucket)"
    depth_note = " — worst: depth 90%, 3 of 4 lost (candidate 25.0%, reference 100.0%)"
    assert f"FAILED divergence.max_mean_kld: divergence: mean KL 0.26{kl_note}" in md
    assert f"| FAIL | divergence: mean KL 0.26{kl_note} |" in md
    assert f"| FAIL | recall.1024: drop 25 pts{depth_note} |" in md
    assert "divergence: mean KL 0.26" + kl_note in render_html(report)
    root = ET.fromstring(render_junit(report))
    failure = root.find("./testsuite/testcase[@name='divergence.max_mean_kld']/failure")
    assert failure is not None and failure.get("message") == "divergence: mean KL 0.26"
    assert (failure.text or "").endswith(kl_note)
    assert [v.reason for v in report.quality.verdicts] == [
        "recall.1024: drop 25 pts",
        "divergence: mean KL 0.26",
    ]


def test_the_section_shows_both_tables_right_after_divergence() -> None:
    md = render_markdown(failing_report())
    titles = [ln for ln in md.splitlines() if ln.startswith("## ")]
    at = titles.index("## Where the damage sits")
    assert titles[at - 1].startswith("## Logit divergence") and titles[at + 1] == "## Performance"
    assert "| 24-31 | 24 | 1.1 | 1.2 | 1.2 | 0.5 | 110 |" in md
    assert "| recall.1024 depth 90% | 4 | 1 | 0.25 | -0.75 | 3 | 0 |" in md
    assert "| math.long | 4 | 1 | 0.5 | -0.5 | 2 | 0 |" in md
    page = render_html(failing_report())
    assert page.index("<h2>Where the damage sits</h2>") < page.index("<h2>Performance</h2>")


def test_without_divergence_the_section_follows_accuracy_and_without_either_it_is_absent() -> None:
    md = render_markdown(report_with(recall_runs(), None, []))
    titles = [ln for ln in md.splitlines() if ln.startswith("## ")]
    assert titles[titles.index("## Accuracy and flips") + 1] == "## Where the damage sits"
    assert "Divergence by position" not in md
    empty = render_markdown(report_with([], None, []))
    assert "Where the damage sits" not in empty


def test_the_plot_draws_whichever_of_positions_and_depths_ran() -> None:
    for runs, div in (
        ([], late_divergence()),
        (recall_runs(), None),
        (recall_runs(), late_divergence()),
    ):
        png = localise_plot(report_with(runs, div, []))
        assert png is not None and png.startswith(b"\x89PNG")
    assert localise_plot(report_with(math_runs(), None, [])) is None  # no recall, no divergence
    captions = [c for c, _ in all_plots(report_with(recall_runs(), None, []))]
    assert "Where the damage sits" in captions


def test_each_candidate_of_a_multi_report_has_its_own_section_and_plot() -> None:
    from helpers.multi_synthetic import build_multi

    from qgate.report.render.multi import render_multi_html, render_multi_md

    report = build_multi()
    assert render_multi_md(report).count("\n### Where the damage sits\n") == 2
    assert render_multi_html(report).count("<figcaption>Where the damage sits</figcaption>") == 2


def ladder_runs() -> list[SuiteRun]:
    """math.short over ladder levels 3 and 8: the candidate loses 3 of 4 at level 8 only."""
    ids = [f"L{lv}-{k:04d}" for k in range(1, 5) for lv in (3, 8)]
    ref = [_item(i, True) for i in ids]
    cand = [_item(i, not (i.startswith("L8") and i != "L8-0004")) for i in ids]
    return [_run("math.short", "reference", ref), _run("math.short", "candidate", cand)]


def test_accuracy_by_difficulty_shows_a_drop_at_the_hard_end_on_both_sides() -> None:
    from qgate.report.localise import level_groups

    report = report_with(ladder_runs(), None, [])
    rows = [
        (g.label, g.n, g.reference, g.candidate, g.lost, g.gained) for g in level_groups(report)
    ]
    assert rows == [
        ("math.short level 3", 4, 1.0, 1.0, 0, 0),
        ("math.short level 8", 4, 1.0, 0.25, 3, 0),
    ]
    failed = _verdict("math.short.max_drop", "math.short", False, "math.short: drop too large")
    assert worst_note(report_with(ladder_runs(), None, [failed]), failed) == (
        "worst: level 8, 3 of 4 lost, 0 gained (candidate 25.0%, reference 100.0%)"
    )
    md = render_markdown(report_with(ladder_runs(), None, [failed]))
    assert "Accuracy by difficulty" in md and "| math.short level 8 | 4 |" in md


def test_the_core_set_is_split_by_tier_easiest_first_and_one_level_gives_no_rows() -> None:
    from qgate.report.localise import level_groups

    ids = ["word-0001", "arith-0001", "x1-multi-0002", "arith-0002"]
    runs = [
        _run("math.long", "reference", [_item(i, True) for i in ids]),
        _run("math.long", "candidate", [_item(i, i != "word-0001") for i in ids]),
    ]
    rows = [(g.label, g.n, g.lost) for g in level_groups(report_with(runs, None, []))]
    assert rows == [
        ("math.long tier arith", 2, 0),
        ("math.long tier multi", 1, 0),
        ("math.long tier word", 1, 1),
    ]
    assert level_groups(report_with(math_runs(), None, [])) == []  # ids of no difficulty


def test_a_reference_at_ceiling_is_warned_next_to_the_power_in_the_report() -> None:
    from qgate.report.localise import boundary_lines

    ids = [f"arith-{k:04d}" for k in range(100)]
    runs = [
        _run("math.short", "reference", [_item(i, i != "arith-0000") for i in ids]),
        _run("math.short", "candidate", [_item(i, True) for i in ids]),
    ]
    gate = _verdict(
        "math.short.max_drop", "math.short", True, "drop ok", power=0.3, min_detectable_drop=0.071
    )
    report = report_with(runs, None, [gate])
    (line,) = boundary_lines(report)
    assert line.startswith("the reference answers 99% of math.short: a drop below 7.1 points")
    md = render_markdown(report)
    assert "CEILING/FLOOR: the reference answers 99% of math.short" in md
    assert "Power: the reference answers 99%" in md
    middling = [_item(i, k % 2 == 0) for k, i in enumerate(ids)]
    assert (
        boundary_lines(
            report_with([runs[1], _run("math.short", "reference", middling)], None, [gate])
        )
        == []
    )


def test_recall_is_split_by_similar_distractor_codes() -> None:
    from qgate.report.localise import level_groups

    ids = [f"recall.1024{s}.h0.d{d}-{p}" for s in ("", ".s8") for d, p in ((0, 10), (1, 90))]
    runs = [
        _run("recall.1024", "reference", [_item(i, True) for i in ids]),
        _run("recall.1024", "candidate", [_item(i, ".s8." not in i) for i in ids]),
    ]
    rows = [(g.label, g.n, g.lost) for g in level_groups(report_with(runs, None, []))]
    assert rows == [("recall.1024 0 similar codes", 2, 0), ("recall.1024 8 similar codes", 2, 2)]
    depths = [g.label for g in length_groups(report_with(runs, None, []))]
    assert depths == ["recall.1024", "recall.1024 depth 10%", "recall.1024 depth 90%"]


def test_the_view_states_what_calibration_decided() -> None:
    from qgate.profile import Calibration
    from qgate.quality import calibrate as cal

    items = [
        cal.CalibrationItem(id=f"L{lv}-{k:04d}", reference=k <= acc, candidate=k <= acc)
        for lv, acc in ((3, 10), (8, 5), (9, 0))
        for k in range(1, 11)
    ]
    data = cal.CalibrationFile(
        calibration_version=cal.CALIBRATION_VERSION,
        source="prior.jsonl",
        suite="m",
        model="smollm2",
        model_sha256="a" * 64,
        engine="vllm",
        engine_version="0.32.0",
        items=items,
    )
    report = report_with(ladder_runs(), None, [])
    setting = Calibration(records="x.json", band=[0.2, 0.85])  # type: ignore[arg-type]
    report.quality.calibration = cal.calibrate(data, "0" * 64, setting, [3, 8, 9])
    md = render_markdown(report)
    assert "Calibration: math drew from ladder levels [8], where the reference's accuracy" in md
    assert "L3 reference 100% of 10: ceiling" in md and "L9 reference 0% of 10: floor" in md
