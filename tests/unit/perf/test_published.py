"""Published figures set beside measured runs: matching, values, ratios."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from qgate.perf.published import better, compare_published, measured
from qgate.profile.perf import PublishedFigure


@dataclass
class Result:
    scenario: str
    reference: dict[str, Any] | None
    candidate: dict[str, Any] | None


def summary(per_gpu: float, ttft_p90: float) -> dict[str, Any]:
    return {"output_throughput_per_gpu": per_gpu, "ttft_ms": {"p50": 1.0, "p90": ttft_p90}}


RESULTS = [
    Result("agent-4", summary(3.03, 203_000.0), summary(9.05, 10_900.0)),
    Result("chat@c1", summary(40.0, 80.0), summary(50.0, 60.0)),
]
PARAMS = {"agent-4": {"conversations": 4}, "chat@c1": {"concurrency": 1}}


def fig(**kw: Any) -> PublishedFigure:
    base = {
        "source": "InferenceX",
        "hardware": "8xMI325X",
        "metric": "output_throughput_per_gpu",
        "value": 4.14,
    }
    return PublishedFigure.model_validate({**base, **kw})


def test_matched_by_concurrency_with_ratios() -> None:
    (row,) = compare_published([fig(concurrency=4)], RESULTS, PARAMS)
    assert row.scenario == "agent-4" and row.better == "higher" and row.date is None
    assert row.candidate == 9.05 and row.candidate_ratio == pytest.approx(9.05 / 4.14)
    assert row.reference_ratio == pytest.approx(3.03 / 4.14)


def test_matched_by_scenario_then_every_run_then_none() -> None:
    by_name = compare_published(
        [fig(scenario="chat", metric="ttft_ms.p90", value=100)], RESULTS, PARAMS
    )
    assert [(r.scenario, r.candidate, r.better) for r in by_name] == [("chat@c1", 60.0, "lower")]
    every = compare_published([fig(date="2026-10-01")], RESULTS, PARAMS)
    assert [r.scenario for r in every] == ["agent-4", "chat@c1"] and every[0].date == "2026-10-01"
    (none,) = compare_published([fig(concurrency=64)], RESULTS, PARAMS)
    assert none.scenario is None and none.candidate is None and none.candidate_ratio is None


def test_measured_reads_figures_and_statistics() -> None:
    s = summary(2.0, 7.0)
    assert measured(s, "output_throughput_per_gpu") == 2.0
    assert measured(s, "ttft_ms.p90") == 7.0
    assert measured(s, "tpot_ms.p50") is None and measured(None, "ttft_ms.p90") is None
    assert better("e2e_ms.p50") == "lower" and better("request_decode_tok_s.p50") == "higher"
