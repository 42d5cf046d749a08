"""The first problem of a JSONL data file a profile names, found at validate time.

The suites and the trace replay read these files only when their stage
starts, which for a trace is after the whole quality stage. Their loaders
import the HTTP client and numpy; this check reads the same fields with the
standard library only, so that `qgate validate` stays fast.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError("not a string")
    return value


def _number(convert: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        if isinstance(value, bool):
            raise TypeError("a boolean is not a number")
        return convert(value)

    return check


@dataclass(frozen=True)
class JsonlShape:
    """What every line of one kind of data file must hold."""

    what: str
    """What one line is, for messages ('math item', 'trace line')."""
    fields: dict[str, tuple[Callable[[Any], Any], str]]
    """Required keys: the conversion the loader applies, and what it needs ('a number')."""
    at_least_one: tuple[str, ...] = ()
    """Keys whose converted value must be at least 1."""
    needed: int = 1
    """Lines the stage reads; only these are checked when `all_lines` is False."""
    all_lines: bool = True


_NUMBER_INT = (_number(int), "a number")
_NUMBER_FLOAT = (_number(float), "a number")
_ANY_TEXT = (str, "text")

MATH_ITEM = JsonlShape("math item", {"id": _ANY_TEXT, "question": _ANY_TEXT, "answer": _NUMBER_INT})
TRACE_LINE = JsonlShape(
    "trace line",
    {"timestamp": _NUMBER_FLOAT, "input_tokens": _NUMBER_INT, "output_tokens": _NUMBER_INT},
    at_least_one=("input_tokens", "output_tokens"),
)


def corpus_prompt(sequences: int) -> JsonlShape:
    """A divergence corpus line; the suite reads only the first `sequences` of them."""
    text: tuple[Callable[[Any], Any], str] = (_text, "text")
    fields = {"id": text, "prompt": text}
    return JsonlShape("corpus prompt", fields, needed=sequences, all_lines=False)


def _line_problem(line: str, shape: JsonlShape) -> str | None:
    try:
        obj = json.loads(line)
    except RecursionError:
        return "JSON nested too deeply"
    except ValueError as exc:
        return f"not JSON ({getattr(exc, 'msg', exc)})"
    if not isinstance(obj, dict):
        return f"not a {shape.what} (a JSON object)"
    missing = [key for key in shape.fields if key not in obj]
    if missing:
        return f"not a {shape.what}: missing {', '.join(missing)}"
    for key, (convert, kind) in shape.fields.items():
        try:
            value = convert(obj[key])
        except (ValueError, TypeError, OverflowError):
            return f"not a {shape.what}: {key} must be {kind}"
        if key in shape.at_least_one and value < 1:
            return f"not a {shape.what}: {key} must be at least 1"
    return None


def jsonl_problem(path: Path, shape: JsonlShape) -> str | None:
    """The first problem of the JSONL file at `path` as `shape` reads it, or None."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        return f"cannot read {path} ({exc.strerror or exc})"
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        where = raw[: exc.start].count(b"\n") + 1
        return f"{path}:{where}: not UTF-8 text (byte 0x{raw[exc.start]:02x})"
    count = 0
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        problem = _line_problem(line, shape)
        if problem:
            return f"{path}:{lineno}: {problem}"
        count += 1
        if count >= shape.needed and not shape.all_lines:
            break
    if count == 0:
        return f"{path}: no {shape.what}s"
    if count < shape.needed:
        return f"{path}: only {count} {shape.what}(s); {shape.needed} needed"
    return None
