"""Speculative decoding in a report, as people read it: per side, what its drafts gained over
the quality suites (acceptance length and rate, acceptance by draft position) and what each
suite cost in seconds; per perf scenario, the candidate's acceptance under load. Display only:
the figures come from the functions the acceptance gate uses (qgate/gates/speculative.py).
"""

from __future__ import annotations

from qgate.gates.speculative import Acceptance, acceptance
from qgate.quality.spec_counters import ACCEPTED, DRAFT_TOKENS, DRAFTS
from qgate.report.model import Report
from qgate.report.render.parts import Section, Table

__all__ = ["speculative_section"]


def _position(key: str) -> str:
    """'{position="0"}' -> '0'."""
    return key.strip("{}").partition("=")[2].strip('"')


def _cells(got: Acceptance | None) -> list[str]:
    if got is None:
        return ["no counters", "–", "–", "–", "–"]
    length = "–" if got.length is None else f"{got.length:.3f}"
    rate = "–" if got.rate is None else f"{100 * got.rate:.1f}%"
    per = "–"
    if got.drafts > 0:
        per = ", ".join(
            f"{_position(k)}: {v / got.drafts:.2f}" for k, v in got.per_position.items()
        )
    return [
        f"{got.drafts:,.0f}",
        f"{got.accepted:,.0f} / {got.draft_tokens:,.0f}",
        length,
        rate,
        per,
    ]


def _perf_rows(report: Report) -> list[list[str]]:
    rows = []
    for r in report.perf.runs:
        before, after = r.counters_before, r.counters_after
        if DRAFTS not in after:
            continue
        drafts = after[DRAFTS] - before.get(DRAFTS, 0.0)
        tokens = after.get(DRAFT_TOKENS, 0.0) - before.get(DRAFT_TOKENS, 0.0)
        accepted = after.get(ACCEPTED, 0.0) - before.get(ACCEPTED, 0.0)
        got = Acceptance(drafts, tokens, accepted, {})
        rows.append([r.scenario, r.role, *_cells(got)[:4]])
    return rows


def speculative_section(report: Report) -> Section | None:
    """Acceptance by side and suite cost; None when the report holds no snapshots."""
    snaps = report.quality.speculative
    if not snaps:
        return None
    sec = Section("Speculative decoding: what the drafts gained")
    rows = []
    for role in ("reference", "candidate"):
        own = [s for s in snaps if s.role == role]
        if not own:
            continue
        rows.append([role, *_cells(acceptance(snaps, role))])
    sec.tables.append(
        Table(
            [
                "side",
                "drafts",
                "accepted / draft tokens",
                "acceptance length",
                "rate",
                "accepted per draft, by position",
            ],
            rows,
            "Over the quality suites (first to last counter snapshot); acceptance length is "
            "1 + accepted / drafts.",
        )
    )
    cost: list[list[str]] = []
    for role in ("reference", "candidate"):
        own = [s for s in snaps if s.role == role]
        for a, b in zip(own, own[1:], strict=False):
            cost.append([role, b.at.removeprefix("after "), f"{b.seconds - a.seconds:.1f}"])
    if cost:
        sec.tables.append(Table(["side", "suite", "seconds"], cost, "What each suite took."))
    perf = _perf_rows(report)
    if perf:
        sec.tables.append(
            Table(
                [
                    "scenario",
                    "side",
                    "drafts",
                    "accepted / draft tokens",
                    "acceptance length",
                    "rate",
                ],
                perf,
                "Under the perf scenarios' load (the server's counters around each).",
            )
        )
    return sec
