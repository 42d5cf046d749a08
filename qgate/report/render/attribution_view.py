"""The report view's attribution section: the changes, each sub-candidate, the verdict."""

from __future__ import annotations

from qgate.quality.divergence import summarize_divergence
from qgate.report.attribution import budget_note, summary_lines
from qgate.report.derive import flips, suite_pairs
from qgate.report.model import Report
from qgate.report.render.parts import Section, Table, fmt

__all__ = ["TITLE", "attribution_section"]

TITLE = "Which change broke it"


def attribution_section(report: Report) -> Section | None:
    """None without an attribution (the candidate passed, or none was asked)."""
    att = report.attribution
    if att is None:
        return None
    sec = Section(TITLE)
    sec.lines += summary_lines(att)[:1]
    sec.lines.append(
        "Each trial is the reference with some of the candidate's changes applied, gated "
        "against the same reference records, without perf: halves first, then smaller parts "
        "and their complements (delta debugging), until every set with one change fewer than "
        "the answer has passed or the budget of lives is spent; ERROR: it could not run here "
        "(not counted as failing)."
    )
    sec.tables.append(
        Table(
            ["Change", "Reference", "Candidate"],
            [[c.name, c.reference, c.candidate] for c in att.changes],
        )
    )
    reference = [r for r in report.quality.runs if r.role == "reference"]
    rows = []
    for i, t in enumerate(att.trials, 1):
        lost = gained = 0
        for _, ref, cand in suite_pairs(reference + list(t.runs)):
            if ref is not None and cand is not None:
                down, up = flips(ref, cand)
                lost, gained = lost + len(down), gained + len(up)
        kld = None
        if t.divergence is not None and any(s.kld for s in t.divergence.sequences):
            kld = summarize_divergence(t.divergence).mean_kld
        failed = [v.gate for v in t.verdicts if not v.passed and v.settled]
        rows.append(
            [
                str(i),
                " + ".join(t.changes),
                t.verdict,
                ", ".join(failed) or (t.error or "–"),
                f"{lost} / {gained}",
                fmt(kld),
                f"{t.seconds:.0f} s",
            ]
        )
    sec.tables.append(
        Table(
            ["#", "Changes applied", "Verdict", "Failed gates", "Lost / gained", "Mean KL", "Time"],
            rows,
        )
    )
    if att.not_tried:
        sec.lines.append("Next, had the budget of lives allowed: " + "; ".join(att.not_tried) + ".")
    sec.lines.append(budget_note(len(att.changes), att.max_lives) + ".")
    return sec
