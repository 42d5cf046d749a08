"""The report view's time-series section: a row per bucket for scenarios that have a series.

Only runs that asked for a series (duration-bound scenarios, or `series_bucket_s`)
have one (qgate/perf/series.py); other scenarios get nothing here.
"""

from __future__ import annotations

from typing import Any

from qgate.gates.judgement import ScenarioResult
from qgate.report.model import Report
from qgate.report.render.parts import Section, Table, fmt

__all__ = ["MAX_ROWS", "bucket_label", "series_of", "series_section"]

# An hour in minutes with its tail, and then some; longer series stay in the JSON.
MAX_ROWS = 120
ROLES = ("reference", "candidate")


def series_of(result: ScenarioResult, role: str) -> dict[str, Any] | None:
    """The stored time series of one side of a scenario, if it has one."""
    summary = getattr(result, role)
    series = summary.get("time_series") if isinstance(summary, dict) else None
    return series if isinstance(series, dict) and series.get("buckets") else None


def bucket_label(start_s: float, width: float, partial: bool = False) -> str:
    """A bucket's start, in minutes when the width is whole minutes; a short one says so."""
    label = f"{start_s / 60:g} min" if width % 60 == 0 else f"{start_s:g} s"
    return label + " (partial)" if partial else label


def _ttft(bucket: dict[str, Any] | None) -> str:
    if bucket is None or bucket.get("ttft_p50_ms") is None:
        return "–"
    return f"{fmt(bucket['ttft_p50_ms'])} / {fmt(bucket.get('ttft_p90_ms'))}"


def _table(result: ScenarioResult) -> Table:
    sides = {role: series_of(result, role) for role in ROLES}
    width = next(float(s["bucket_s"]) for s in sides.values() if s)
    buckets = {role: (s or {}).get("buckets", []) for role, s in sides.items()}
    n = max(len(b) for b in buckets.values())
    rows = []
    for k in range(min(n, MAX_ROWS)):
        at = {role: b[k] if k < len(b) else None for role, b in buckets.items()}
        present = [b for b in at.values() if b is not None]
        partial = any(float(b.get("seconds", width)) < width for b in present)
        rows.append(
            [bucket_label(float(present[0].get("start_s", 0.0)), width, partial)]
            + [fmt((at[r] or {}).get("output_throughput")) for r in ROLES]
            + [fmt((at[r] or {}).get("completed")) for r in ROLES]
            + [_ttft(at[r]) for r in ROLES]
        )
    header = [
        "From",
        "Ref out tok/s",
        "Cand out tok/s",
        "Ref req",
        "Cand req",
        "Ref TTFT p50 / p90 ms",
        "Cand TTFT p50 / p90 ms",
    ]
    return Table(header, rows, caption=f"Scenario {result.scenario}, {width:g} s buckets")


def series_section(report: Report) -> Section | None:
    """A table per scenario with a series, and where its full series is in the report."""
    results = [
        (i, r) for i, r in enumerate(report.perf.results) if any(series_of(r, x) for x in ROLES)
    ]
    if not results:
        return None
    sec = Section("Time series")
    sec.lines.append(
        "Per bucket: output tok/s (tokens counted where they arrived), requests completed in "
        "the bucket and their TTFT p50 / p90. Each side's last bucket ends at its last "
        "completion (partial), and its tok/s divides by the part it covers."
    )
    for i, result in results:
        table = _table(result)
        sides = [role for role in ROLES if series_of(result, role)]
        where = ", ".join(f"perf.results[{i}].{role}.time_series" for role in sides)
        more = len(table.rows) == MAX_ROWS and any(
            len((series_of(result, r) or {})["buckets"]) > MAX_ROWS for r in sides
        )
        shown = f"the first {MAX_ROWS} buckets shown; " if more else ""
        sec.lines.append(f"{result.scenario}: {shown}the full series is {where} in the report.")
        sec.tables.append(table)
    return sec
