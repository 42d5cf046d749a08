"""The attribution section of a report: a failing candidate's changes, the sub-candidates
tried, and the smallest set of changes that still fails (or, when the budget of lives ran
out first, the set it had come to, said to be not minimal).

Each trial keeps its own candidate records, so `qgate verify` recomputes its
verdict against the report's reference records with the gates `run` used, and
re-derives the conclusion from the trials (qgate/report/verify/attribution.py).
"""

from __future__ import annotations

from pydantic import Field

from qgate.core.ddmin import Outcome, worst_case
from qgate.core.records import Record
from qgate.core.serving import EffectiveConfig
from qgate.core.verdict import Verdict
from qgate.profile.changes import Change
from qgate.quality.records import DivergenceRun, SuiteRun
from qgate.quality.reuse_records import PassRun

__all__ = ["Attribution", "Change", "Trial", "TrialVerdict", "budget_note", "summary_lines"]

TrialVerdict = Outcome


class Trial(Record):
    """One sub-candidate: the reference with some of the candidate's changes applied."""

    name: str = Field(description="Its name in logs and run folders.")
    changes: list[str] = Field(description="The changes it applies (names of `Change`).")
    verdict: TrialVerdict = Field(description="PASS/FAIL of its gates; ERROR: it did not run.")
    verdicts: list[Verdict] = Field(default_factory=list, description="Its quality verdicts.")
    runs: list[SuiteRun] = Field(default_factory=list, description="Its candidate records.")
    divergence: DivergenceRun | None = Field(default=None, description="Its divergence.")
    passes: list[PassRun] = Field(
        default_factory=list,
        description="Its reuse passes (quality.reuse), cold counters first: a failure that lives "
        "only in a pass is searched for on the gates that hold it (quality derivation 4 on).",
    )
    effective_config: EffectiveConfig | None = Field(
        default=None,
        description="What its server reported it applied: the evidence of its changes' "
        "confirmation (a contradicted change fails it).",
    )
    error: str | None = Field(default=None, description="Why it could not run (ERROR).")
    seconds: float = Field(default=0.0, description="Wall time of its life.")


class Attribution(Record):
    """Delta debugging over the candidate's changes, against the same reference records."""

    changes: list[Change] = Field(description="Every change of the candidate, as tried.")
    trials: list[Trial] = Field(default_factory=list, description="Sub-candidates, in order.")
    minimal: list[str] | None = Field(
        description="The smallest failing set found (delta debugging: halves, then smaller "
        "parts and their complements); None when no trial failed (only the whole candidate "
        "does). Shown 1-minimal only where `complete`."
    )
    complete: bool = Field(
        default=False,
        description="The search ran to its end: every set with one change fewer than `minimal` "
        "(or than all of the changes, when None) was tried and passed. False: the budget ran "
        "out first, and `minimal` may hold changes that are not needed.",
    )
    lives: int = Field(description="Server lives the trials took.")
    max_lives: int = Field(description="The budget of lives.")
    not_tried: list[str] = Field(
        default_factory=list, description="The set the search would have tried next."
    )
    width: int = Field(
        default=1,
        description="Sub-candidates of one round tried at once (waves on a Ray cluster, "
        "qgate/core/ddmin.py: search_rounds); 1: one at a time.",
    )


def budget_note(changes: int, max_lives: int) -> str:
    """What the budget of lives buys for this many changes (`qgate plan`, the report)."""
    need = worst_case(changes)
    head = f"{changes} change{'s' if changes != 1 else ''}"
    if need <= max_lives:
        return f"{head}: the budget of {max_lives} lives covers the search's worst case ({need})"
    return (
        f"{head}: showing the smallest failing set minimal may take up to {need} lives, "
        f"the budget is {max_lives}; past it the set found is reported as not minimal"
    )


def _conclusion(att: Attribution) -> str:
    names = " + ".join(att.minimal or [])
    if att.complete and att.minimal:
        return f"the smallest failing set is {names} (without any one of its changes it passes)"
    if att.complete and len(att.changes) == 1:
        return f"the one change, {att.changes[0].name}, fails"
    if att.complete:
        return "no subset fails on its own: only all of the changes together"
    spent = f"not minimal: budget spent after {att.lives} lives"
    need = f"showing minimality may take up to {worst_case(len(att.changes))} lives"
    if att.minimal:
        return f"{spent}; {names} fails, some of its changes may not be needed; {need}"
    return f"{spent}; no smaller failing set found yet; {need}"


def summary_lines(att: Attribution | None) -> list[str]:
    """What attribution found, in a few lines for the console and the headline."""
    if att is None:
        return []
    lines = [
        f"attribution: {_conclusion(att)} ({att.lives} of {att.max_lives} lives, "
        f"{len(att.changes)} changes)"
    ]
    for t in att.trials:
        failed = [v.gate for v in t.verdicts if not v.passed and v.settled]
        why = f": {', '.join(failed[:3])}" if failed else (f": {t.error}" if t.error else "")
        lines.append(f"  {t.verdict} with {' + '.join(t.changes)}{why}")
    if att.not_tried:
        lines.append(f"  next, had the budget allowed: {'; '.join(att.not_tried)}")
    return lines
