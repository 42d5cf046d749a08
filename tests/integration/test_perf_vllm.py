"""The perf stage against real vLLM on the CPU: exact lengths, clean streams, prefix reuse."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from qgate.gates.scenario import scenario_verdicts
from qgate.perf.compare import compare
from qgate.perf.counters import deltas
from qgate.perf.metrics import summarize
from qgate.perf.records import ScenarioRun
from qgate.perf.runner import run_scenarios
from qgate.profile import PerfSpec
from qgate.runtime.vllm_metrics import VLLM_METRICS

pytestmark = pytest.mark.integration

SPEC = PerfSpec.model_validate(
    {
        "scenarios": [
            {
                "name": "tiny",
                "input_tokens": 128,
                "output_tokens": 16,
                "concurrency": 2,
                "warmup": 1,
                "requests": 3,
            },
            {
                "name": "agent",
                "kind": "multi_turn",
                "conversations": 2,
                "turns": 2,
                "shared_prefix_tokens": 256,
                "turn_input_tokens": 32,
                "output_tokens": 8,
                "warmup": 0,
            },
        ],
        "probe_share": 0.5,
        "slo": {"ttft_ms": 600000},
    }
)


@pytest.fixture(scope="module")
def runs(reference_server: Any) -> list[ScenarioRun]:
    probes: list[Any] = [("add-1", [{"role": "user", "content": "What is 2 + 3?"}], "5")]
    return asyncio.run(
        run_scenarios(
            reference_server.base_url,
            reference_server.served_model,
            SPEC,
            "reference",
            probes=probes,
            probe_params={"max_tokens": 16},
        )
    )


def test_fixed_lengths_are_exact_and_streams_clean(runs: list[ScenarioRun]) -> None:
    tiny = runs[0]
    assert tiny.scenario == "tiny"
    work = [r for r in tiny.requests if r.probe_id is None]
    assert len(work) == 3
    assert all(r.error is None and r.check_failures == [] for r in work)
    assert {r.prompt_tokens for r in work} == {128}
    assert {r.output_tokens for r in work} == {16}
    assert all(r.chunk_tokens is not None and sum(r.chunk_tokens) == 16 for r in work)
    m = summarize(tiny, SPEC.slo)
    assert m.completed == 3 and m.peak_concurrency == 2
    assert 0 < m.ttft_ms.p50 < m.e2e_ms.p50
    assert m.tpot_ms.p50 > 0 and m.itl_ms.count >= 3
    assert m.output_throughput > 0 and m.request_goodput == pytest.approx(m.request_throughput)
    assert all(v.passed for v in scenario_verdicts(SPEC, tiny))
    # The server's own counters saw exactly the measured output (warmup excluded).
    d = deltas(tiny.counters_before, tiny.counters_after)
    probe_out = sum(r.output_tokens or 0 for r in tiny.requests if r.probe_id is not None)
    assert d[VLLM_METRICS.generation_tokens] == 3 * 16 + probe_out


def test_multi_turn_reuses_the_prefix_cache(runs: list[ScenarioRun]) -> None:
    agent = runs[1]
    work = [r for r in agent.requests if r.probe_id is None]
    assert sorted((r.conversation, r.turn) for r in work) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    first = {r.conversation: r.prompt_tokens for r in work if r.turn == 0}
    second = {r.conversation: r.prompt_tokens for r in work if r.turn == 1}
    assert all(second[c] > first[c] + 8 for c in first)  # history grew by the reply + turn
    m = summarize(agent, SPEC.slo)
    assert m.completed == 4 and m.failed == 0
    assert deltas(agent.counters_before, agent.counters_after)[VLLM_METRICS.prefix_queries] > 0
    assert m.prefix_cache_hit_rate is not None and m.prefix_cache_hit_rate > 0


def test_probes_ran_under_load(runs: list[ScenarioRun]) -> None:
    probes = [r for run in runs for r in run.requests if r.probe_id is not None]
    assert probes and all(r.error is None and r.text for r in probes)
    assert all(r.probe_expected == "5" for r in probes)


def test_a_run_compared_with_itself_has_ratio_one(runs: list[ScenarioRun]) -> None:
    for c in compare(runs[0], runs[0], resamples=200):
        if c.ratio is not None:
            assert c.ratio == pytest.approx(1.0)
