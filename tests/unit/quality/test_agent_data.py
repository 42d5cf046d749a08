"""Grading of tool calls and structured output: each failure kind from what the server sent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from qgate.profile.chat_templates import resolve_chat_template
from qgate.quality.agent_data import (
    HTTP_ERROR,
    WORDS,
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


@pytest.mark.parametrize(
    ("item", "output", "failure"),
    [
        # no continuation makes these valid: the schema was ignored
        ("sum-0", '```json\n{"answer": 7}\n```\nThe sum of 3 and 4', "unconstrained"),
        ("sum-0", "To add 3 and 4, we first count three apples and then", "unconstrained"),
        ("word-1", '{"keyWord": "river", "explanation": "the secret', "unconstrained"),
        ("sum-0", '{"answer": 7, "reason": "three plus four is', "unconstrained"),
        ("sum-0", '{"answer": "seven', "unconstrained"),  # a string where an integer goes
        ("sum-0", '{"answer": 07', "unconstrained"),  # no JSON number starts 07
        ("sum-0", '{"answer": 7.5}', "unconstrained"),  # closed: not whole
        ("sum-0", '{"answer": 7}\n\nThe answer is', "unconstrained"),  # text after the JSON
        ("word-1", '{"word": "rivers', "unconstrained"),  # no word starts so
        ("word-1", '{"word": "gardens"', "unconstrained"),
        # a constrained server, cut short: could still become valid
        ("sum-0", "", "truncated"),
        ("sum-0", ' \n\t{ \r\n  "ans', "truncated"),
        ("sum-0", '{\n  "answer" :\n   ', "truncated"),
        ("sum-0", '{"answer": 1234567890123456789012345678901234567890', "truncated"),
        ("sum-0", '{"answer": -', "truncated"),
        ("sum-0", '{"answer": 7.5e', "truncated"),  # 7.5e1 is 75, an integer
        ("sum-0", '{"answer": 7 \n  ', "truncated"),
        ("word-1", '{"word": "gard', "truncated"),
        ("word-1", '{"word": "', "truncated"),
        ("word-1", '{"wo', "truncated"),
        ("word-1", '{"word": "ri\\u0076er', "truncated"),  # an escape: in doubt
    ],
)
def test_a_cut_output_that_no_continuation_makes_valid_was_unconstrained(
    item: str, output: str, failure: str
) -> None:
    expected = "7" if item.startswith("sum") else "river"
    grade = grade_structured(item, output, "length", expected)
    assert (grade.answer, grade.failure) == (None, failure)
    # before quality derivation 8 every cut output was `truncated`
    assert grade_structured(item, output, "length", expected, prefixes=False).failure == (
        "truncated"
    )


def test_a_word_prefix_is_truncated_only_while_some_enum_word_has_it() -> None:
    """Each prefix of each word is one a constrained server can leave; one letter more than
    any word has is not."""
    for word in WORDS:
        for n in range(len(word) + 1):
            assert grade_structured("word-1", f'{{"word": "{word[:n]}', "length", word).failure == (
                "truncated"
            )
    assert not any(w.startswith("ca") and w != "candle" for w in WORDS)
    assert grade_structured("word-1", '{"word": "cand', "length", "x").failure == "truncated"
    assert grade_structured("word-1", '{"word": "cant', "length", "x").failure == "unconstrained"


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
