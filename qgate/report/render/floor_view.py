"""The report's noise-floor section: the reference against itself, and what that set."""

from __future__ import annotations

from qgate.quality.noise_floor import INSIDE, floor_summary
from qgate.report.model import Report
from qgate.report.render.parts import Section, Table

__all__ = ["floor_section"]

DERIVED = "limit from the noise floor"


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
