"""The `constrained` gate of each structured-output parameter: a parameter the server ignores
with HTTP 200 is named and its result not scored, whichever of the engine's forms it is
(`response_format`, `structured_outputs`, the legacy `guided_json`), the others unaffected.

The stand-in server is the mock with a script whose answers are JSON when a schema field it
honours is in the request and prose otherwise (`free`); it ignores the fields named by
`ignores` (vLLM >= 0.12 and `guided_json`), and the fault proxy's `drop:FIELD` removes a field
on the way (perf/faults/proxy.py).

And the `served` gate of each agent result (quality derivation 8): a candidate that answers
with an HTTP error an item the reference served FAILs it, even where the reference had that
item wrong and the accuracy gates see no loss (issue 53's tools-25: `tools` dropped, vLLM's
HTTP 400 to `tool_choice` without it, all on items the reference had wrong)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.agent_records import graded_item
from helpers.fault_proxy import faulty
from helpers.mock_server import MockRuntime, load_by_path

from qgate.core.verdict import Verdict
from qgate.gates.agent import SERVED_FROM, served_verdict
from qgate.gates.assembly import candidate_verdicts
from qgate.gates.quality import evaluate_quality
from qgate.profile import Profile
from qgate.quality import stage
from qgate.quality.agent_data import HTTP_ERROR, grade_tool_call, structured_items, tool_items
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


REFUSED = "HTTP 400: When using `tool_choice`, `tools` must be set."
TOOLS = Profile.model_validate(
    {
        "name": "tools",
        "model": {"embedded": "smollm2"},
        "candidate": {},
        "quality": {
            "tool_calls": {"items": N, "choices": ["named"], "streamed": False, "rule": "point"}
        },
    }
)


def _tool_run(role: str, refused: set[int], wrong: set[int] = frozenset()) -> SuiteRun:  # type: ignore[assignment]
    """tool_calls.named's first N items as `role` answered them: `refused` with vLLM's HTTP
    400, `wrong` with a call to the wrong function, the rest right; graded as the suite grades."""
    items = []
    for n, item in enumerate(tool_items(N, 4242)):
        if n in refused:
            output, finish = REFUSED, HTTP_ERROR
        else:
            name = "nothing" if n in wrong else item.name
            call = {"name": name, "arguments": json.dumps(item.arguments)}
            output, finish = json.dumps({"content": None, "tool_calls": [call]}), "tool_calls"
        grade = grade_tool_call(output, finish, item.expected)
        items.append(graded_item(item.id, item.expected, output, finish, grade))
    return SuiteRun(suite="tool_calls.named", role=role, data_sha256="0" * 64, items=items)  # type: ignore[arg-type]


def _served(ref_refused: set[int], cand_refused: set[int], ref_wrong: set[int]) -> Verdict:
    ref, cand = _tool_run("reference", ref_refused, ref_wrong), _tool_run("candidate", cand_refused)
    return served_verdict("tool_calls.named", ref, cand)


def test_a_refusal_where_the_reference_served_fails_though_the_reference_had_it_wrong() -> None:
    """tools-25's shape: the candidate refuses two items the reference answered wrong; the
    accuracy gates see no loss, the served gate FAILs naming the count, ids and the error."""
    ref = _tool_run("reference", set(), wrong={1, 4})
    cand = _tool_run("candidate", {1, 4})
    runs = [ref, cand]
    verdicts = candidate_verdicts(TOOLS, runs, None, [], [], [], None, derivation=SERVED_FROM)
    accuracy = [v for v in verdicts if v.gate != "tool_calls.named.served"]
    assert accuracy and all(v.passed for v in accuracy), accuracy
    gate = next(v for v in verdicts if v.gate == "tool_calls.named.served")
    assert not gate.passed and not gate.inconclusive
    assert (gate.observed, gate.limit, gate.n, gate.metric) == (2.0, 0.0, N, "refused_items")
    ids = ", ".join(tool_items(N, 4242)[k].id for k in (1, 4))
    assert gate.reason == (
        f"tool_calls.named: the candidate answered 2 of {N} items with an HTTP error where the "
        f"reference served them ({ids}; first: {REFUSED})"
    )
    # before derivation 8 the same records PASS: the loss the gate was added for
    older = candidate_verdicts(TOOLS, runs, None, [], [], [], None, derivation=SERVED_FROM - 1)
    assert all(v.passed for v in older) and all(not v.gate.endswith(".served") for v in older)


def test_refusals_of_both_sides_are_not_the_candidates() -> None:
    gate = _served({2}, {2}, set())
    assert gate.passed and gate.observed == 0
    assert "every request the reference served the candidate served too" in gate.reason
    assert (
        f"both sides answered 1 with an HTTP error ({tool_items(N, 4242)[2].id}), not counted"
        in (gate.reason)
    )
    clean = _served(set(), set(), {0})
    assert clean.passed and clean.reason == (
        f"tool_calls.named: every request the reference served the candidate served too ({N} items)"
    )
    # the reference's own refusal the candidate served is not the candidate's loss either
    assert _served({3}, set(), set()).passed


def test_the_quoted_error_is_one_line_redacted_and_cut() -> None:
    ref, cand = _tool_run("reference", set()), _tool_run("candidate", {0})
    secret = "hf_" + "a" * 30
    long = f"HTTP 400: bad\nrequest {secret} " + "x" * 400
    cand.items[0] = cand.items[0].model_copy(update={"output": long})
    reason = served_verdict("tool_calls.named", ref, cand).reason
    first = reason.split("first: ", 1)[1]
    assert "\n" not in first and secret not in first and "***REDACTED***" in first
    assert first.startswith("HTTP 400: bad request") and first.endswith("...)")
    assert len(first) == 160 + 1


def test_the_quoted_error_leaves_out_the_clients_url_and_second_status() -> None:
    """The suite client's `POST <url>: HTTP <status>: ` (quality/client.py) took most of the
    160 characters; one `HTTP <status>:` stays, then vLLM's own message, redacted and cut."""
    ref, cand = _tool_run("reference", set()), _tool_run("candidate", {0})
    vllm = '{"error":{"message":"When using `tool_choice`, `tools` must be set.'
    url = "http://user:pw@127.0.0.1:47325/v1/chat/completions"
    output = f"HTTP 400: POST {url}: HTTP 400: {vllm} (parameter=tool_choice)" + " y" * 200
    cand.items[0] = cand.items[0].model_copy(update={"output": output})
    first = served_verdict("tool_calls.named", ref, cand).reason.split("first: ", 1)[1]
    assert first.startswith(f"HTTP 400: {vllm} (parameter=tool_choice) y y")
    assert "POST" not in first and "127.0.0.1" not in first and "pw" not in first
    assert first.endswith("...)") and len(first) == 160 + 1
    # a status that differs, or another text, is quoted as it came
    other = f"HTTP 400: POST {url}: HTTP 500: boom"
    cand.items[0] = cand.items[0].model_copy(update={"output": other})
    reason = served_verdict("tool_calls.named", ref, cand).reason
    assert "HTTP 400: POST http://***REDACTED***@127.0.0.1:47325" in reason


def test_each_agent_result_gets_its_gate_after_its_own_verdicts() -> None:
    """Every agent result, streamed too, gets one served gate after its own verdicts
    (structured: after `constrained`); a result without both sides' run gets none."""
    profile = Profile.model_validate(
        {
            "name": "agents",
            "model": {"embedded": "smollm2"},
            "candidate": {},
            "quality": {
                "tool_calls": {"items": N, "choices": ["named"], "rule": "point"},
                "structured": {"items": N, "params": ["response_format"], "rule": "point"},
            },
        }
    )
    runs = []
    for suite in ("tool_calls.named", "tool_calls.named.streamed", "structured.response_format"):
        for role in ("reference", "candidate"):
            run = _tool_run(role, set())
            runs.append(run.model_copy(update={"suite": suite}))
    verdicts = candidate_verdicts(profile, runs, None, [], [], [], None, derivation=SERVED_FROM)
    gates = [v.gate for v in verdicts]
    served = [g for g in gates if g.endswith(".served")]
    assert served == [
        "tool_calls.named.served",
        "tool_calls.named.streamed.served",
        "structured.response_format.served",
    ]
    for gate in served:
        suite = gate.removesuffix(".served")
        own = [k for k, v in enumerate(verdicts) if v.suite == suite and v.gate != gate]
        assert own and gates.index(gate) == max(own) + 1, gates
    assert gates.index("structured.response_format.served") == (
        gates.index("structured.response_format.constrained") + 1
    )
