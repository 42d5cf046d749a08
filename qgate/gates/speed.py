"""Perf gates: pure functions from `perf.gates` and the stored comparisons to verdicts.

`qgate run` and `qgate verify` call the same `evaluate_perf_gates` over the
candidate/reference comparisons (qgate.perf.compare), which verify has
already recomputed from the request records; so a perf gate's verdict follows
from the raw records as a quality gate's does.

The rule is the conservative one: the candidate must show it meets the limit.
A `min_ratio` gate passes only when the ratio's bootstrap 95% interval lies at
or above the limit (lower bound >= min_ratio); a `max_ratio` gate only when it
lies at or below it (upper bound <= max_ratio). A point ratio that meets the
limit while its interval straddles it fails, with a reason that says so
(measure more requests). A ratio without an interval fails too.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from qgate.core.verdict import Verdict
from qgate.gates.judgement import failed_answers
from qgate.profile import PerfSpec
from qgate.profile.perf import PerfGate, matches

# Interval bounds are ratios of floats; this absorbs rounding so a bound
# exactly at the limit passes.
_EPS = 1e-12

Comparisons = Iterable[tuple[str, Sequence[Mapping[str, Any]]]]


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def judge(gate: PerfGate, scenario: str, row: Mapping[str, Any] | None) -> Verdict:
    """One gate on one scenario's comparison row (None when the scenario has no such row)."""
    kind = "min_ratio" if gate.min_ratio is not None else "max_ratio"
    limit = gate.min_ratio if gate.min_ratio is not None else gate.max_ratio
    assert limit is not None
    name = f"perf.{scenario}.{gate.metric}.{kind}"
    suite = f"perf.{scenario}"
    ratio = None if row is None else row.get("ratio")
    lo = None if row is None else row.get("ci_low")
    hi = None if row is None else row.get("ci_high")
    bound = lo if kind == "min_ratio" else hi
    sign = ">=" if kind == "min_ratio" else "<="

    def unjudged(reason: str) -> Verdict:
        return Verdict(
            gate=name, suite=suite, observed=None, limit=limit, passed=False, reason=reason
        )

    if row is None or ratio is None:
        return unjudged(f"{gate.metric}: no ratio (no completed requests on one side)")
    shown = f"{gate.metric} x{ratio:.3f} [95% CI {_fmt(lo)}, {_fmt(hi)}]"
    if bound is None:
        return unjudged(f"{shown}: no interval to judge {sign} x{limit:g} on")
    if kind == "min_ratio":
        passed = bound >= limit - _EPS
        which = "lower"
    else:
        passed = bound <= limit + _EPS
        which = "upper"
    if passed:
        reason = f"{shown}: {which} bound {bound:.3f} {sign} x{limit:g}"
    else:
        point_ok = ratio >= limit if kind == "min_ratio" else ratio <= limit
        why = (
            " (the point meets it, the interval does not: measure more requests)"
            if point_ok
            else ""
        )
        reason = f"{shown}: {which} bound {bound:.3f} not {sign} x{limit:g}{why}"
    return Verdict(
        gate=name, suite=suite, observed=bound, limit=limit, passed=passed, reason=reason
    )


def evaluate_perf_gates(
    spec: PerfSpec | None, results: Comparisons, withheld: Collection[str] | Mapping[str, str] = ()
) -> list[Verdict]:
    """Every gate on every scenario it selects, gate by gate in profile order.

    `results` is (scenario run name, its comparison rows as JSON mappings) in
    report order; a gate that selects no compared scenario fails (nothing
    showed the candidate meets it). A `withheld` scenario (its graded probes
    failed; a mapping names what failed: 'probes' or 'turns', a multi-turn scenario's
    graded sessions) has ratios from answers that were wrong: a gate on it fails without
    reading them.
    """
    if spec is None or not spec.gates:
        return []
    results = list(results)
    out: list[Verdict] = []
    for gate in spec.gates:
        chosen = [(name, rows) for name, rows in results if matches(gate.scenario, name)]
        for name, rows in chosen:
            row = next((r for r in rows if r.get("metric") == gate.metric), None)
            verdict = judge(gate, name, row)
            if name in withheld:
                what = withheld.get(name) if isinstance(withheld, Mapping) else "probes"
                verdict = verdict.model_copy(
                    update={
                        "observed": None,
                        "passed": False,
                        "reason": f"{gate.metric}: ratio withheld, the scenario's graded "
                        f"{what} failed (its answers under this load were wrong)",
                    }
                )
            out.append(verdict)
        if not chosen:
            where = gate.scenario or "any scenario"
            limit = gate.min_ratio if gate.min_ratio is not None else gate.max_ratio
            kind = "min_ratio" if gate.min_ratio is not None else "max_ratio"
            out.append(
                Verdict(
                    gate=f"perf.{where}.{gate.metric}.{kind}",
                    suite=f"perf.{where}",
                    observed=None,
                    limit=limit,
                    passed=False,
                    reason=f"{gate.metric}: no comparison with the reference for {where}",
                )
            )
    return out


def report_gates(spec: PerfSpec | None, status: str, results: Iterable[Any]) -> list[Verdict]:
    """`evaluate_perf_gates` over report ScenarioResults (what build_report and verify call).

    None when the perf stage did not run (status 'skipped: ...'): there is
    nothing to judge, and the report says why perf was skipped.
    """
    if status.startswith("skipped"):
        return []
    results = list(results)
    failed = {r.scenario: failed_answers(r.verdicts, r.scenario) for r in results}
    withheld = {name: what for name, what in failed.items() if what is not None}
    return evaluate_perf_gates(spec, [(r.scenario, r.comparisons) for r in results], withheld)
