"""The degeneration probe against the mock server: long answers alone and beside a burst of
prefill-only requests, a candidate whose long answers loop (the fault proxy's `loop:N`) FAILs
both results, the warnings sum up each side, and verify re-grades every answer."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.fault_proxy import faulty
from helpers.mock_server import MockRuntime, load_by_path

from qgate.errors import VerificationFailed
from qgate.gates.notices import quality_warnings
from qgate.gates.quality import evaluate_quality
from qgate.profile import Profile
from qgate.quality import stage
from qgate.quality.degeneration_data import long_items
from qgate.quality.records import SuiteRun
from qgate.report.verify.rederive import Rederived, check_questions, rederive_correctness

ROOT = Path(__file__).resolve().parents[3]
mock = load_by_path("mock_openai", ROOT / "tests" / "mockserver" / "mock_openai.py")
N = 6
PROSE = (
    "The keeper climbed the stairs at dusk, counting each step as his father had taught him. "
    "Outside, the wind pulled at the shutters and the sea threw itself against the rocks. "
    "He lit the lamp, checked the oil, and wrote the hour in the log with a steady hand. "
    "Far out, a ship's light blinked twice and was gone behind a swell, then came back again. "
    "By midnight the rain had come, hard and sideways, and the glass hummed in its brass frame. "
    "He thought of the map in the bottle, folded in his coat, and of the island drawn on it. "
    "At dawn he would row out past the reef, if the sea allowed it, and see for himself. "
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    script = tmp_path_factory.mktemp("replies") / "replies.json"
    replies = {
        i.prompt: {"message": {"content": f"{i.id}. {PROSE}"}, "finish_reason": "length"}
        for i in long_items(N)
    }
    script.write_text(json.dumps(replies))
    with mock.running(ttft_ms=1.0, itl_ms=1.0, replies=str(script)) as url:
        yield url


PROFILE = Profile.model_validate(
    {
        "name": "long",
        "model": {"embedded": "smollm2"},
        "candidate": {},
        "quality": {"degeneration": {"items": N, "max_tokens": 64, "burst_words": 32}},
    }
)


def _runs(reference: str, candidate: str) -> list[SuiteRun]:
    runs: list[SuiteRun] = []
    for role, url in (("reference", reference), ("candidate", candidate)):
        runtime: Any = MockRuntime(role, url)  # type: ignore[arg-type]
        runs += stage.evaluate(runtime, PROFILE, role, tokenizer_path=None).runs  # type: ignore[arg-type]
    return runs


def test_long_answers_that_loop_fail_alone_and_beside_the_burst(server: str) -> None:
    with faulty(server, "loop:60") as url:
        runs = _runs(server, url)
    assert [(r.suite, r.role) for r in runs] == [
        ("degeneration.alone", "reference"),
        ("degeneration.burst", "reference"),
        ("degeneration.alone", "candidate"),
        ("degeneration.burst", "candidate"),
    ]
    burst = next(r for r in runs if r.suite == "degeneration.burst")
    assert int(str(burst.params["burst_requests"])) >= 1  # prefill-only requests did arrive
    verdicts = {v.gate: v for v in evaluate_quality(PROFILE.quality, runs, None)}
    for result in ("degeneration.alone", "degeneration.burst"):
        gate = verdicts[f"{result}.significance"]
        assert not gate.passed, gate
    lines = [w for w in quality_warnings(PROFILE.quality, runs, None) if "degeneration" in w]
    assert lines[0] == (
        f"degeneration.alone: reference {N}/{N} clean, failures: none; finish length {N}; "
        f"median 5 tokens; candidate 0/{N} clean, failures: loop {N}; finish length {N}; "
        "median 5 tokens"
    )
    out = Rederived()
    rederive_correctness(runs, PROFILE, out)
    check_questions(runs, PROFILE, out)
    assert out.items == 4 * N
    i = next(n for n, r in enumerate(runs) if r.role == "candidate")
    forged = runs[i].items[0].model_copy(update={"correct": True, "failure": None})
    runs[i] = runs[i].model_copy(update={"items": [forged, *runs[i].items[1:]]})
    with pytest.raises(VerificationFailed, match="long-0"):
        rederive_correctness(runs, PROFILE, Rederived())


def test_the_same_server_passes_against_itself(server: str) -> None:
    runs = _runs(server, server)
    verdicts = evaluate_quality(PROFILE.quality, runs, None)
    assert verdicts and all(v.passed for v in verdicts)
    assert all(i.correct for r in runs for i in r.items)
