"""The last stage of a run: redact, list artifacts, sign, write envelope and views.

The pipeline calls `write_report` once; everything else in qgate.report is a
building block of it or of `qgate verify` / `qgate show`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Generic

from qgate.attest.keys import LoadedSigner
from qgate.attest.statement import Subject
from qgate.core.files import atomic_write
from qgate.report.files import artifact_digests
from qgate.report.model import Report
from qgate.report.multi_model import MultiReport
from qgate.report.redact import redact_multi, redact_report
from qgate.report.render.html import render_html
from qgate.report.render.junit import render_junit
from qgate.report.render.md import render_markdown, write_step_summary
from qgate.report.render.multi import render_multi_html, render_multi_junit, render_multi_md
from qgate.report.signing import R, sign_report, with_signer

ENVELOPE_NAME = "report.intoto.jsonl"
MARKDOWN_NAME = "report.md"
HTML_NAME = "report.html"
JUNIT_NAME = "junit.xml"
# views are derived from the signed report, so they are not artifacts of it
REPORT_FILES = (ENVELOPE_NAME, MARKDOWN_NAME, HTML_NAME, JUNIT_NAME)


@dataclass(frozen=True)
class WrittenReport(Generic[R]):
    """Where the signed report and its views went, and the report as signed."""

    report: R
    envelope: Path
    markdown: Path
    junit: Path
    html: Path | None
    step_summary: Path | None


def write_report(
    run_dir: Path,
    report: R,
    subjects: Iterable[Subject],
    signer: LoadedSigner,
    extra_secret_names: Iterable[str] = (),
    html: bool = True,
    step_summary: bool = True,
) -> WrittenReport[R]:
    """Redact, digest every file already in `run_dir`, sign, and write envelope + views.

    The same for a single report and a multi report (whose artifacts include every
    candidate's folder); only the redaction and the views differ by kind.
    """
    clean: R
    if isinstance(report, MultiReport):
        clean = redact_multi(report, extra_secret_names)
    else:
        clean = redact_report(report, extra_secret_names)
    clean.artifacts = artifact_digests(run_dir, exclude=REPORT_FILES)
    signed = with_signer(clean, signer)
    envelope = atomic_write(run_dir / ENVELOPE_NAME, sign_report(signed, subjects, signer))
    md, junit, page = _views(signed, html)
    md_path = atomic_write(run_dir / MARKDOWN_NAME, md.encode())
    junit_path = atomic_write(run_dir / JUNIT_NAME, junit.encode())
    html_path = atomic_write(run_dir / HTML_NAME, page.encode()) if page is not None else None
    summary = write_step_summary(md) if step_summary else None
    return WrittenReport(signed, envelope, md_path, junit_path, html_path, summary)


def _views(report: Report | MultiReport, html: bool) -> tuple[str, str, str | None]:
    """Markdown, JUnit and (when asked) HTML of a report of either kind."""
    if isinstance(report, MultiReport):
        page = render_multi_html(report) if html else None
        return render_multi_md(report), render_multi_junit(report), page
    if html:
        return render_markdown(report), render_junit(report), render_html(report)
    return render_markdown(report), render_junit(report), None
