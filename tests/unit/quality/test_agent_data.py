"""Grading of tool calls and structured output: each failure kind from what the server sent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from qgate.profile.chat_templates import resolve_chat_template
from qgate.quality.agent_data import (
    HTTP_ERROR,
    grade_structured,
    grade_tool_call,
    schema_for,
    structured_data_sha256,
    structured_items,
    tool_data_sha256,
    tool_items,
)

WANT = json.dumps(
    {"name": "convert_length", "arguments": {"value": 9, "from_unit": "ft", "to_unit": "mi"}}
)


RIGHT = '{"to_unit": "mi", "value": 9.0, "from_unit": "ft"}'
EIGHT = '{"value": 8, "from_unit": "ft", "to_unit": "mi"}'
NINE = '{"value": 9, "from_unit": "ft", "to_unit": "mi"}'
TRUE = '{"value": true, "from_unit": "ft", "to_unit": "mi"}'


def _out(calls: list[tuple[str, str]], content: str | None = None) -> str:
    return json.dumps(
        {"content": content, "tool_calls": [{"name": n, "arguments": a} for n, a in calls]}
    )


@pytest.mark.parametrize(
    ("output", "finish", "failure"),
    [
        (_out([("convert_length", RIGHT)]), "tool_calls", None),
        (_out([], content="Sure, 9 feet is 0.0017 miles."), "stop", "content"),
        (_out([("convert_length", NINE[:20])]), "tool_calls", "malformed_arguments"),
        (_out([("convert_length", "[9]")]), "tool_calls", "malformed_arguments"),
        (_out([("get_weather", '{"city": "Paris"}')]), "tool_calls", "wrong_name"),
        (_out([("convert_length", EIGHT)]), "tool_calls", "wrong_arguments"),
        (_out([("convert_length", TRUE)]), "tool_calls", "wrong_arguments"),
        (
            _out([("convert_length", NINE)] * 2),
            "tool_calls",
            "extra_calls",
        ),
        ("HTTP 400: tool_choice requires --tool-call-parser", HTTP_ERROR, "http_error"),
        ("not json", "stop", "unreadable"),
    ],
)
def test_each_failure_kind_of_a_tool_call(output: str, finish: str, failure: str | None) -> None:
    grade = grade_tool_call(output, finish, WANT)
    assert grade.failure == failure
    assert grade.correct is (failure is None)


@pytest.mark.parametrize(
    ("item", "output", "finish", "answer", "failure"),
    [
        ("sum-0", '{"answer": 7}', "stop", "7", None),
        ("sum-0", '{"answer": 8}', "stop", "8", "wrong_answer"),
        ("sum-0", "The answer is 7.", "stop", None, "unconstrained"),
        ("sum-0", '{"answer": "7"}', "stop", None, "unconstrained"),  # valid JSON, wrong type
        ("sum-0", '{"answer": 7', "length", None, "truncated"),
        ("word-1", '{"word": "river"}', "stop", "river", None),
        ("word-1", '{"word": "rivers"}', "stop", None, "unconstrained"),  # not in the enum
        ("word-1", "HTTP 400: bad schema", HTTP_ERROR, None, "http_error"),
    ],
)
def test_structured_validity_then_answer(
    item: str, output: str, finish: str, answer: str | None, failure: str | None
) -> None:
    expected = "7" if item.startswith("sum") else "river"
    grade = grade_structured(item, output, finish, expected)
    assert (grade.answer, grade.failure) == (answer, failure)


def test_items_are_seeded_versioned_and_computed_from_the_prompt() -> None:
    items = tool_items(6, 4242)
    assert items == tool_items(6, 4242) and items != tool_items(6, 1)
    assert [i.id.split("-")[0] for i in items] == ["weather", "convert", "sum"] * 2
    summed = items[2]
    a, b = (int(w) for w in summed.prompt.split() if w.isdigit())
    assert summed.arguments["value"] == a + b  # the argument is computed, not copied
    assert tool_data_sha256(6, 4242, "named") != tool_data_sha256(6, 4242, "auto")
    s = structured_items(4, 4343)
    assert [i.id for i in s] == ["sum-0", "word-1", "sum-2", "word-3"]
    assert schema_for("sum-0")["properties"] == {"answer": {"type": "integer"}}
    assert structured_data_sha256(4, 4343, "response_format") != structured_data_sha256(
        5, 4343, "response_format"
    )


def test_a_shipped_chat_template_is_named_by_qgate_prefix() -> None:
    path = resolve_chat_template("qgate:chatml-tools")
    assert path.endswith("evals/chat_templates/chatml-tools.jinja")
    assert "<tool_call>" in Path(path).read_text()
    assert resolve_chat_template("/x/t.jinja") == "/x/t.jinja"
