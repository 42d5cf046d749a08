"""The quality evidence held together (issue 54 item 2, a first step): both sides of a suite
hold the same items.

The gates pair a suite's items by id, so an insider who deleted the items a candidate lost from
its run alone, and derived the verdicts again, got a report whose pairs simply lacked them. Each
side of every suite must hold the same item ids, except where a side says it stopped early
(`quality.stop`: its `planned` count and a reason), which the settle check holds to the plan. The
context ladder's buckets are held to the profile's own count (verify/ladder_check.py), and
every suite's items to the ids the profile plans (verify/item_plan.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from qgate.errors import VerificationFailed
from qgate.quality.records import SuiteRun

__all__ = ["check_paired_items"]


def _ids(run: SuiteRun) -> set[str]:
    ids = [i.id for i in run.items]
    if len(set(ids)) != len(ids):
        raise VerificationFailed(f"quality.runs {run.suite} ({run.role}): an item stored twice")
    return set(ids)


def _stopped(run: SuiteRun) -> bool:
    return run.partial and bool(run.stopped)


def check_paired_items(runs: Sequence[SuiteRun]) -> str | None:
    """Raise VerificationFailed when a suite's two sides hold different items (None: no suite
    with both sides)."""
    by = {(r.suite, r.role): r for r in runs}
    paired = 0
    for (suite, role), cand in by.items():
        ref = by.get((suite, "reference"))
        if role != "candidate" or ref is None:
            continue
        paired += 1
        mine, theirs = _ids(cand), _ids(ref)
        if mine == theirs or _stopped(cand) or _stopped(ref):
            continue  # a side that stopped early: the settle check holds it to the plan
        missing = sorted(theirs - mine) or sorted(mine - theirs)
        short = "candidate" if theirs - mine else "reference"
        raise VerificationFailed(
            f"quality.runs {suite}: item {missing[0]} is missing from the {short}'s records "
            f"(reference {len(theirs)}, candidate {len(mine)} items): both sides answer the same "
            "items, and only a run that says it stopped early may hold fewer"
        )
    return f"{paired} suite(s): both sides hold the same items" if paired else None
