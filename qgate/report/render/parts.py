"""The pieces every view is made of: tables, titled sections, formatted numbers."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from qgate.core.provenance import provenance_lines

__all__ = ["Section", "Table", "fmt", "origin_lines"]


@dataclass
class Table:
    """A header row and data rows of already formatted cells."""

    header: list[str]
    rows: list[list[str]]
    caption: str = ""


@dataclass
class Section:
    """A titled block: lines of text (may hold **bold**) and tables, in order."""

    title: str
    lines: list[str] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)


def fmt(value: Any, digits: int = 4) -> str:
    """Numbers with `digits` significant digits, None as an en dash."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return str(value)
        return f"{value:.{digits}g}"
    return str(value)


def origin_lines(report: Any) -> list[str]:
    """Who signed a (single or multi) report, with which qgate, when, over which profile."""
    lines = []
    if report.signer is not None:
        note = " (local development key)" if report.signer.source == "local-dev" else ""
        lines.append(f"Signed by key {report.signer.keyid[:16]} ({report.signer.scheme}){note}.")
    lines.append(
        f"qgate {report.qgate_version}, created {report.created_at}, "
        f"profile sha256 {report.profile_sha256[:16]}."
    )
    return lines + provenance_lines(getattr(report, "provenance", None))
