"""The report's noise-floor section: the reference against itself, and what that set."""

from __future__ import annotations

from qgate.quality.noise_floor import INSIDE, floor_summary
from qgate.report.model import Report
from qgate.report.render.parts import Section, Table

__all__ = ["floor_line", "floor_section"]

DERIVED = "limit from the noise floor"


def _set_by_floor(report: Report) -> tuple[list[str], list[str]]:
    """(gates whose limit the floor derived, gates whose limit sits inside it)."""
    derived = [f"{v.gate} {v.limit:g}" for v in report.all_verdicts() if DERIVED in v.reason]
    inside = [v.gate for v in report.all_verdicts() if INSIDE in v.reason]
    return derived, inside


def floor_line(report: Report) -> str | None:
    """One console line: the floor, the limits it set and those inside it (None: no floor)."""
    floor = floor_summary(report.quality.noise_floor, report.quality.runs)
    if floor is None:
        return None
    derived, inside = _set_by_floor(report)
    line = floor.text()
    if derived:
        line += f"; set max_flips: {', '.join(derived)}"
    if inside:
        line += f"; {INSIDE}: {', '.join(inside)}"
    return line


def floor_section(report: Report) -> Section | None:
    """None when the run measured no floor (no `quality.noise_floor`)."""
    records = report.quality.noise_floor
    floor = floor_summary(records, report.quality.runs)
    if records is None or floor is None:
        return None
    lines = [
        f"Before a flip counts against the candidate: {floor.text()}; "
        f"the second asks took {records.wall_s:.0f} s."
    ]
    per_result = Table(
        header=["result", "items", "right/wrong changed", "answer text changed"],
        rows=[[r.suite, str(r.n), str(r.changed), str(r.text_changed)] for r in floor.results],
        caption="The reference's first and second asks, item by item",
    )
    set_rows = []
    for v in report.all_verdicts():
        if DERIVED in v.reason:
            set_rows.append([v.gate, f"{v.limit:g}" if v.limit is not None else "-", "derived"])
        elif INSIDE in v.reason:
            set_rows.append([v.gate, f"{v.limit:g}" if v.limit is not None else "-", INSIDE])
    tables = [per_result]
    if set_rows:
        tables.append(
            Table(
                header=["gate", "limit", "from the floor"],
                rows=set_rows,
                caption="Limits the floor derived (left unset by the profile) or found inside it",
            )
        )
    else:
        lines.append("No limit was derived from it or found inside it.")
    return Section(title="Noise floor (the reference against itself)", lines=lines, tables=tables)
