"""Markdown view of a report, and the GitHub Actions step summary."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from qgate.report.model import Report
from qgate.report.render.parts import Section, Table
from qgate.report.render.view import sections


def _cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def md_table(table: Table) -> list[str]:
    caption = [f"**{_cell(table.caption)}**", ""] if table.caption else []
    if not table.rows:
        return [*caption, "(none)"]
    lines = [*caption, "| " + " | ".join(_cell(h) for h in table.header) + " |"]
    lines.append("|" + "|".join("---" for _ in table.header) + "|")
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in table.rows]
    return lines


def render_markdown(report: Report) -> str:
    """Verdict first, then gates, accuracy and flips, divergence, perf, environment."""
    return markdown_of((1 if i == 0 else 2, sec) for i, sec in enumerate(sections(report)))


def markdown_of(leveled: Iterable[tuple[int, Section]]) -> str:
    """(heading level, section) pairs as one Markdown document."""
    out: list[str] = []
    for level, sec in leveled:
        out += ["#" * level + " " + sec.title, ""]
        for line in sec.lines:
            out += [line, ""]
        for table in sec.tables:
            out += md_table(table)
            out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


def write_step_summary(md: str) -> Path | None:
    """Append `md` to $GITHUB_STEP_SUMMARY when set; return the file written, if any."""
    target = os.environ.get("GITHUB_STEP_SUMMARY")
    if not target:
        return None
    path = Path(target)
    with path.open("a", encoding="utf-8") as fh:
        fh.write(md if md.endswith("\n") else md + "\n")
    return path
