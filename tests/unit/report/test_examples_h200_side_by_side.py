"""The H200 runs side by side on one device (examples/h200/side-by-side/) verify here, no GPU.

Two runs of precision_profiles/smollm2-h200-fp8.yaml on the lent H200, 2026-12-01 (qgate add1877):
both sides' gpu_memory_utilization 0.3 share GPU 0, the candidate started once the reference
was ready, quality at once, perf in three interleaved blocks (the idle side paused). Each
report records both starts with their time to ready. The key is
examples/h200/signing-key-2026-12-01.pub.pem.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers.examples import predicate_of, verify_example

ROOT = Path(__file__).resolve().parents[3] / "examples" / "h200"
RUNS = ROOT / "side-by-side"
PUBKEY = ROOT / "signing-key-2026-12-01.pub.pem"
NAMES = ["run1", "run2"]


def _predicate(name: str) -> dict[str, Any]:
    return predicate_of(RUNS / name / "report.intoto.jsonl")


@pytest.mark.parametrize("name", NAMES)
def test_each_run_verifies_against_its_profile(name: str) -> None:
    folder = RUNS / name
    code, output = verify_example(folder, PUBKEY)
    assert code == 0, output
    assert "VERIFIED" in output
    assert "verdict PASS" in output


@pytest.mark.parametrize("name", NAMES)
def test_planned_together_on_one_device(name: str) -> None:
    plan = _predicate(name)["plan"]
    assert plan["mode"] == "together"
    assert [life["side"] for life in plan["lives"]] == ["reference", "candidate"]
    assert all("H200 0, 30% of its memory" in life["placement"] for life in plan["lives"])
    assert "started once the reference is ready" in plan["lives"][1]["placement"]


@pytest.mark.parametrize("name", NAMES)
def test_two_starts_each_with_its_time_to_ready(name: str) -> None:
    report = _predicate(name)
    starts = report["starts"]
    assert [s["side"] for s in starts] == ["reference", "candidate"]
    assert all(s["purpose"] == "life" and s["ready_s"] > 0 for s in starts)
    assert all("weights_s" in s["startup"] for s in starts)
    # one start-up stage for both, then quality at once, then interleaved perf
    assert {"startup", "quality", "perf"} <= set(report["stage_timings"])
    assert "candidate" not in report["stage_timings"]  # the in-sequence stage names


def _ratios(name: str) -> dict[tuple[str, str], tuple[float, float, float]]:
    out = {}
    for result in _predicate(name)["perf"]["results"]:
        for c in result["comparisons"]:
            if c["ratio"] is not None and c["ci_low"] is not None:
                out[(result["scenario"], c["metric"])] = (c["ratio"], c["ci_low"], c["ci_high"])
    return out


@pytest.mark.parametrize("name", NAMES)
def test_three_interleaved_blocks_per_scenario(name: str) -> None:
    for result in _predicate(name)["perf"]["results"]:
        for c in result["comparisons"]:
            if c["metric"] == "output_throughput":
                assert c["blocks"] == 3 and len(c["block_ratios"]) == 3


# TPOT p50 and TTFT p50 at c=4 and for agent-2 agree both ways.
@pytest.mark.parametrize(
    "metric",
    [
        ("fixed-256x32@c4", "tpot_ms.p50"),
        ("fixed-256x32@c4", "ttft_ms.p50"),
        ("agent-2", "tpot_ms.p50"),
        ("agent-2", "ttft_ms.p50"),
    ],
)
def test_two_runs_lie_inside_each_others_intervals(metric: tuple[str, str]) -> None:
    first, second = _ratios("run1")[metric], _ratios("run2")[metric]
    assert first[1] <= second[0] <= first[2], (first, second)
    assert second[1] <= first[0] <= second[2], (first, second)


# Not every figure holds (perf/gpu/README.md section 4): output tok/s at c=1 is x0.84 [0.75, 0.94]
# in run 1 and x0.72 [0.43, 1.21] in run 2, agent-2 x0.77 [0.69, 0.86] and x0.90 [0.58, 1.40],
# c=4 x0.75 [0.69, 0.83] and x0.98 [0.61, 1.58], TPOT p50 at c=1 x1.22 [0.98, 1.42] and
# x1.49 [0.70, 3.39]: run 1's point lies inside run 2's wide interval, run 2's outside run 1's.
# The eager 135M model is host-bound: one side's TPOT p50 moves 13 -> 25 ms from block to block.
@pytest.mark.parametrize(
    "metric",
    [
        ("fixed-256x32@c1", "output_throughput"),
        ("fixed-256x32@c4", "output_throughput"),
        ("agent-2", "output_throughput"),
        ("fixed-256x32@c1", "tpot_ms.p50"),
        ("fixed-256x32@c1", "ttft_ms.p50"),
    ],
)
def test_the_output_rates_that_do_not_agree(metric: tuple[str, str]) -> None:
    first, second = _ratios("run1")[metric], _ratios("run2")[metric]
    assert second[1] <= first[0] <= second[2]  # run 1's point inside run 2's wide interval
    assert not first[1] <= second[0] <= first[2]  # run 2's point outside run 1's
