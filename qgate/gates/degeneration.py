"""What the degeneration probe adds to the report: each side's long answers summed up.

For each result (`degeneration.alone`, `degeneration.burst`) and side: how many answers were
clean, the failure kinds (loop, empty, http_error), the finish reasons and the median length,
so a candidate whose answers loop, or stop early, or run to the limit where the reference's
ended, is seen beside the paired gate. A pure function of the records (verify re-derives it).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from statistics import median

from qgate.profile import QualitySpec
from qgate.profile.suite_results import degeneration_results
from qgate.quality.records import SuiteRun

__all__ = ["degeneration_lines"]


def _side(run: SuiteRun) -> str:
    clean = sum(i.correct for i in run.items)
    kinds = Counter(i.failure for i in run.items if i.failure is not None)
    failures = ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())) or "none"
    ends = Counter(str(i.finish_reason) for i in run.items)
    finish = ", ".join(f"{k} {n}" for k, n in sorted(ends.items()))
    tokens = [i.output_tokens for i in run.items if i.output_tokens is not None]
    length = f"median {median(tokens):g} tokens" if tokens else "no token counts"
    return (
        f"{run.role} {clean}/{len(run.items)} clean, failures: {failures}; "
        f"finish {finish}; {length}"
    )


def degeneration_lines(spec: QualitySpec, runs: Sequence[SuiteRun]) -> list[str]:
    """One line per degeneration result: both sides' long answers summed up."""
    if spec.degeneration is None:
        return []
    ids = {rid for rid, _ in degeneration_results(spec.degeneration)}
    lines = []
    for ref in (r for r in runs if r.suite in ids and r.role == "reference"):
        cand = next((r for r in runs if r.suite == ref.suite and r.role == "candidate"), None)
        sides = [_side(r) for r in (ref, cand) if r is not None]
        lines.append(f"{ref.suite}: " + "; ".join(sides))
    return lines
