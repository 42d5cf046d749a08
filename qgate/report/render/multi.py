"""Markdown, HTML and JUnit views of a multi report (the same tables as a single report's)."""

from __future__ import annotations

import base64
import html
import json
import xml.etree.ElementTree as ET

from qgate.report.multi_model import MultiReport
from qgate.report.render.html import html_line, html_page, html_table
from qgate.report.render.junit import add_suite
from qgate.report.render.md import markdown_of
from qgate.report.render.multi_plot import pareto_plot
from qgate.report.render.multi_view import multi_sections
from qgate.report.render.plots import all_plots

__all__ = ["render_multi", "render_multi_html", "render_multi_junit", "render_multi_md"]


def render_multi_md(report: MultiReport) -> str:
    """The side-by-side table first, then each candidate's sections."""
    return markdown_of(multi_sections(report))


def _figure(caption: str, png: bytes) -> str:
    data = base64.b64encode(png).decode("ascii")
    return (
        f'<figure><img alt="{html.escape(caption)}" src="data:image/png;base64,{data}"/>'
        f"<figcaption>{html.escape(caption)}</figcaption></figure>"
    )


def render_multi_html(report: MultiReport) -> str:
    """One self-contained HTML file: table, Pareto plot, then every candidate with its plots."""
    parts: list[str] = []
    for i, (level, sec) in enumerate(multi_sections(report)):
        parts.append(f"<h{level}>{html.escape(sec.title)}</h{level}>")
        lines = sec.lines
        if i == 0:
            parts.append(
                f'<p class="{html.escape(report.verdict)}" style="font-size:1.6em">'
                f"<strong>{html.escape(report.verdict)}</strong></p>"
            )
            lines = lines[1:]
        parts += [f"<p>{html_line(line)}</p>" for line in lines]
        parts += [html_table(t) for t in sec.tables]
        if i == 1:
            png = pareto_plot(report)
            if png is not None:
                parts.append(_figure("speed against quality; dashed: the frontier", png))
        entry = (
            report.entry(sec.title.split(" ")[1]) if sec.title.startswith("Candidate ") else None
        )
        if level == 2 and entry is not None and entry.report is not None:
            parts += [_figure(caption, png) for caption, png in all_plots(entry.report)]
    return html_page(report.profile, report.verdict, parts)


def render_multi_junit(report: MultiReport) -> str:
    """One <testsuite> per candidate; a candidate that could not run is one errored testcase."""
    base = f"qgate.{report.profile.get('name', 'report')}"
    root = ET.Element("testsuites", name=base)
    for entry in report.candidates:
        name = f"{base}.{entry.name}"
        if entry.report is not None:
            add_suite(root, name, entry.report)
            suite = root[-1]
        else:
            suite = ET.SubElement(
                root,
                "testsuite",
                name=name,
                tests="1",
                failures="0",
                errors="1",
                skipped="0",
                timestamp=report.created_at,
            )
            case = ET.SubElement(suite, "testcase", name="runtime", classname="runtime", time="0")
            ET.SubElement(case, "error", message=entry.error or "", type="RuntimeFailure")
        props = suite.find("properties")
        if props is None:
            props = ET.SubElement(suite, "properties")
        ET.SubElement(props, "property", name="required", value=str(entry.required).lower())
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def render_multi(report: MultiReport, fmt: str) -> str:
    """The view `qgate show --format FMT` asks for (md, html, junit, json)."""
    if fmt == "md":
        return render_multi_md(report)
    if fmt == "html":
        return render_multi_html(report)
    if fmt == "junit":
        return render_multi_junit(report)
    return json.dumps(report.model_dump(mode="json"), indent=2) + "\n"
