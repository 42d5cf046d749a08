"""The tool-call and structured-output suites against the mock server: requests, failure kinds,
gates (an ignored structured-output parameter named as such), plan and verify's re-derivation."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.fault_proxy import faulty
from helpers.mock_server import MockRuntime

from qgate.errors import VerificationFailed
from qgate.gates.agent import failure_lines
from qgate.gates.quality import evaluate_quality
from qgate.profile import Profile
from qgate.quality import stage
from qgate.quality.agent_data import PREFIX_FROM, structured_items, tool_items
from qgate.quality.records import SuiteRun
from qgate.report.verify.rederive import Rederived, check_questions, rederive_correctness

MOCK = Path(__file__).resolve().parents[2] / "mockserver" / "mock_openai.py"
N = 6


def _call(name: str, arguments: Any) -> dict[str, Any]:
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {
        "message": {
            "tool_calls": [{"type": "function", "function": {"name": name, "arguments": args}}]
        }
    }


def _script(broken: bool) -> dict[str, Any]:
    """Replies by prompt: every tool call right and every JSON answer valid and right, or
    (broken) one item of each tool-call failure kind and answers that are not JSON."""
    out: dict[str, Any] = {}
    for item in tool_items(N, 4242):
        out[item.prompt] = _call(item.name, item.arguments)
    for item in structured_items(N, 4343):
        key = "answer" if item.id.startswith("sum") else "word"
        value: Any = int(item.expected) if key == "answer" else item.expected
        out[item.prompt] = {"message": {"content": json.dumps({key: value})}}
    if broken:
        t = tool_items(N, 4242)
        out[t[0].prompt] = {"message": {"content": "It is sunny."}}
        out[t[1].prompt] = _call(t[1].name, '{"value": 3, ')
        out[t[2].prompt] = _call("get_weather", {"city": "Paris"})
        out[t[3].prompt] = _call(t[3].name, {"city": "Nowhere"})
        out[t[4].prompt] = {"status": 500}
        for item in structured_items(N, 4343):
            out[item.prompt] = {"message": {"content": f"The answer is {item.expected}."}}
    return out


@pytest.fixture(scope="module")
def mock_urls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    spec = importlib.util.spec_from_file_location("mock_openai", MOCK)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    folder = tmp_path_factory.mktemp("replies")
    paths = {}
    for name, broken in (("good", False), ("broken", True)):
        paths[name] = folder / f"{name}.json"
        paths[name].write_text(json.dumps(_script(broken)))
    with (
        mod.running(ttft_ms=1.0, itl_ms=1.0, replies=str(paths["good"])) as good,
        mod.running(ttft_ms=1.0, itl_ms=1.0, replies=str(paths["broken"])) as broken,
    ):
        yield {"good": good, "broken": broken}


def _profile(**quality: Any) -> Profile:
    return Profile.model_validate(
        {
            "name": "agent",
            "model": {"embedded": "smollm2"},
            "candidate": {},
            "quality": quality
            or {
                "tool_calls": {"items": N, "max_drop": 0.1, "rule": "point"},
                "structured": {
                    "items": N,
                    "params": ["response_format"],
                    "max_drop": 0.1,
                    "rule": "point",
                },
            },
        }
    )


def _runs(profile: Profile, urls: dict[str, str], candidate: str) -> list[SuiteRun]:
    runs: list[SuiteRun] = []
    for role, url in (("reference", urls["good"]), ("candidate", urls[candidate])):
        runs += stage.evaluate(MockRuntime(role, url), profile, role, tokenizer_path=None).runs  # type: ignore[arg-type]
    return runs


def test_the_suites_pass_against_themselves(mock_urls: dict[str, str]) -> None:
    profile = _profile()
    runs = _runs(profile, mock_urls, "good")
    ways = ["tool_calls.named", "tool_calls.auto", "structured.response_format"]
    each = [result for way in ways for result in (way, way + ".streamed")]
    assert [(r.suite, r.role) for r in runs] == [
        (result, role) for role in ("reference", "candidate") for result in each
    ]
    streamed = next(r for r in runs if r.suite == "tool_calls.named.streamed")
    assert streamed.params["stream"] is True and streamed.items[0].finish_reason == "tool_calls"
    assert all(i.correct and i.failure is None for r in runs for i in r.items)
    verdicts = evaluate_quality(profile.quality, runs, None)
    assert all(v.passed for v in verdicts) and verdicts
    assert "structured.response_format.constrained" in {v.gate for v in verdicts}
    out = Rederived()
    rederive_correctness(runs, profile, out)
    check_questions(runs, profile, out)
    assert out.items == 12 * N


def test_tool_calls_lost_only_when_streamed_fail_the_streamed_result_and_are_named(
    mock_urls: dict[str, str],
) -> None:
    """Kimi K3's fault (vLLM #53246): the same server behind `stream:tool_calls` answers every
    call whole unstreamed and none streamed. The results asked as is PASS; the streamed ones
    FAIL against the reference's streamed answers, and the warnings name the losses as
    streamed-only (right as is, wrong streamed); verify re-grades them from the records."""
    profile = _profile(tool_calls={"items": N, "max_drop": 0.1, "rule": "point"})
    with faulty(mock_urls["good"], "stream:tool_calls") as url:
        runs = _runs(profile, {**mock_urls, "faulty": url}, "faulty")
    verdicts = {v.gate: v for v in evaluate_quality(profile.quality, runs, None)}
    for way in ("named", "auto"):
        assert verdicts[f"tool_calls.{way}.max_drop"].passed
        lost = verdicts[f"tool_calls.{way}.streamed.max_drop"]
        assert not lost.passed and lost.observed == 1.0, lost
    cand = next(r for r in runs if r.suite == "tool_calls.named.streamed" and r.role == "candidate")
    assert {i.failure for i in cand.items} == {"content"}
    assert {i.finish_reason for i in cand.items} == {"stop"}
    lines = failure_lines(profile.quality, runs)
    assert lines[1].startswith("tool_calls.named.streamed: reference 6/6 right, failures: none")
    assert "streamed-only losses 0; candidate 0/6 right" in lines[1]
    assert lines[1].endswith(f"streamed-only losses {N} (weather-0, convert-1, sum-2, ...)")
    assert "streamed-only" not in lines[0]  # a result asked as is has none to name
    rederive_correctness(runs, profile, Rederived())


def test_each_failure_kind_is_recorded_and_counted(mock_urls: dict[str, str]) -> None:
    profile = _profile()
    runs = _runs(profile, mock_urls, "broken")
    named = next(r for r in runs if r.suite == "tool_calls.named" and r.role == "candidate")
    assert [i.failure for i in named.items] == [
        "content",
        "malformed_arguments",
        "wrong_name",
        "wrong_arguments",
        "http_error",
        None,
    ]
    assert named.items[4].finish_reason == "http_error" and "500" in named.items[4].output
    lines = failure_lines(profile.quality, runs)
    assert lines[0] == (
        "tool_calls.named: reference 6/6 right, failures: none; candidate 1/6 right, failures: "
        "content 1, http_error 1, malformed_arguments 1, wrong_arguments 1, wrong_name 1"
    )
    failed = {v.gate for v in evaluate_quality(profile.quality, runs, None) if not v.passed}
    assert {"tool_calls.named.max_drop", "tool_calls.auto.max_drop"} <= failed


def test_an_ignored_schema_is_named_not_scored_wrong(mock_urls: dict[str, str]) -> None:
    profile = _profile()
    runs = _runs(profile, mock_urls, "broken")
    cand = next(
        r for r in runs if r.suite == "structured.response_format" and r.role == "candidate"
    )
    assert {i.failure for i in cand.items} == {"unconstrained"}
    verdicts = {v.gate: v for v in evaluate_quality(profile.quality, runs, None)}
    gate = verdicts["structured.response_format.constrained"]
    assert not gate.passed and gate.observed == N
    assert "ignored `response_format`" in gate.reason
    drop = verdicts["structured.response_format.max_drop"]
    assert not drop.passed and drop.observed is None and "not scored" in drop.reason


def test_verify_re_derives_the_failure_kind(mock_urls: dict[str, str]) -> None:
    profile = _profile()
    runs = _runs(profile, mock_urls, "broken")
    i = next(
        n for n, r in enumerate(runs) if r.suite == "tool_calls.auto" and r.role == "candidate"
    )
    forged = runs[i].items[2].model_copy(update={"failure": "wrong_arguments"})
    runs[i] = runs[i].model_copy(update={"items": [runs[i].items[0], runs[i].items[1], forged]})
    with pytest.raises(VerificationFailed, match="stored failure 'wrong_arguments'"):
        rederive_correctness(runs, profile, Rederived())
    expected = runs[i].items[0].model_copy(update={"expected": '{"name":"x"}'})
    runs[i] = runs[i].model_copy(update={"items": [expected]})
    with pytest.raises(VerificationFailed, match="generated from the profile"):
        check_questions([runs[i]], profile, Rederived())


def test_a_tool_choice_without_tools_is_an_http_error(mock_urls: dict[str, str]) -> None:
    """What a proxy that drops `tools` gets from vLLM (400), recorded per item."""
    import asyncio

    from qgate.quality.agent_suites import _ask, tool_body
    from qgate.quality.client import SuiteClient

    async def ask() -> tuple[Any, ...]:
        async with SuiteClient(mock_urls["good"], "mock") as client:
            body = tool_body("hi", "auto", "get_weather", 8, 0)
            del body["tools"]
            return await _ask(client, body, False)

    output, finish, _ = asyncio.run(ask())
    assert finish == "http_error" and output.startswith("HTTP 400")


def test_a_structured_reference_is_keyed_by_how_its_cut_outputs_are_graded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A cached reference graded before agent_data.PREFIX_FROM is not reused (verify re-grades
    its records by the report's derivation): the key of a profile with structured results
    names the rule; one without keeps its key."""

    def key(profile: Profile) -> str:
        return stage.reference_key(profile, {"model.safetensors": "0" * 64}, "0.0", {})

    both = _profile()
    tools = _profile(tool_calls={"items": N, "max_drop": 0.1, "rule": "point"})
    before = key(both), key(tools)
    monkeypatch.setattr(stage, "PREFIX_FROM", PREFIX_FROM - 1)
    assert key(both) != before[0] and key(tools) == before[1]
