"""The prefix check of a cut structured output (qgate/quality/schema_prefix.py): strict only
for the suite's one-property shape, "could be" for any other schema."""

from __future__ import annotations

from typing import Any

import pytest

from qgate.quality.agent_data import schema_for
from qgate.quality.schema_prefix import could_be_prefix


def test_the_suites_schemas_are_checked() -> None:
    assert not could_be_prefix(schema_for("sum-0"), "Sure! Here is")
    assert could_be_prefix(schema_for("sum-0"), '{"answer": 1')
    assert not could_be_prefix(schema_for("word-1"), '{"word": 3')


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"a": {"type": "integer"}}},  # extra keys allowed
        {"type": "object", "properties": {"a": {"type": "number"}}, "additionalProperties": False},
        {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "additionalProperties": False,
        },
        {"type": "array", "items": {"type": "integer"}},
    ],
)
def test_another_shape_is_never_refused(schema: dict[str, Any]) -> None:
    assert could_be_prefix(schema, "Sure! Here is the JSON you asked for")
