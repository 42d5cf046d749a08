"""The report view's "Where the damage sits" section (figures: qgate/report/localise.py)."""

from __future__ import annotations

from qgate.report.localise import (
    BUCKETS,
    AccuracyGroup,
    length_groups,
    level_groups,
    position_buckets,
)
from qgate.report.model import Report
from qgate.report.render.parts import Section, Table, fmt

__all__ = ["TITLE", "localise_section", "worst_suffix"]

TITLE = "Where the damage sits"
_WHY = (
    "Damage that shows only late in the continuation, or only past some context length or "
    "needle depth, points at the KV cache; damage that shows everywhere points at the weights."
)


def worst_suffix(notes: dict[str, str], gate: str) -> str:
    """' — worst: ...' after a failed gate's stored reason (the reason itself is unchanged)."""
    return f" — {notes[gate]}" if gate in notes else ""


def _positions(report: Report) -> Table | None:
    div = report.quality.divergence
    buckets = position_buckets(div)
    if div is None or not buckets:
        return None
    first = buckets[0].mean_kld
    rows = [
        [
            b.span,
            str(b.n),
            fmt(b.mean_kld),
            fmt(b.p99_kld),
            fmt(b.max_kld),
            fmt(b.top1_agreement),
            fmt(b.mean_kld / first) if first and b.mean_kld is not None else "–",
        ]
        for b in buckets
    ]
    caption = (
        f"Divergence by position in the scored continuation: {BUCKETS} equal parts of the "
        f"{div.tokens} tokens requested, pooled over {len(div.sequences)} sequences"
    )
    header = ["Positions", "n", "Mean KL", "p99 KL", "Max KL", "Top-1 agree", "Mean KL / first"]
    return Table(header, rows, caption=caption)


def _rows(groups: list[AccuracyGroup]) -> list[list[str]]:
    return [
        [
            g.label,
            str(g.n),
            fmt(g.reference),
            fmt(g.candidate),
            fmt(g.candidate - g.reference)
            if g.candidate is not None and g.reference is not None
            else "–",
            str(g.lost),
            str(g.gained),
        ]
        for g in groups
    ]


def _lengths(report: Report) -> Table | None:
    groups = length_groups(report)
    if not groups:
        return None
    rows = _rows(groups)
    caption = "Accuracy by prompt length: math short and long, recall per context length and depth"
    header = ["Prompts", "Paired", "Reference", "Candidate", "Delta", "Lost", "Gained"]
    return Table(header, rows, caption=caption)


def _levels(report: Report) -> Table | None:
    groups = level_groups(report)
    if not groups:
        return None
    caption = (
        "Accuracy by difficulty: math items per ladder level (or core-set tier), recall items "
        "per count of similar distractor codes, both sides; a drop concentrated at the hard "
        "end shows here first"
    )
    header = ["Difficulty", "Paired", "Reference", "Candidate", "Delta", "Lost", "Gained"]
    return Table(header, _rows(groups), caption=caption)


def localise_section(report: Report) -> Section | None:
    """Divergence per part of the continuation, accuracy per prompt length and per difficulty."""
    parts = (_positions(report), _lengths(report), _levels(report))
    tables = [t for t in parts if t is not None]
    if not tables:
        return None
    return Section(TITLE, lines=[_WHY, *_calibration_lines(report)], tables=tables)


def _calibration_lines(report: Report) -> list[str]:
    """What calibration decided (stored in the report and re-derived by verify), if any."""
    cal = report.quality.calibration
    if cal is None:
        return []
    low, high = cal.band
    flips = "no candidate records" if cal.discordance is None else f"{100 * cal.discordance:.1f}%"
    return [
        f"Calibration: math drew from ladder levels {cal.chosen}, where the reference's accuracy "
        f"on {cal.source} lay in {100 * low:.0f}-{100 * high:.0f}% (observed flips there: "
        f"{flips}); " + "; ".join(f"L{s.level} {s.why}" for s in cal.levels)
    ]
