"""Graded sessions inside a multi-turn scenario, against the mock server (its `--recall N`
answers the sessions from the last N user messages): every turn recorded and graded, the
figures untouched, a candidate that forgets the earlier turns FAILed with accuracy by turn."""

from __future__ import annotations

import asyncio
from typing import Any

from helpers.mock_server import load_mock

from qgate.gates.judge import perf_results
from qgate.gates.turns import turn_accuracy
from qgate.perf.metrics import summarize
from qgate.perf.records import ScenarioRun, is_workload
from qgate.perf.runner import run_scenarios
from qgate.profile import PerfSpec


def agent(**graded: Any) -> PerfSpec:
    scenario = {
        "name": "agent",
        "kind": "multi_turn",
        "conversations": 2,
        "turns": 3,
        "shared_prefix_tokens": 32,
        "turn_input_tokens": 8,
        "output_tokens": 4,
        "warmup": 0,
        "graded": {"turns": 8, **graded},
    }
    return PerfSpec.model_validate({"scenarios": [scenario], "probe_share": 0.0})


def measure(recall: int, spec: PerfSpec, role: str) -> ScenarioRun:
    with load_mock().running(ttft_ms=5.0, itl_ms=1.0, recall=recall) as url:
        (run,) = asyncio.run(run_scenarios(url, "mock", spec, role))  # type: ignore[arg-type]
    return run


def test_graded_sessions_ride_the_scenario_and_stay_out_of_its_figures() -> None:
    spec = agent(sessions=3)
    run = measure(0, spec, "reference")
    turns = [r for r in run.requests if r.graded_turn is not None]
    assert len(turns) == 3 * 8 and run.params["graded_sessions"] == 3
    assert sorted({r.graded_turn for r in turns}) == sorted(
        f"s{k}.t{t}" for k in range(3) for t in range(8)
    )
    graded = [r for r in turns if r.probe_truth is not None]
    assert len(graded) == 3 * 4 and all(r.probe_correct and r.text for r in graded)
    # each turn re-sends the history: later turns' prompts are longer, and the prefix is
    # served from the (simulated) prefix cache
    s0 = sorted((r for r in turns if r.graded_turn.startswith("s0.")), key=lambda r: r.turn)  # type: ignore[union-attr]
    assert [r.prompt_tokens for r in s0] == sorted(r.prompt_tokens or 0 for r in s0)
    assert (s0[-1].cached_prompt_tokens or 0) > 0
    # the workload's figures count the conversations' turns only
    assert sum(1 for r in run.requests if is_workload(r)) == 2 * 3
    assert summarize(run, None).requests == 2 * 3


def test_a_candidate_that_loses_earlier_turns_fails_its_graded_turns() -> None:
    spec = agent(sessions=2)
    ref = measure(0, spec, "reference")
    cand = measure(3, spec, "candidate")  # sees the last 3 user messages only
    acc = turn_accuracy([cand])
    # the code two turns back is within 3 messages; the total needs the first plant
    assert acc == {2: (2, 2), 3: (0, 2), 6: (2, 2), 7: (0, 2)}
    assert turn_accuracy([ref]) == {2: (2, 2), 3: (2, 2), 6: (2, 2), 7: (2, 2)}
    (result,) = perf_results(spec, [ref, cand], resamples=100, seed=0)
    gates = {v.gate: v for v in result.verdicts}
    lost = gates["perf.agent.turns.max_flips"]
    assert not lost.passed and "4 lost, 0 gained of 8" in lost.reason
    # 4 to 0 is p = 1/16: too few turns for the exact test at 0.05, max_flips catches it
    assert gates["perf.agent.turns.significance"].observed == 0.0625
