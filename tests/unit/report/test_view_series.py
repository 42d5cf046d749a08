"""The time series in the Markdown and HTML views: only for scenarios that have one."""

from __future__ import annotations

from helpers.report_synthetic import build_report
from helpers.series_synthetic import series_report

from qgate.report.render.html import render_html
from qgate.report.render.md import render_markdown
from qgate.report.render.series import MAX_ROWS, bucket_label


def test_markdown_has_a_row_per_bucket_and_says_where_the_series_is() -> None:
    report = series_report()
    md = render_markdown(report)
    assert "## Time series" in md
    assert "perf.results[0].reference.time_series, perf.results[0].candidate.time_series" in md
    assert "| From | Ref out tok/s | Cand out tok/s | Ref req | Cand req |" in md
    cand = report.perf.results[0].candidate
    assert cand is not None
    buckets = cand["time_series"]["buckets"]
    section = md.split("## Time series", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| 0")]
    assert len(rows) == len(buckets) >= 3
    assert rows[0].startswith("| 0 s | ") and rows[1].startswith("| 0.05 s | ")
    assert rows[-1].startswith(f"| {buckets[-1]['start_s']:g} s (partial) | ")


def test_no_series_no_section_and_no_plot() -> None:
    report = build_report()
    assert "Time series" not in render_markdown(report)
    assert "Time series" not in render_html(report)


def test_html_draws_the_series_of_both_sides() -> None:
    html = render_html(series_report())
    # accuracy, KLD, where the damage sits, TTFT CDF, ITL CDF, time series, throughput/latency
    assert html.count("<img ") == 7
    assert "<figcaption>Time series: short</figcaption>" in html
    assert "<h2>Time series</h2>" in html


def test_minute_buckets_are_labelled_in_minutes_and_a_short_one_says_so() -> None:
    assert bucket_label(120.0, 60.0) == "2 min"
    assert bucket_label(3600.0, 60.0, partial=True) == "60 min (partial)"
    assert bucket_label(0.5, 0.5) == "0.5 s"


def test_a_long_series_is_cut_with_a_note() -> None:
    report = series_report(bucket_s=0.001, requests=6)
    cand = report.perf.results[0].candidate
    assert cand is not None and len(cand["time_series"]["buckets"]) > MAX_ROWS
    md = render_markdown(report)
    assert f"the first {MAX_ROWS} buckets shown" in md
    section = md.split("## Time series", 1)[1].split("\n## ", 1)[0]
    assert sum(1 for line in section.splitlines() if line.endswith("|")) == MAX_ROWS + 2
