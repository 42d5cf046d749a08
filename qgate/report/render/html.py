"""One self-contained HTML file: the same tables as the Markdown, plus inline PNG plots."""

from __future__ import annotations

import base64
import html
import re
from dataclasses import replace
from typing import Any

from qgate.report.model import Report
from qgate.report.render.parts import Table
from qgate.report.render.plots import all_plots
from qgate.report.render.view import sections
from qgate.report.verdict import verdict_label

_CSS = """
body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:.6em 0 1.2em;font-size:.9em}
th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left;vertical-align:top}
th{background:#f3f3f3}.PASS{color:#1a7f37}.FAIL,.fail{color:#cf222e;font-weight:600}
.UNGATED,.PREVIEW{color:#9a6700}figure{display:inline-block;margin:.5em}figcaption{font-size:.8em}
.warning{background:#fff8c5;border-left:4px solid #d4a72c;padding:.3em .6em}
.note{color:#555;font-size:.9em}
"""


def html_line(text: str) -> str:
    escaped = html.escape(text)
    return re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", escaped)


def html_table(table: Table) -> str:
    if table.caption:
        return f"<h3>{html.escape(table.caption)}</h3>" + html_table(replace(table, caption=""))
    if not table.rows:
        return "<p>(none)</p>"
    head = "".join(f"<th>{html.escape(h)}</th>" for h in table.header)
    body = []
    for row in table.rows:
        cells = "".join(
            f'<td class="fail">{html.escape(c)}</td>'
            if c == "FAIL"
            else f"<td>{html.escape(c)}</td>"
            for c in row
        )
        body.append(f"<tr>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


_LINE_CLASSES = (
    ("WARNING", "warning"),
    ("ENGINE WARNING", "warning"),
    ("FAILED", "fail"),
    ("UNDERPOWERED", "warning"),
    ("PREVIEW", "warning"),
    ("MACHINE", "note"),
)


def _line(text: str) -> str:
    cls = next((c for prefix, c in _LINE_CLASSES if text.startswith(prefix)), None)
    return f'<p class="{cls}">{html_line(text)}</p>' if cls else f"<p>{html_line(text)}</p>"


def _plots(report: Report) -> list[str]:
    plots = all_plots(report)
    if not plots:
        return []
    out = ["<h2>Plots</h2><div>"]
    for caption, png in plots:
        data = base64.b64encode(png).decode("ascii")
        out.append(
            f'<figure><img alt="{html.escape(caption)}" '
            f'src="data:image/png;base64,{data}"/>'
            f"<figcaption>{html.escape(caption)}</figcaption></figure>"
        )
    return [*out, "</div>"]


def render_html(report: Report) -> str:
    """A single HTML document; every text from the report is escaped.

    The verdict, its failing gates and the gate table come first, then accuracy,
    divergence and perf, then the plots, then the environment.
    """
    parts: list[str] = []
    secs = sections(report)
    for i, sec in enumerate(secs):
        if i == len(secs) - 1 and i > 0:  # the environment section: plots before it
            parts += _plots(report)
        tag = "h1" if i == 0 else "h2"
        parts.append(f"<{tag}>{html.escape(sec.title)}</{tag}>")
        if i == 0:
            parts.append(
                f'<p class="{html.escape(report.verdict)}" style="font-size:1.6em">'
                f"<strong>{html.escape(verdict_label(report.verdict))}</strong></p>"
            )
            lines = sec.lines[1:]
        else:
            lines = sec.lines
        parts += [_line(line) for line in lines]
        parts += [html_table(t) for t in sec.tables]
    return html_page(report.profile, report.verdict, parts)


def html_page(profile: dict[str, Any], verdict: str, parts: list[str]) -> str:
    """The whole HTML document around a (single or multi) report's rendered parts."""
    title = html.escape(f"qgate report: {profile.get('name', '?')} ({verdict})")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{title}</title><style>{_CSS}</style></head><body>\n"
        + "\n".join(parts)
        + "\n</body></html>\n"
    )
