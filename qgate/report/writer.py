"""The last stage of a run: redact, list artifacts, sign, write envelope and views.

The pipeline calls `write_report` once; everything else in qgate.report is a
building block of it or of `qgate verify` / `qgate show`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from qgate.attest.keys import LoadedSigner
from qgate.attest.statement import Subject
from qgate.core.files import atomic_write
from qgate.report.files import artifact_digests
from qgate.report.model import Report
from qgate.report.redact import redact_report
from qgate.report.signing import sign_report, with_signer

ENVELOPE_NAME = "report.intoto.jsonl"
MARKDOWN_NAME = "report.md"
HTML_NAME = "report.html"
JUNIT_NAME = "junit.xml"
# views are derived from the signed report, so they are not artifacts of it
REPORT_FILES = (ENVELOPE_NAME, MARKDOWN_NAME, HTML_NAME, JUNIT_NAME)


@dataclass(frozen=True)
class WrittenReport:
    """Where the signed report and its views went, and the report as signed."""

    report: Report
    envelope: Path
    markdown: Path
    junit: Path
    html: Path | None
    step_summary: Path | None


def write_report(
    run_dir: Path,
    report: Report,
    subjects: Iterable[Subject],
    signer: LoadedSigner,
    extra_secret_names: Iterable[str] = (),
    html: bool = True,
    step_summary: bool = True,
) -> WrittenReport:
    """Redact, digest every file already in `run_dir`, sign, and write envelope + views."""
    from qgate.report.render.junit import render_junit
    from qgate.report.render.md import render_markdown, write_step_summary

    clean = redact_report(report, extra_secret_names)
    clean.artifacts = artifact_digests(run_dir, exclude=REPORT_FILES)
    signed = with_signer(clean, signer)
    envelope = atomic_write(run_dir / ENVELOPE_NAME, sign_report(signed, subjects, signer))
    md = render_markdown(signed)
    md_path = atomic_write(run_dir / MARKDOWN_NAME, md.encode())
    junit_path = atomic_write(run_dir / JUNIT_NAME, render_junit(signed).encode())
    html_path = None
    if html:
        from qgate.report.render.html import render_html

        html_path = atomic_write(run_dir / HTML_NAME, render_html(signed).encode())
    summary = write_step_summary(md) if step_summary else None
    return WrittenReport(signed, envelope, md_path, junit_path, html_path, summary)
