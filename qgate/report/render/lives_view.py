"""Every life graded: each server life's start and idle probes and its verdict (the reference's
lives' from perf derivation 12, gates/reference_lives.py).

Read from the report as stored (the records and the verdicts `verify` re-derives).
"""

from __future__ import annotations

from qgate.core.verdict import verdict_word
from qgate.gates.judgement import REFERENCE_LIVES
from qgate.perf.life_probes import life_label, when_asked
from qgate.perf.probes import graded
from qgate.report.model import Report
from qgate.report.render.parts import Section, Table

__all__ = ["lives_section"]

_WRONG_SHOWN = 3


def lives_section(report: Report) -> Section | None:
    """The life probes: one row per life and kind; failed lives named with their answers."""
    lives = report.lives
    if lives is None:
        return None
    sec = Section("Every life graded")
    sec.lines.append(
        "Each server life answered math probes right after it was ready and again after its "
        "work and an idle pause, one at a time (the first request after the pause is a probe), "
        "graded against each item's known answer. A candidate life loses an item the "
        "reference answered right in its quality stage and in every probe of that kind it "
        "asked; reference lives set that floor."
    )
    if report.perf.derivation >= REFERENCE_LIVES:
        sec.lines.append(
            "Each reference life is graded too, on the items it answered right in its quality "
            "stage (and, where it has several lives of a kind, another of them answered right): "
            "a broken one makes the run INCONCLUSIVE, its round is kept out of the ratios and "
            "the candidate's lives of that round are not judged against it."
        )
    if any(p.endpoint for p in lives.records):
        sec.lines.append(
            "A side qgate did not start (an endpoint, already running) is probed the same way: "
            "at qgate's first contact with it and after the idle pause."
        )
    salted = sum(1 for p in lives.records if p.cache_salt is not None)
    if salted:
        sec.lines.append(
            f"{salted} of the {len(lives.records)} probe sets were salted apart (`cache_salt` by "
            "side, life, round and moment, each probe its own): none read KV that the life's "
            "quality stage, another probe set or the other side wrote."
        )
    verdicts = {v.gate: v for v in lives.verdicts}
    rows = []
    for p in lives.records:
        asked = [r for r in p.requests if r.probe_truth is not None]
        right = sum(1 for r in asked if graded(r))
        v = verdicts.get(f"lives.{p.side}.{p.life + 1}.{p.kind}")
        verdict = "–" if v is None else verdict_word(v)
        lost = "–" if v is None or v.observed is None else f"{v.observed:.0f}/{v.n}"
        when = when_asked(p).removeprefix("at its ").removeprefix("at ")  # start, first contact
        rows.append([life_label(p), when, f"{right}/{len(asked)}", lost, verdict])
        if v is not None and not v.passed:
            wrong = [
                f"{r.probe_id} answered {r.probe_answer or 'no number'} (truth {r.probe_truth})"
                for r in asked
                if not graded(r)
            ]
            shown = "; ".join(wrong[:_WRONG_SHOWN]) + (" ..." if len(wrong) > _WRONG_SHOWN else "")
            if p.role == "reference" or v.inconclusive:  # the reason says why
                head = "REFERENCE LIFE" if p.role == "reference" else "LIFE"
                sec.lines.append(
                    f"{head} {verdict_word(v)}: {v.reason.removeprefix('INCONCLUSIVE: ')}"
                )
            else:
                sec.lines.append(f"LIFE FAILED: {life_label(p)} {when}: {shown}")
    if lives.excluded_rounds:
        rounds = ", ".join(str(k + 1) for k in lives.excluded_rounds)
        sec.lines.append(
            f"Perf round(s) {rounds} served by a failed or broken life: their runs are kept in the "
            "records and out of every ratio and speed gate."
        )
    header = ["Life", "When", "Right/asked", "Lost/judged", "Verdict"]
    sec.tables.append(Table(header, rows, caption="Life probes"))
    return sec
