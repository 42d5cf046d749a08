"""Whether the two runs of a suite pair: the same items, once each, as planned.

A problem here fails every gate of the suite (qgate/gates/suite.py adds a failed
`<suite>.pairing` verdict).
"""

from __future__ import annotations

from collections.abc import Sequence

from qgate.quality.records import SuiteRun

__all__ = ["few", "pairing_problem"]


def pairing_problem(ref: SuiteRun, cand: SuiteRun) -> str | None:
    """Why `ref` and `cand` do not pair item for item (None: they do)."""
    for run in (ref, cand):
        ids = [i.id for i in run.items]
        if len(set(ids)) != len(ids):
            dupes = sorted({i for i in ids if ids.count(i) > 1})
            return f"duplicate item ids in the {run.role} run: {few(dupes)}"
    planned = ref.planned or cand.planned  # recorded by a run that stopped early
    if ref.planned and cand.planned and ref.planned != cand.planned:
        return f"planned items differ: reference {ref.planned}, candidate {cand.planned}"
    if planned is not None:
        for run in (ref, cand):
            if len(run.items) > planned or (not run.partial and len(run.items) != planned):
                return f"the {run.role} run has {len(run.items)} items, {planned} planned"
    ref_ids = {i.id for i in ref.items}
    cand_ids = {i.id for i in cand.items}
    # a run that stopped early (quality.stop) lacks the other side's later items by design
    missing = [] if cand.partial else sorted(ref_ids - cand_ids)
    extra = [] if ref.partial else sorted(cand_ids - ref_ids)
    parts = []
    if missing:
        parts.append(f"{len(missing)} reference items missing from the candidate ({few(missing)})")
    if extra:
        parts.append(f"{len(extra)} candidate items not in the reference ({few(extra)})")
    if not ref_ids and not ref.partial:
        parts.append("no items")
    return "; ".join(parts) or None


def few(ids: Sequence[str], n: int = 3) -> str:
    """The first `n` ids, with an ellipsis when there are more."""
    return ", ".join(ids[:n]) + (", ..." if len(ids) > n else "")
