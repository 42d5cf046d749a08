"""A scenario's stream gates: its error and mismatch rates against `perf.max_error_rate`."""

from __future__ import annotations

from helpers.perf_runs import good

from qgate.gates.scenario import scenario_verdicts
from qgate.perf.records import RequestRecord, ScenarioRun
from qgate.profile import PerfSpec


def spec(rate: float) -> PerfSpec:
    return PerfSpec.model_validate(
        {
            "scenarios": [{"name": "s", "input_tokens": 4, "output_tokens": 3}],
            "max_error_rate": rate,
        }
    )


def run_of(reqs: list[RequestRecord]) -> ScenarioRun:
    return ScenarioRun(
        scenario="s", role="candidate", kind="fixed", gpus=1, duration_ns=100, requests=reqs
    )


def test_verdicts_fail_above_max_error_rate() -> None:
    reqs = [good(index=i) for i in range(9)] + [good(index=9, output_tokens=1)]
    v = {x.gate: x for x in scenario_verdicts(spec(0.0), run_of(reqs))}
    assert v["perf.s.errors"].passed
    assert not v["perf.s.mismatches"].passed
    assert v["perf.s.mismatches"].observed == 0.1
    assert all(x.passed for x in scenario_verdicts(spec(0.1), run_of(reqs)))


def test_verdict_fails_with_no_requests() -> None:
    assert not any(v.passed for v in scenario_verdicts(spec(0.5), run_of([])))


def test_error_rate_counts_errored_requests() -> None:
    reqs = [
        good(index=0),
        good(index=1, error="HTTP 500: x", token_times_ns=[], first_token_ns=None),
    ]
    v = {x.gate: x for x in scenario_verdicts(spec(0.25), run_of(reqs))}
    assert not v["perf.s.errors"].passed and v["perf.s.errors"].observed == 0.5
