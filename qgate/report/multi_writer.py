"""Build, redact, sign and write a multi-candidate report and its views.

One signature over the whole: an in-toto Statement whose predicate type is
MULTI_PREDICATE_TYPE and whose predicate is the MultiReport, in the same DSSE
envelope format as a single report (qgate/report/signing.py).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from qgate import __version__
from qgate.attest.keys import LoadedSigner
from qgate.attest.statement import STATEMENT_TYPE, Subject
from qgate.core.files import atomic_write
from qgate.report.model import SignerInfo
from qgate.report.multi_model import MULTI_PREDICATE_TYPE, CandidateEntry, MultiReport
from qgate.runtime.fingerprint import Fingerprint

__all__ = ["WrittenMulti", "build_multi_report", "multi_statement", "write_multi_report"]


def build_multi_report(
    *,
    profile: dict[str, Any],
    profile_sha256: str,
    fingerprint: Fingerprint | None,
    candidates: Sequence[CandidateEntry],
    stage_timings: dict[str, float],
) -> MultiReport:
    """The unsigned multi report; the table and the verdict derived from the entries."""
    from qgate.report.multi_table import multi_verdict, table

    verdict, optional = multi_verdict(candidates)
    return MultiReport(
        qgate_version=__version__,
        command_line=list(sys.argv),
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        profile=profile,
        profile_sha256=profile_sha256,
        fingerprint=fingerprint,
        candidates=list(candidates),
        table=table(candidates),
        verdict=verdict,
        optional_failures=optional,
        stage_timings=dict(stage_timings),
    )


def redact_multi(report: MultiReport, extra_secret_names: Iterable[str] = ()) -> MultiReport:
    """Secrets hidden in every embedded report and in the multi report's own configuration."""
    from qgate.report.redact import redact_report, redact_sections

    extra = list(extra_secret_names) + [str(s) for s in report.profile.get("secrets", [])]
    entries = [
        e.model_copy(update={"report": redact_report(e.report, extra) if e.report else None})
        for e in report.candidates
    ]
    data = report.model_copy(update={"candidates": []}).model_dump(mode="json")
    redact_sections(data, [k for k in data if k not in ("candidates", "table")], extra)
    data["candidates"] = [e.model_dump(mode="json") for e in entries]
    return MultiReport.model_validate(data)


def multi_statement(report: MultiReport, subjects: Iterable[Subject]) -> dict[str, Any]:
    """The in-toto Statement v1 whose predicate is the multi report."""
    return {
        "_type": STATEMENT_TYPE,
        "subject": [s.to_statement() for s in subjects],
        "predicateType": MULTI_PREDICATE_TYPE,
        "predicate": report.model_dump(mode="json"),
    }


def with_multi_signer(report: MultiReport, loaded: LoadedSigner) -> MultiReport:
    key = loaded.signer.public_key
    info = SignerInfo(
        keyid=key.keyid, scheme=key.scheme, source=loaded.source, public_key_pem=loaded.public_pem
    )
    return report.model_copy(update={"signer": info})


@dataclass(frozen=True)
class WrittenMulti:
    """Where the signed multi report and its views went, and the report as signed."""

    report: MultiReport
    envelope: Path


def write_multi_report(
    run_dir: Path,
    report: MultiReport,
    subjects: Iterable[Subject],
    signer: LoadedSigner,
    extra_secret_names: Iterable[str] = (),
    step_summary: bool = False,
) -> WrittenMulti:
    """Redact, digest every file in `run_dir` (candidate folders included), sign, write views."""
    from qgate.attest.statement import sign_statement
    from qgate.report.files import artifact_digests
    from qgate.report.render.md import write_step_summary
    from qgate.report.render.multi import render_multi_html, render_multi_junit, render_multi_md
    from qgate.report.writer import (
        ENVELOPE_NAME,
        HTML_NAME,
        JUNIT_NAME,
        MARKDOWN_NAME,
        REPORT_FILES,
    )

    clean = redact_multi(report, extra_secret_names)
    clean.artifacts = artifact_digests(run_dir, exclude=REPORT_FILES)
    signed = with_multi_signer(clean, signer)
    envelope = atomic_write(
        run_dir / ENVELOPE_NAME, sign_statement(multi_statement(signed, subjects), signer)
    )
    md = render_multi_md(signed)
    atomic_write(run_dir / MARKDOWN_NAME, md.encode())
    atomic_write(run_dir / JUNIT_NAME, render_multi_junit(signed).encode())
    atomic_write(run_dir / HTML_NAME, render_multi_html(signed).encode())
    if step_summary:
        write_step_summary(md)
    return WrittenMulti(signed, envelope)
