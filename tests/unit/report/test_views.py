"""Golden Markdown and JUnit, HTML with every plot, step summary, compare."""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from helpers.report_synthetic import build_report

from qgate.report.render.compare import compare_html, compare_table, headline_ratio
from qgate.report.render.html import render_html
from qgate.report.render.junit import render_junit
from qgate.report.render.md import render_markdown, write_step_summary

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("QGATE_UPDATE_GOLDEN") == "1"


def _golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if UPDATE:
        path.write_text(text)
    assert text == path.read_text(), f"{name} differs; QGATE_UPDATE_GOLDEN=1 rewrites it"


def test_markdown_golden_pass() -> None:
    md = render_markdown(build_report())
    assert md.startswith("# qgate report") and "**Verdict: PASS**" in md
    _golden("pass.md", md)


def test_markdown_golden_fail() -> None:
    report = build_report(cand_wrong=frozenset({1, 2, 4, 5}), perf_status="skipped: gates failed")
    md = render_markdown(report)
    assert md.startswith("# qgate report: smollm2-fp8kv-test\n\n**Verdict: FAIL**")
    assert "FAILED math.short.max_drop" in md
    _golden("fail.md", md)


def test_junit_golden_and_structure() -> None:
    report = build_report(cand_wrong=frozenset({1, 2, 4, 5}), perf_status="skipped: gates failed")
    xml = render_junit(report)
    _golden("fail.junit.xml", xml)
    root = ET.fromstring(xml)
    cases = root.findall("./testsuite/testcase")
    failed = [c for c in cases if c.find("failure") is not None]
    assert [c.get("name") for c in failed] == ["math.short.max_drop"]
    assert failed[0].get("classname") == "math.short"
    assert failed[0].find("failure").get("message", "").startswith("accuracy drop 0.375")  # type: ignore[union-attr]
    assert root.find("./testsuite/testcase[@name='perf']/skipped") is not None
    _golden("pass.junit.xml", render_junit(build_report()))


def test_html_has_every_plot_and_escapes() -> None:
    report = build_report()
    report.profile["description"] = "x"
    report.target_mismatches = ["<script>alert(1)</script>"]
    html = render_html(report)
    # accuracy, KLD histogram, where the damage sits, TTFT CDF, ITL CDF (one scenario),
    # throughput/latency
    assert html.count("<img ") == 6
    assert html.count("data:image/png;base64,") == 6
    assert "<script>" not in html and "&lt;script&gt;" in html
    skipped = build_report(perf_status="skipped: --skip-perf")
    assert render_html(skipped).count("<img ") == 3


def test_step_summary_appends(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "summary.md"
    target.write_text("before\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(target))
    assert write_step_summary("# hi") == target
    assert target.read_text() == "before\n# hi\n"
    monkeypatch.delenv("GITHUB_STEP_SUMMARY")
    assert write_step_summary("# hi") is None


def test_compare_table_and_html() -> None:
    a = build_report()
    b = build_report(cand_wrong=frozenset({1, 2, 4, 5}), perf_status="skipped: gates failed")
    table = compare_table([("a", a), ("b", b)])
    assert table.header[3] == "Δacc math.short"
    assert table.rows[0][2] == "PASS" and table.rows[1][2] == "FAIL"
    assert table.rows[1][3] == "-0.375"
    assert headline_ratio(a) == pytest.approx(30 / 24)
    assert headline_ratio(b) is None
    assert compare_html([("a", a), ("b", b)]).count("<img ") == 1


def test_html_and_markdown_with_the_team_functions() -> None:
    from qgate.report.verify.single import default_recompute

    report = build_report(items=10, requests=4, fns=default_recompute())
    html = render_html(report)
    assert html.count("<img ") == 6
    md = render_markdown(report)
    assert "| output_throughput | tok/s |" in md


def test_accuracy_plot_at_zero_and_full_accuracy() -> None:
    # Wilson bounds at p=0 and p=1 differ from p by float noise; the plot must not choke on it.
    from qgate.report.render.plots import accuracy_plot

    report = build_report()
    for run in report.quality.runs:  # 0/3 and 0/7 are such cases
        n, correct = (3, False) if run.role == "reference" else (7, False)
        run.items = [i.model_copy(update={"correct": correct}) for i in run.items[:n]]
        assert len(run.items) == n
    png = accuracy_plot(report)
    assert png is not None and png.startswith(b"\x89PNG")


def test_html_puts_the_verdict_and_gate_table_before_the_first_plot() -> None:
    report = build_report()
    page = render_html(report)
    verdict = page.index('class="PASS"')
    gates = page.index("<h2>Gates</h2>")
    table = page.index("<table>", gates)
    first_plot = page.index("<img ")
    assert verdict < gates < table < first_plot < page.index("<h2>Environment</h2>")
    accuracy, perf = page.index("<h2>Accuracy and flips</h2>"), page.index("<h2>Performance</h2>")
    assert table < accuracy < perf < first_plot


def test_underpowered_gates_get_a_banner_in_every_view() -> None:
    report = build_report()
    gate = report.quality.verdicts[0]
    report.quality.verdicts[0] = gate.model_copy(update={"underpowered": True, "passed": True})
    md = render_markdown(report)
    banner = "UNDERPOWERED: 1 passing gate(s) cannot detect the drop they forbid with this sample"
    assert f"{banner}: {gate.gate}" in md
    page = render_html(report)
    banner = page.index('<p class="warning">UNDERPOWERED')
    assert banner < page.index("<h2>Gates</h2>")


def test_lost_and_gained_items_are_shown_side_by_side_bounded() -> None:
    report = build_report(items=20, cand_wrong=frozenset(range(4, 16)))
    md = render_markdown(report)
    assert "Changed answers (answer · output)" in md
    rows = [ln for ln in md.splitlines() if ln.startswith("| math.short | ") and " lost |" in ln]
    assert 1 <= len(rows) <= 6  # a few per suite, the rest named as "more in the records"
    assert "more in the records" in md
    assert "Delta (candidate − reference)" in md and "reference minus candidate" in md
    assert "Changed answers" in render_html(report)


def test_a_preview_says_dummy_weights_and_speed_only_even_when_it_fails() -> None:
    report = build_report(perf_status="ran")
    assert "dummy" not in render_markdown(report)
    report.profile["engine"] = {
        **report.profile.get("engine", {}),
        "args": {"load_format": "dummy"},
    }
    report.verdict = "FAIL"  # a missed perf gate
    md = render_markdown(report)
    assert "PREVIEW: dummy (random) weights, speed only" in md
    assert '<p class="warning">PREVIEW: dummy' in render_html(report)
