"""`qgate verify` on the reuse passes (quality.reuse): their answers and their pairing.

The pass verdicts themselves (exercised shares from the recorded counters, paired gates,
cold/pass flips) are recomputed with every other quality verdict (recompute.py calls
`evaluate_reuse`). Here: each pass item's answer and correctness re-derived from its stored
response, and its expected answer equal to that of the same item in the side's cold run
(which check_questions pins to the reference's and the math set's).
"""

from __future__ import annotations

from qgate.errors import VerificationFailed
from qgate.profile import Profile
from qgate.report.model import Report
from qgate.report.verify.rederive import Rederived, rederive_correctness

__all__ = ["check_passes"]


def check_passes(report: Report, profile: Profile, done: Rederived) -> int:
    """Re-derive every pass item; return how many there were."""
    runs = [s.run for p in report.quality.passes for s in p.suites if s.run is not None]
    before = done.items
    rederive_correctness(runs, profile, done)
    cold = {(r.suite, r.role, i.id): i for r in report.quality.runs for i in r.items}
    for run in runs:
        for item in run.items:
            was = cold.get((run.suite, run.role, item.id))
            if was is not None and was.expected != item.expected:
                raise VerificationFailed(
                    f"{run.suite} {run.role} pass item {item.id}: expected {item.expected!r} "
                    f"but the cold run expected {was.expected!r}"
                )
    return done.items - before
