"""The attribution section of a report: a failing candidate's changes, the sub-candidates
tried, and the smallest set of changes that still fails.

Each trial keeps its own candidate records, so `qgate verify` recomputes its
verdict against the report's reference records with the gates `run` used, and
re-derives the conclusion from the trials (qgate/report/verify/attribution.py).
"""

from __future__ import annotations

from pydantic import Field

from qgate.core.ddmin import Outcome
from qgate.core.records import Record
from qgate.core.verdict import Verdict
from qgate.profile.changes import Change
from qgate.quality.records import DivergenceRun, SuiteRun

__all__ = ["Attribution", "Change", "Trial", "TrialVerdict", "summary_lines"]

TrialVerdict = Outcome


class Trial(Record):
    """One sub-candidate: the reference with some of the candidate's changes applied."""

    name: str = Field(description="Its name in logs and run folders.")
    changes: list[str] = Field(description="The changes it applies (names of `Change`).")
    verdict: TrialVerdict = Field(description="PASS/FAIL of its gates; ERROR: it did not run.")
    verdicts: list[Verdict] = Field(default_factory=list, description="Its quality verdicts.")
    runs: list[SuiteRun] = Field(default_factory=list, description="Its candidate records.")
    divergence: DivergenceRun | None = Field(default=None, description="Its divergence.")
    error: str | None = Field(default=None, description="Why it could not run (ERROR).")
    seconds: float = Field(default=0.0, description="Wall time of its life.")


class Attribution(Record):
    """Delta debugging over the candidate's changes, against the same reference records."""

    changes: list[Change] = Field(description="Every change of the candidate, as tried.")
    trials: list[Trial] = Field(default_factory=list, description="Sub-candidates, in order.")
    minimal: list[str] | None = Field(
        description="The smallest failing set found (every change alone first, then halving); "
        "None when no trial failed (only the whole candidate does)."
    )
    lives: int = Field(description="Server lives the trials took.")
    max_lives: int = Field(description="The budget of lives.")
    not_tried: list[str] = Field(
        default_factory=list, description="What the budget or the machine left untried."
    )


def summary_lines(att: Attribution | None) -> list[str]:
    """What attribution found, in a few lines for the console and the headline."""
    if att is None:
        return []
    found = (
        f"the smallest failing set is {' + '.join(att.minimal)}"
        if att.minimal
        else "no subset fails on its own: only all of the changes together"
    )
    lines = [
        f"attribution: {found} ({att.lives} of {att.max_lives} lives, {len(att.changes)} changes)"
    ]
    for t in att.trials:
        failed = [v.gate for v in t.verdicts if not v.passed and v.settled]
        why = f": {', '.join(failed[:3])}" if failed else (f": {t.error}" if t.error else "")
        lines.append(f"  {t.verdict} with {' + '.join(t.changes)}{why}")
    if att.not_tried:
        lines.append(f"  not tried (budget): {'; '.join(att.not_tried)}")
    return lines
