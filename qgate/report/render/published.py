"""The report view's section of published figures beside the measured runs."""

from __future__ import annotations

from pydantic import ValidationError

from qgate.perf.published import CAVEAT, compare_published
from qgate.profile.perf import PublishedFigure
from qgate.report.model import Report
from qgate.report.render.parts import Section, Table, fmt

__all__ = ["published_section"]


def published_section(report: Report) -> Section | None:
    """Published figures beside the measured runs, with the caveat (qgate.perf.published)."""
    perf = report.profile.get("perf") or {}
    try:
        figures = [PublishedFigure.model_validate(f) for f in perf.get("published") or []]
    except ValidationError:
        return None
    if not figures:
        return None
    params = {r.scenario: r.params for r in report.perf.runs}
    rows = [
        [
            p.source + (f" ({p.date})" if p.date else " (date not recorded)"),
            p.note or "–",
            p.hardware,
            fmt(p.concurrency),
            p.metric,
            fmt(p.published),
            p.scenario or "no matching run",
            fmt(p.candidate),
            f"x{p.candidate_ratio:.2f}" if p.candidate_ratio is not None else "–",
            fmt(p.reference),
            f"x{p.reference_ratio:.2f}" if p.reference_ratio is not None else "–",
        ]
        for p in compare_published(figures, report.perf.results, params)
    ]
    sec = Section("Published figures (measured against published)")
    sec.lines.append(CAVEAT)
    header = [
        "Source",
        "Note",
        "Hardware",
        "Concurrency",
        "Metric",
        "Published",
        "Run",
        "Candidate",
        "Cand / pub",
        "Reference",
        "Ref / pub",
    ]
    sec.tables.append(Table(header, rows))
    return sec
