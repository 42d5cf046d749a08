"""Exact curtailment: is a suite's verdict decided before all of its items have run?

A suite that may stop early (`quality.stop`) runs its items in blocks. After
each block the items fall in four groups: answered by both runtimes (a known
pair), by the reference only, by the candidate only, or by neither. Every gate
of an exact-answer suite is monotone in the candidate's favour (fewer lost,
more gained, more correct never turns a pass into a fail), so of all the ways
the unknown outcomes can turn out, two bound the rest:

- the worst: every open item ends lost where it still can (reference right or
  unknown, candidate wrong or unknown), else both wrong;
- the best: every open item ends gained where it still can, else both right.

A gate is settled when it gives the same verdict on both; then no outcome of
the remaining items changes it, and stopping changes nothing but the work.
Pure functions of the records: `qgate verify` re-derives every stop.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from qgate.core.verdict import Verdict
from qgate.profile import QualitySpec
from qgate.quality.records import ItemRecord, SuiteRun
from qgate.quality.stats import FlipCounts, count_flips

__all__ = [
    "Completions",
    "bounds",
    "decisive",
    "halted_at_verdict",
    "stop_problems",
    "stopped_at_verdict",
]


@dataclass(frozen=True)
class Completions:
    """The paired items known so far, and the two extreme completions of the planned items."""

    known: FlipCounts
    worst: FlipCounts
    best: FlipCounts
    planned: int

    @property
    def open_items(self) -> int:
        return self.planned - self.known.n


def bounds(
    reference: Sequence[ItemRecord], candidate: Sequence[ItemRecord], planned: int
) -> Completions:
    """The known pairs and the worst and best completions of `planned` items per side.

    Items are matched by id; an id answered by one side only counts with that
    side's outcome fixed; `planned` minus every id seen counts as open on both.
    """
    ref = {i.id: i.correct for i in reference}
    cand = {i.id: i.correct for i in candidate}
    known = count_flips((ok, cand[i]) for i, ok in ref.items() if i in cand)
    ref_only = [ok for i, ok in ref.items() if i not in cand]
    cand_only = [ok for i, ok in cand.items() if i not in ref]
    unknown = max(0, planned - len(ref.keys() | cand.keys()))
    r_right, r_wrong = sum(ref_only), len(ref_only) - sum(ref_only)
    c_right, c_wrong = sum(cand_only), len(cand_only) - sum(cand_only)
    worst = FlipCounts(
        both_correct=known.both_correct + c_right,
        lost=known.lost + r_right + c_wrong + unknown,
        gained=known.gained,
        both_wrong=known.both_wrong + r_wrong,
    )
    best = FlipCounts(
        both_correct=known.both_correct + r_right,
        lost=known.lost,
        gained=known.gained + r_wrong + c_right + unknown,
        both_wrong=known.both_wrong + c_wrong,
    )
    return Completions(known=known, worst=worst, best=best, planned=planned)


def decisive(verdicts: Sequence[Verdict], not_run: Collection[str] = ()) -> Verdict | None:
    """The first gate that failed on records that settle it: the run's FAIL is decided."""
    return next(
        (
            v
            for v in verdicts
            if not v.passed and not v.inconclusive and v.settled and v.gate not in not_run
        ),
        None,
    )


def halted_at_verdict(spec: QualitySpec, verdicts: Sequence[Verdict]) -> bool:
    """Whether a side's quality stage may have halted before its end (`stop: verdict` and a
    settled FAIL): a halted side runs no reuse passes, and a halted reference no noise floor.
    The verdict is FAIL whatever else its records held."""
    return spec.stop == "verdict" and decisive(verdicts) is not None


def stopped_at_verdict(
    spec: QualitySpec, verdicts: list[Verdict], not_run: Collection[str]
) -> list[Verdict]:
    """With `stop: verdict`, gates of suites that never ran once the FAIL was settled.

    They are not settled (and not passed); without a decisive failure a missing
    run is the failure it always was.
    """
    first = decisive(verdicts, not_run)
    if first is None:
        return verdicts
    why = f"not run: the quality stage stopped once the verdict was FAIL ({first.gate} settled)"
    return [
        v.model_copy(update={"settled": False, "reason": f"{v.suite}: {why}"})
        if v.gate in not_run
        else v
        for v in verdicts
    ]


def _overfull(runs: Sequence[SuiteRun]) -> list[str]:
    """Suites whose two sides together saw more distinct items than were planned per side.

    Both sides ask the same planned items, so every id either side answered is
    one of them; a side that stopped early only lacks some. Where the union is
    larger, the records cannot come from the plan (and `bounds` would count
    fewer open items than there are).
    """
    sides: dict[str, dict[str, SuiteRun]] = {}
    for run in runs:
        sides.setdefault(run.suite, {})[run.role] = run
    problems = []
    for suite, by_role in sides.items():
        ref, cand = by_role.get("reference"), by_role.get("candidate")
        planned = None if ref is None or cand is None else ref.planned or cand.planned
        if ref is None or cand is None or planned is None:
            continue
        seen = {i.id for i in ref.items} | {i.id for i in cand.items}
        if len(seen) > planned:
            problems.append(
                f"{suite}: the reference's {len(ref.items)} and the candidate's "
                f"{len(cand.items)} items are {len(seen)} distinct items, more than the "
                f"{planned} planned per side"
            )
    return problems


def stop_problems(
    spec: QualitySpec, runs: Sequence[SuiteRun], verdicts: Sequence[Verdict]
) -> list[str]:
    """Stops the records do not allow (verify rejects the report for any of them).

    A run may end before its planned items only when the profile stops early, and
    only once every gate of its suite is settled or (`stop: verdict`) some gate's
    failure is; the two sides' items together never outnumber the planned ones.
    """
    problems = _overfull(runs)
    for run in runs:
        if run.planned is None and run.stopped is None:
            continue
        where = f"{run.suite} ({run.role})"
        if spec.stop == "off" and (run.partial or run.stopped):
            problems.append(f"{where} records an early stop but the profile's quality.stop is off")
        elif run.partial and run.stopped is None:
            problems.append(f"{where} has {len(run.items)} of {run.planned} items and no stop")
        elif run.partial:
            open_gates = [v.gate for v in verdicts if v.suite == run.suite and not v.settled]
            if open_gates and not (spec.stop == "verdict" and decisive(verdicts)):
                problems.append(
                    f"{where} stopped at {len(run.items)} of {run.planned} items, but its "
                    f"records do not settle {open_gates[0]}"
                )
    return problems
