"""A perf scenario's stream gates: its error rate and stream-mismatch rate against
`perf.max_error_rate`, over the candidate's measured requests (the checks of each stream are
qgate/perf/checks.py `check_request`, recomputed here so a report cannot claim clean streams).
"""

from __future__ import annotations

from qgate.core.verdict import Verdict
from qgate.perf.checks import check_request
from qgate.perf.metrics import workload_requests
from qgate.perf.records import ScenarioRun
from qgate.profile import PerfSpec

__all__ = ["scenario_verdicts"]


def scenario_verdicts(spec: PerfSpec, run: ScenarioRun) -> list[Verdict]:
    """Fail a scenario whose error rate or stream-mismatch rate exceeds perf.max_error_rate."""
    reqs = workload_requests(run)
    n = len(reqs)
    errors = sum(1 for r in reqs if r.error is not None)
    # Recomputed, not read from the record, so a report cannot claim clean streams.
    mismatches = sum(1 for r in reqs if check_request(r))
    out: list[Verdict] = []
    for what, count in (("errors", errors), ("mismatches", mismatches)):
        rate = count / n if n else None
        passed = rate is not None and rate <= spec.max_error_rate
        if n == 0:
            reason = "no measured requests"
        else:
            sign = "<=" if passed else ">"
            reason = (
                f"{count}/{n} requests with {what} ({rate:.1%}) {sign} "
                f"allowed {spec.max_error_rate:.1%}"
            )
        out.append(
            Verdict(
                gate=f"perf.{run.scenario}.{what}",
                suite=f"perf.{run.scenario}",
                observed=rate,
                limit=spec.max_error_rate,
                passed=passed,
                reason=reason,
            )
        )
    return out
