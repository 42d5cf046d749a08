"""`qgate show REPORT` (render a report: md, html, json, junit) and `qgate compare REPORTS`.

Apart from `qgate verify` (qgate/cli/report.py) so that verifying a report does not
import the renderers.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from qgate.cli.outputs import CompareOutput, CompareRow, echo_json
from qgate.cli.report import load_any, load_report
from qgate.cli.util import TEXT_OR_JSON, emit
from qgate.core.files import atomic_write
from qgate.core.outpaths import check_out_file
from qgate.report.derive import accuracy_deltas, mean_kld
from qgate.report.model import Report
from qgate.report.multi_model import MultiReport
from qgate.report.render.compare import AGGREGATE, compare_html, compare_table, headline_interval
from qgate.report.render.html import render_html
from qgate.report.render.junit import render_junit
from qgate.report.render.md import md_table, render_markdown
from qgate.report.render.multi import render_multi

__all__ = ["compare_cmd", "compare_output", "show"]

_PATH = click.Path(path_type=Path)


@click.command()
@click.argument("report", type=_PATH)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["md", "html", "json", "junit"]),
    default="md",
    show_default=True,
    help="Markdown, a self-contained HTML page, the report as JSON (unsigned), or JUnit XML "
    "with one testcase per gate.",
)
@click.option("--out", type=_PATH, default=None, help="Write to this file instead of stdout.")
@click.option("--pubkey", type=_PATH, default=None, help="Verify the report first.")
def show(report: Path, fmt: str, out: Path | None, pubkey: Path | None) -> None:
    """Render REPORT (a signed report file) as Markdown, HTML, JSON or JUnit XML."""
    if out is not None:
        check_out_file(out, "--out")
    rep = load_any(report, pubkey)
    if pubkey is None:
        click.echo("note: not verified (pass --pubkey, or run `qgate verify`)", err=True)
    if isinstance(rep, MultiReport):
        text = render_multi(rep, fmt)
    elif fmt == "md":
        text = render_markdown(rep)
    elif fmt == "html":
        text = render_html(rep)
    elif fmt == "junit":
        text = render_junit(rep)
    else:
        text = json.dumps(rep.model_dump(mode="json"), indent=2) + "\n"
    emit(text, out)


@click.command(name="compare")
@click.argument("reports", type=_PATH, nargs=-1, required=True)
@click.option("--pubkey", type=_PATH, default=None, help="Verify every report first.")
@click.option("--html", "html_out", type=_PATH, default=None, help="Also write an HTML page.")
@click.option(
    "--format",
    "fmt",
    type=TEXT_OR_JSON,
    default="text",
    show_default=True,
    help="A table for people, or one JSON object (`qgate schema compare`).",
)
def compare_cmd(
    reports: tuple[Path, ...], pubkey: Path | None, html_out: Path | None, fmt: str
) -> None:
    """REPORTS side by side: verdict, accuracy deltas, mean KLD, perf ratio.

    REPORT#NAME picks candidate NAME of a report with several candidates. The
    speed column is the geometric mean over a report's scenarios of the
    candidate/reference output tokens/s ratio, with a 95% interval.
    """
    if html_out is not None:
        check_out_file(html_out, "--html")
    loaded = [
        (
            p.name if len(set(r.name for r in reports)) == len(reports) else str(p),
            load_report(p, pubkey),
        )
        for p in reports
    ]
    if pubkey is None:
        click.echo("note: not verified (pass --pubkey to verify each report)", err=True)
    if fmt == "json":
        echo_json(compare_output(loaded, verified=pubkey is not None))
    else:
        click.echo("\n".join(md_table(compare_table(loaded))))
        click.echo(f"\nOutput tok/s ratio: {AGGREGATE}; Δacc: candidate − reference accuracy.")
    if html_out is not None:
        atomic_write(html_out, compare_html(loaded).encode())
        click.echo(f"wrote {html_out}", err=True)


def compare_output(loaded: list[tuple[str, Report]], verified: bool) -> CompareOutput:
    """The rows of `compare --format json`."""
    rows = []
    for label, rep in loaded:
        point, low, high, n = headline_interval(rep)
        rows.append(
            CompareRow(
                label=label,
                profile=str(rep.profile.get("name", "?")),
                verdict=str(rep.verdict),
                accuracy_delta=accuracy_deltas(rep),
                mean_kld=mean_kld(rep),
                output_tokens_per_s_ratio=point,
                ratio_ci_low=low,
                ratio_ci_high=high,
                scenarios=n,
                perf_status=str(rep.perf.status),
            )
        )
    return CompareOutput(aggregate=AGGREGATE, verified=verified, rows=rows)
