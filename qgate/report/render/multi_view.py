"""What a person reads in a multi report: the side-by-side table first, then each candidate.

Display only (verify never reads it); every figure comes from the stored
table, which verify has re-derived from the candidates' reports.
"""

from __future__ import annotations

from qgate.report.multi_model import CandidateRow, MultiReport, RatioCell
from qgate.report.multi_table import TABLE_METRICS
from qgate.report.render.parts import Section, Table, fmt, origin_lines
from qgate.report.render.view import sections

__all__ = ["candidate_table", "headline_section", "multi_sections", "ratio_text"]

RATIO_HEADERS = {
    "output_throughput": "Out tok/s ratio [95% CI]",
    "request_output_tok_s.p50": "Req out tok/s ratio",
    "request_decode_tok_s.p50": "Decode tok/s ratio",
    "ttft_ms.p90": "TTFT p90 ratio",
}


def ratio_text(cell: RatioCell | None) -> str:
    """`1.23 [1.10, 1.31]`, or the ratio alone when it has no interval."""
    if cell is None or cell.ratio is None:
        return "–"
    if cell.ci_low is None or cell.ci_high is None:
        return fmt(cell.ratio, 3)
    return f"{fmt(cell.ratio, 3)} [{fmt(cell.ci_low, 3)}, {fmt(cell.ci_high, 3)}]"


def _suites(rows: list[CandidateRow]) -> list[str]:
    return list(dict.fromkeys(s for r in rows for s in r.accuracy_deltas))


def candidate_table(report: MultiReport) -> list[Table]:
    """Per candidate: verdict, accuracy deltas, flips, divergence, speed ratios of each scenario."""
    rows = report.table
    suites = _suites(rows)
    scenarios = list(dict.fromkeys(s.scenario for r in rows for s in r.speed))
    first = scenarios[0] if scenarios else None
    header = [
        "Candidate",
        "Required",
        "Verdict",
        *[f"Δacc {s}" for s in suites],
        "Lost / gained",
        "Mean KL",
        "Top-1",
        *[RATIO_HEADERS[m] for m in TABLE_METRICS],
        "Prefix-cache hit",
    ]
    body = []
    for r in rows:
        speed = next((s for s in r.speed if s.scenario == first), None)
        body.append(
            [
                r.candidate,
                "yes" if r.required else "no",
                r.verdict,
                *[fmt(r.accuracy_deltas.get(s), 3) for s in suites],
                f"{r.lost} / {r.gained}" if r.verdict != "ERROR" else "–",
                fmt(r.mean_kld, 3),
                fmt(r.top1_agreement, 3),
                *[ratio_text(speed.ratios.get(m) if speed else None) for m in TABLE_METRICS],
                fmt(speed.prefix_cache_hit_rate, 3) if speed else "–",
            ]
        )
    caption = f"Speed: candidate / reference, scenario {first}" if first else ""
    out = [Table(header, body, caption=caption)]
    if len(scenarios) > 1:
        more = [
            [
                r.candidate,
                s.scenario,
                *[ratio_text(s.ratios.get(m)) for m in TABLE_METRICS],
                fmt(s.prefix_cache_hit_rate, 3),
            ]
            for r in rows
            for s in r.speed
        ]
        head = ["Candidate", "Scenario", *[RATIO_HEADERS[m] for m in TABLE_METRICS], "Prefix hit"]
        out.append(Table(head, more, caption="Speed ratios per scenario"))
    return out


def headline_section(report: MultiReport) -> Section:
    name = str(report.profile.get("name", "?"))
    sec = Section(f"qgate report: {name} ({len(report.candidates)} candidates)")
    sec.lines.append(f"**Verdict: {report.verdict}**")
    required = [c for c in report.candidates if c.required]
    sec.lines.append(
        f"{len(required)} required and {len(report.candidates) - len(required)} optional "
        "candidates against one reference; the verdict is decided by the required ones."
    )
    for failure in report.optional_failures:
        sec.lines.append(f"Optional candidate did not pass (does not fail the run): {failure}")
    for entry in report.candidates:
        if entry.error is not None:
            sec.lines.append(f"ERROR candidate {entry.name}: {entry.error}")
    sec.lines += origin_lines(report)
    return sec


def multi_sections(report: MultiReport) -> list[tuple[int, Section]]:
    """(heading level, section): headline, the table, then each candidate's own sections."""
    table = Section("Candidates side by side")
    table.tables = candidate_table(report)
    if report.stage_timings:
        timing = [[k, fmt(v)] for k, v in report.stage_timings.items()]
        table.tables.append(Table(["Stage", "Seconds"], timing, caption="Stage timings"))
    out: list[tuple[int, Section]] = [(1, headline_section(report)), (2, table)]
    machine: list[Table] = []
    for entry in report.candidates:
        kind = "required" if entry.required else "optional"
        title = f"Candidate {entry.name} ({kind})"
        if entry.report is None:
            out.append((2, Section(title, lines=[f"ERROR: {entry.error}"])))
            continue
        own = sections(entry.report)
        for sec in own:  # the machine is the same for every candidate: shown once, at the end
            machine += [t for t in sec.tables if t.header[:1] == ["Fingerprint"]]
            sec.tables = [t for t in sec.tables if t.header[:1] != ["Fingerprint"]]
        head = own[0]
        head.title = title + (f": {entry.description}" if entry.description else "")
        out.append((2, head))
        out += [(3, s) for s in own[1:]]
    if machine:
        out.append((2, Section("Machine", tables=machine[:1])))
    return out
