"""Perf rounds in the views: the speed design named, each ratio row's across-round interval
and round ratios in Markdown and HTML, and the run's headline with the round ratios."""

from __future__ import annotations

from helpers.report_synthetic import build_report
from helpers.rounds_synthetic import rounds_report

from qgate.report.render.html import render_html
from qgate.report.render.md import render_markdown
from qgate.report.render.parts import fmt
from qgate.report.verify.single import default_recompute
from qgate.run.report import headline


def _itl(report) -> dict:  # type: ignore[no-untyped-def,type-arg]
    return next(c for c in report.perf.results[0].comparisons if c["metric"] == "itl_ms.p50")


def test_markdown_names_the_rounds_and_shows_each_rows_round_figures() -> None:
    report = rounds_report(rounds=3)
    md = render_markdown(report)
    assert "Speed design: rounds: 3 fresh lives per side, ABBA (in sequence" in md
    assert "| Across rounds (95%) | Round ratios |" in md
    itl = _itl(report)
    row = next(line for line in md.splitlines() if line.startswith("| itl_ms.p50 |"))
    lo, hi = itl["round_ci_low"], itl["round_ci_high"]
    assert f"[{fmt(lo)}, {fmt(hi)}]" in row
    assert ", ".join(fmt(r) for r in itl["round_ratios"]) in row
    html = render_html(report)
    assert "Across rounds (95%)" in html and f"[{fmt(lo)}, {fmt(hi)}]" in html


def test_one_round_names_its_design_and_adds_no_columns() -> None:
    md = render_markdown(build_report(requests=4, fns=default_recompute()))
    assert "Speed design: one life per side (in sequence, 1 block(s) per life)" in md
    assert "Across rounds" not in md


def test_the_headline_gives_each_rounds_ratio() -> None:
    report = rounds_report(rounds=2)
    lines = headline(report)
    assert len(lines) == 1 and "(rounds x" in lines[0]
    single = headline(build_report(requests=4, fns=default_recompute()))
    assert "rounds" not in single[0]
