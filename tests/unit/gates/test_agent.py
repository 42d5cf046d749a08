"""The `constrained` gate of each structured-output parameter: a parameter the server ignores
with HTTP 200 is named and its result not scored, whichever of the engine's forms it is
(`response_format`, `structured_outputs`, the legacy `guided_json`), the others unaffected.

The stand-in server is the mock with a script whose answers are JSON when a schema field it
honours is in the request and prose otherwise (`free`); it ignores the fields named by
`ignores` (vLLM >= 0.12 and `guided_json`), and the fault proxy's `drop:FIELD` removes a field
on the way (perf/faults/proxy.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.fault_proxy import faulty
from helpers.mock_server import MockRuntime, load_by_path

from qgate.core.verdict import Verdict
from qgate.gates.quality import evaluate_quality
from qgate.profile import Profile
from qgate.quality import stage
from qgate.quality.agent_data import structured_items
from qgate.quality.records import SuiteRun
from qgate.report.verify.rederive import Rederived, rederive_correctness

ROOT = Path(__file__).resolve().parents[3]
N = 6
SEED = 4343
PARAMS = ["response_format", "structured_outputs", "guided_json"]


mock = load_by_path("mock_openai", ROOT / "tests" / "mockserver" / "mock_openai.py")


def _script() -> dict[str, Any]:
    """Every item's right answer as JSON when constrained, the same answer in prose when free."""
    out: dict[str, Any] = {}
    for item in structured_items(N, SEED):
        key = "answer" if item.id.startswith("sum") else "word"
        value: Any = int(item.expected) if key == "answer" else item.expected
        out[item.prompt] = {
            "message": {"content": json.dumps({key: value})},
            "free": {"content": f"The answer is {item.expected}."},
        }
    return out


@pytest.fixture(scope="module")
def urls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    script = tmp_path_factory.mktemp("replies") / "replies.json"
    script.write_text(json.dumps(_script()))
    with (
        mock.running(ttft_ms=1.0, itl_ms=1.0, replies=str(script)) as honest,
        mock.running(
            ttft_ms=1.0, itl_ms=1.0, replies=str(script), ignores=("guided_json",)
        ) as legacy,
        faulty(honest, "drop:structured_outputs") as dropping,
    ):
        yield {"honest": honest, "legacy": legacy, "dropping": dropping}


PROFILE = Profile.model_validate(
    {
        "name": "structured",
        "model": {"embedded": "smollm2"},
        "candidate": {},
        # the point rule: 6 items show no margin under the bound; these tests read which
        # gate names an ignored field, not the bound (test_noninferiority.py's)
        "quality": {"structured": {"items": N, "params": PARAMS, "max_drop": 0.1, "rule": "point"}},
    }
)


def _judged(reference: str, candidate: str) -> tuple[list[SuiteRun], dict[str, Verdict]]:
    runs: list[SuiteRun] = []
    for role, url in (("reference", reference), ("candidate", candidate)):
        runtime = MockRuntime(role, url)  # type: ignore[arg-type]
        runs += stage.evaluate(runtime, PROFILE, role, tokenizer_path=None).runs  # type: ignore[arg-type]
    return runs, {v.gate: v for v in evaluate_quality(PROFILE.quality, runs, None)}


def _candidate(runs: list[SuiteRun], param: str) -> SuiteRun:
    return next(r for r in runs if r.suite == f"structured.{param}" and r.role == "candidate")


def test_every_parameter_honoured_passes_constrained(urls: dict[str, str]) -> None:
    """The stand-in is sound: with each field honoured every answer is JSON, right, PASS."""
    runs, verdicts = _judged(urls["honest"], urls["honest"])
    for param in PARAMS:
        gate = verdicts[f"structured.{param}.constrained"]
        assert gate.passed and gate.observed == 0, gate
        assert all(i.correct for i in _candidate(runs, param).items)
    assert all(v.passed for v in verdicts.values())


@pytest.mark.parametrize(
    ("server", "ignored"), [("legacy", "guided_json"), ("dropping", "structured_outputs")]
)
def test_an_ignored_parameter_is_named_and_not_scored(
    urls: dict[str, str], server: str, ignored: str
) -> None:
    """The legacy field ignored by the server, or vLLM's extra-body field dropped by a proxy:
    that parameter's `constrained` gate FAILs naming it and its accuracy gates are not scored
    (the answers are right in prose, not wrong); the other parameters still PASS."""
    runs, verdicts = _judged(urls["honest"], urls[server])
    gate = verdicts[f"structured.{ignored}.constrained"]
    assert not gate.passed and gate.observed == N, gate
    assert f"the server ignored `{ignored}`" in gate.reason
    assert f"candidate {N} of {N}" in gate.reason and "reference" not in gate.reason.split("(")[1]
    assert {i.failure for i in _candidate(runs, ignored).items} == {"unconstrained"}
    accuracy = [
        v
        for v in verdicts.values()
        if v.suite == f"structured.{ignored}" and not v.gate.endswith(".constrained")
    ]
    assert accuracy and all(
        not v.passed and v.observed is None and "not scored" in v.reason for v in accuracy
    )
    for param in (p for p in PARAMS if p != ignored):
        assert verdicts[f"structured.{param}.constrained"].passed
        assert all(v.passed for v in verdicts.values() if v.suite == f"structured.{param}")
    # verify re-grades every record from its text: the failure kind stands
    out = Rederived()
    rederive_correctness(runs, PROFILE, out)
    assert out.items == 2 * 2 * len(PARAMS) * N  # both sides, each asked as is and streamed


def test_a_reference_that_ignores_it_too_is_named_on_both_sides(urls: dict[str, str]) -> None:
    """Both sides on an engine that ignores `guided_json`: no pairing hides it."""
    _, verdicts = _judged(urls["legacy"], urls["legacy"])
    gate = verdicts["structured.guided_json.constrained"]
    assert not gate.passed
    assert f"reference {N} of {N}, candidate {N} of {N}" in gate.reason, gate.reason
    assert verdicts["structured.response_format.constrained"].passed
