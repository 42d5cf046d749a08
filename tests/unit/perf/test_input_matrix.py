"""An input-length matrix: one run per length (and sweep level), each with its own warm-ups."""

from __future__ import annotations

import asyncio

from qgate.perf.expand import expand_inputs
from qgate.perf.metrics import summarize
from qgate.perf.runner import run_scenarios
from qgate.profile import FixedScenario, PerfSpec
from qgate.profile.perf import run_names


def test_expand_inputs_gives_one_scenario_per_length() -> None:
    s = FixedScenario(name="k", input_tokens=[512, 8192], output_tokens=256, warmup=2, requests=5)
    got = expand_inputs(s)
    assert [(e.name, e.input_tokens, e.warmup, e.requests) for e in got] == [
        ("k@in512", 512, 2, 5),
        ("k@in8192", 8192, 2, 5),
    ]
    plain = FixedScenario(name="p", input_tokens=64, output_tokens=4)
    assert expand_inputs(plain) == [plain]


def test_matrix_runs_each_length_with_exact_prompts(mock_url: str) -> None:
    spec = PerfSpec.model_validate(
        {
            "scenarios": [
                {
                    "name": "m",
                    "input_tokens": [8, 40],
                    "output_tokens": 3,
                    "concurrency": [1, 2],
                    "warmup": 1,
                    "requests": 4,
                },
            ],
            "probe_share": 0.0,
        }
    )
    runs = asyncio.run(run_scenarios(mock_url, "mock", spec, "candidate"))
    assert [r.scenario for r in runs] == run_names(spec.scenarios[0])
    assert [r.scenario for r in runs] == ["m@in8@c1", "m@in8@c2", "m@in40@c1", "m@in40@c2"]
    for run, length in zip(runs, (8, 8, 40, 40), strict=True):
        assert run.params["input_tokens"] == length and run.params["warmup"] == 1
        assert len(run.requests) == 4  # measured only: the warm-up is not recorded
        assert {r.prompt_tokens for r in run.requests} == {length}
        assert summarize(run, None).completed == 4
