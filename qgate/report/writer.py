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
from qgate.attest.statement import PROFILE_PREFIX, Subject
from qgate.core.files import atomic_write
from qgate.report.files import artifact_digests
from qgate.report.items_tree import items_root
from qgate.report.model import Report
from qgate.report.multi_model import MultiReport
from qgate.report.preregistration import (
    PREREGISTRATION_NAME,
    PreregistrationRef,
    read_statement,
    ref_of,
)
from qgate.report.redact import redact_multi, redact_report
from qgate.report.render.html import render_html
from qgate.report.render.junit import render_junit
from qgate.report.render.md import render_markdown, write_step_summary
from qgate.report.render.multi import render_multi_html, render_multi_junit, render_multi_md
from qgate.report.result_statement import RESULT_NAME, result_of, sign_result
from qgate.report.signing import R, sign_report, with_signer

ENVELOPE_NAME = "report.intoto.jsonl"
MARKDOWN_NAME = "report.md"
HTML_NAME = "report.html"
JUNIT_NAME = "junit.xml"
# views are derived from the signed report, so they are not artifacts of it
# the result statement is signed after the report, over its envelope
REPORT_FILES = (ENVELOPE_NAME, MARKDOWN_NAME, HTML_NAME, JUNIT_NAME, RESULT_NAME)


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
    subjects = list(subjects)
    if isinstance(report, MultiReport):
        clean = redact_multi(report, extra_secret_names)
    else:
        clean = redact_report(report, extra_secret_names)
        # from the records as signed (redacted), so verify re-derives the same root
        clean.items_root = items_root(clean.quality.runs)
        clean.preregistration = bound_statement(run_dir)
    clean.artifacts = artifact_digests(run_dir, exclude=REPORT_FILES)
    signed = with_signer(clean, signer)
    data = sign_report(signed, subjects, signer)
    envelope = atomic_write(run_dir / ENVELOPE_NAME, data)
    if isinstance(signed, Report):
        profile_name = next(s.name for s in subjects if s.name.startswith(PROFILE_PREFIX))
        result = sign_result(
            result_of(signed, data), profile_name.removeprefix(PROFILE_PREFIX), data, signer
        )
        atomic_write(run_dir / RESULT_NAME, result)
    md, junit, page = _views(signed, html)
    md_path = atomic_write(run_dir / MARKDOWN_NAME, md.encode())
    junit_path = atomic_write(run_dir / JUNIT_NAME, junit.encode())
    html_path = atomic_write(run_dir / HTML_NAME, page.encode()) if page is not None else None
    summary = write_step_summary(md) if step_summary else None
    return WrittenReport(signed, envelope, md_path, junit_path, html_path, summary)


def bound_statement(run_dir: Path) -> PreregistrationRef | None:
    """The binding to the pre-registration statement the run wrote into `run_dir` before its
    first server started (qgate/run/preregister.py); None when it wrote none."""
    path = run_dir / PREREGISTRATION_NAME
    if not path.is_file():
        return None
    data = path.read_bytes()
    prereg, keyid = read_statement(data, str(path))
    return ref_of(data, prereg, keyid)


def _views(report: Report | MultiReport, html: bool) -> tuple[str, str, str | None]:
    """Markdown, JUnit and (when asked) HTML of a report of either kind."""
    if isinstance(report, MultiReport):
        page = render_multi_html(report) if html else None
        return render_multi_md(report), render_multi_junit(report), page
    if html:
        return render_markdown(report), render_junit(report), render_html(report)
    return render_markdown(report), render_junit(report), None
