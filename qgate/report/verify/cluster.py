"""The cluster's speed design re-derived from the recorded lives (issue 43, insider edits).

`provenance.cluster` records where each life ran (node, round) and the speed design the run
named ("swapped nodes in alternating rounds", "same node", ...). The design follows from the
lives (qgate/core/speed_design.py), so verify derives it again and rejects another; and the
lives of the later perf rounds must be lives of rounds the perf records hold, every side of
each held round with its life, so a life invented for a round that never ran (or a round's
life left out) cannot make the design read as swapped. Which node a life ran on stays signed
only (listed under "signed but not re-derived").
"""

from __future__ import annotations

from qgate.core.provenance import ClusterProvenance
from qgate.core.speed_design import speed_design
from qgate.errors import VerificationFailed
from qgate.report.model import Report
from qgate.report.verify.compare_values import Diff

__all__ = ["check_cluster"]


def check_cluster(report: Report) -> str:
    """Raise VerificationFailed when the recorded lives do not give the stored design or hold
    rounds the perf records do not; a line for `checked` ('' without a cluster)."""
    cluster = report.provenance.cluster if report.provenance is not None else None
    if not isinstance(cluster, ClusterProvenance):
        return ""  # none, or a plug-in executor's record: signed, not re-derived
    held = sorted({r.round for r in report.perf.runs})
    sides = {r.role for r in report.perf.runs}
    for i, life in enumerate(cluster.lives):
        if life.round > 0 and life.round not in held:
            raise VerificationFailed(
                f"provenance.cluster.lives[{i}].round: round {life.round + 1} stored "
                f"({life.side}), the perf records hold round(s) {[k + 1 for k in held]}"
            )
    later = {(life.round, life.side) for life in cluster.lives if life.round > 0}
    later_sides = {side for _, side in later}
    for k in (k for k in held if k > 0):
        # each side of a later round ran in a fresh life of that round (the reference by its
        # role name; a candidate by its name, which the records do not hold: any other side)
        if "reference" in sides and (k, "reference") not in later:
            raise VerificationFailed(
                f"provenance.cluster.lives: no reference life of perf round {k + 1}, which the "
                "perf records hold"
            )
        if "candidate" in sides and not any(
            (k, s) in later for s in later_sides if s != "reference"
        ):
            raise VerificationFailed(
                f"provenance.cluster.lives: no candidate life of perf round {k + 1}, which the "
                "perf records hold"
            )
    derived = speed_design(cluster.lives)
    if cluster.speed_design != derived:
        diff = Diff("provenance.cluster.speed_design", cluster.speed_design, derived)
        raise VerificationFailed(f"{diff} from the recorded lives")
    return f"cluster speed design re-derived from {len(cluster.lives)} recorded lives"
