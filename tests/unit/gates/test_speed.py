"""Perf gates: the conservative interval rule, scenario selection, failure reasons."""

from __future__ import annotations

from typing import Any

import pytest

from qgate.gates.speed import evaluate_perf_gates, report_gates
from qgate.profile import PerfSpec

SCENARIOS = [
    {"name": "chat", "input_tokens": 64, "output_tokens": 8, "concurrency": [1, 16]},
    {"name": "long", "input_tokens": 512, "output_tokens": 8},
]


def spec(*gates: dict[str, Any]) -> PerfSpec:
    return PerfSpec.model_validate({"scenarios": SCENARIOS, "gates": list(gates)})


def row(metric: str, ratio: float | None, lo: float | None, hi: float | None) -> dict[str, Any]:
    return {"metric": metric, "ratio": ratio, "ci_low": lo, "ci_high": hi}


@pytest.mark.parametrize(
    ("lo", "hi", "passed"),
    [(1.25, 1.4, True), (1.2, 1.4, True), (1.15, 1.4, False), (0.9, 1.0, False)],
)
def test_min_ratio_is_judged_on_the_lower_bound(lo: float, hi: float, passed: bool) -> None:
    s = spec({"metric": "output_throughput", "scenario": "long", "min_ratio": 1.2})
    (v,) = evaluate_perf_gates(s, [("long", [row("output_throughput", 1.3, lo, hi)])])
    assert v.passed is passed
    assert v.observed == lo and v.limit == 1.2
    assert v.gate == "perf.long.output_throughput.min_ratio" and v.suite == "perf.long"


def test_max_ratio_is_judged_on_the_upper_bound() -> None:
    s = spec({"metric": "ttft_ms.p99", "scenario": "long", "max_ratio": 1.1})
    ok, bad = (
        evaluate_perf_gates(s, [("long", [row("ttft_ms.p99", 1.0, 0.9, hi)])])[0]
        for hi in (1.1, 1.12)
    )
    assert ok.passed and ok.observed == 1.1
    assert not bad.passed and "upper bound 1.120 not <= x1.1" in bad.reason
    # the point meets the limit, the interval does not: the reason says what to do
    assert "measure more requests" in bad.reason


def test_missing_interval_or_ratio_fails() -> None:
    s = spec({"metric": "output_throughput", "scenario": "long", "min_ratio": 1.0})
    (no_ci,) = evaluate_perf_gates(s, [("long", [row("output_throughput", 2.0, None, None)])])
    assert not no_ci.passed and "no interval" in no_ci.reason and no_ci.observed is None
    (no_ratio,) = evaluate_perf_gates(s, [("long", [row("output_throughput", None, None, None)])])
    assert not no_ratio.passed and "no ratio" in no_ratio.reason
    (no_row,) = evaluate_perf_gates(s, [("long", [])])
    assert not no_row.passed


def test_scenario_selects_every_sweep_level_and_none_selects_all() -> None:
    results = [
        ("chat@c1", [row("tpot_ms.p50", 1.0, 0.95, 1.05)]),
        ("chat@c16", [row("tpot_ms.p50", 1.3, 1.2, 1.4)]),
        ("long", [row("tpot_ms.p50", 0.8, 0.7, 0.9)]),
    ]
    by_base = evaluate_perf_gates(
        spec({"metric": "tpot_ms.p50", "scenario": "chat", "max_ratio": 1.1}), results
    )
    assert [(v.gate, v.passed) for v in by_base] == [
        ("perf.chat@c1.tpot_ms.p50.max_ratio", True),
        ("perf.chat@c16.tpot_ms.p50.max_ratio", False),
    ]
    one = evaluate_perf_gates(
        spec({"metric": "tpot_ms.p50", "scenario": "chat@c16", "max_ratio": 1.5}), results
    )
    assert [v.gate for v in one] == ["perf.chat@c16.tpot_ms.p50.max_ratio"] and one[0].passed
    every = evaluate_perf_gates(spec({"metric": "tpot_ms.p50", "max_ratio": 1.1}), results)
    assert [v.passed for v in every] == [True, False, True]


def test_gate_that_selects_no_compared_scenario_fails() -> None:
    s = spec({"metric": "tpot_ms.p50", "scenario": "long", "max_ratio": 1.1})
    (v,) = evaluate_perf_gates(s, [("chat@c1", [row("tpot_ms.p50", 1.0, 0.9, 1.0)])])
    assert not v.passed and "no comparison" in v.reason


def test_no_gates_when_perf_was_skipped_or_not_configured() -> None:
    s = spec({"metric": "tpot_ms.p50", "max_ratio": 1.1})
    assert report_gates(s, "skipped: gates failed", []) == []
    assert report_gates(None, "ran", []) == []
    assert evaluate_perf_gates(spec(), [("long", [row("tpot_ms.p50", 9.0, 9.0, 9.0)])]) == []


def test_selector_picks_one_length_of_an_input_matrix() -> None:
    s = PerfSpec.model_validate(
        {
            "scenarios": [
                {
                    "name": "m",
                    "input_tokens": [512, 8192],
                    "output_tokens": 8,
                    "concurrency": [1, 4],
                }
            ],
            "gates": [{"metric": "ttft_ms.p90", "scenario": "m@in8192", "max_ratio": 1.1}],
        }
    )
    results = [
        (n, [row("ttft_ms.p90", 1.0, 0.9, 1.05)])
        for n in ("m@in512@c1", "m@in512@c4", "m@in8192@c1", "m@in8192@c4")
    ]
    got = evaluate_perf_gates(s, results)
    assert [v.suite for v in got] == ["perf.m@in8192@c1", "perf.m@in8192@c4"]
    with pytest.raises(ValueError, match="unknown scenario 'm@in1024'"):
        PerfSpec.model_validate(
            {
                "scenarios": [{"name": "m", "input_tokens": [512], "output_tokens": 8}],
                "gates": [{"metric": "ttft_ms.p90", "scenario": "m@in1024", "max_ratio": 1.1}],
            }
        )
