"""Reading JSONL data files by line, and the first problem of one a profile names; writing one.

The suites and the trace replay read these files only when their stage
starts, which for a trace is after the whole quality stage. Their loaders
import the HTTP client and numpy; this check reads the same fields with
`jsonl_values` (jsonlines and the standard library only), the reader the
loaders use too, so that `qgate validate` stays fast and agrees with them.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

__all__ = [
    "MATH_ITEM",
    "TRACE_LINE",
    "JsonlLineError",
    "JsonlShape",
    "corpus_prompt",
    "jsonl_bytes",
    "jsonl_problem",
    "jsonl_values",
]


class JsonlLineError(ValueError):
    """A line that is not JSON: its 1-based number and the decoder's error."""

    def __init__(self, lineno: int, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.lineno = lineno
        self.cause = cause

    @property
    def too_deep(self) -> bool:
        """The decoder gave up on nesting (RecursionError), not on the syntax."""
        return isinstance(self.cause, _TooDeep)

    @property
    def reason(self) -> str:
        """'JSON nested too deeply', or the decoder's message without its position."""
        return str(getattr(self.cause, "msg", self.cause))


class _TooDeep(ValueError):
    pass


def _loads(line: str | bytes) -> Any:
    try:
        return json.loads(line)
    except RecursionError:
        raise _TooDeep("JSON nested too deeply") from None


def jsonl_values(text: str) -> Iterator[tuple[int, Any]]:
    """(line number, value) of every non-blank line of JSONL `text`, read with jsonlines.

    Lines are `str.splitlines()` lines; a line that is not JSON raises
    JsonlLineError with its number (a JSON `null` is a value, None).
    """
    import jsonlines  # deferred: qgate/core/lazy.py, DEFERRED

    at = 0

    def lines() -> Iterator[str]:
        nonlocal at
        for at, line in enumerate(text.splitlines(), start=1):  # noqa: B007
            yield line

    with jsonlines.Reader(lines(), loads=_loads) as reader:
        while True:
            try:
                value = reader.read(allow_none=True, skip_empty=True)
            except EOFError:
                return
            except jsonlines.InvalidLineError as exc:
                cause = exc.__cause__ or exc
                raise JsonlLineError(exc.lineno, cause) from cause
            yield at, value


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


def _value_problem(obj: Any, shape: JsonlShape) -> str | None:
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
    try:
        for lineno, obj in jsonl_values(text):
            problem = _value_problem(obj, shape)
            if problem:
                return f"{path}:{lineno}: {problem}"
            count += 1
            if count >= shape.needed and not shape.all_lines:
                break
    except JsonlLineError as exc:
        reason = exc.reason if exc.too_deep else f"not JSON ({exc.reason})"
        return f"{path}:{exc.lineno}: {reason}"
    if count == 0:
        return f"{path}: no {shape.what}s"
    if count < shape.needed:
        return f"{path}: only {count} {shape.what}(s); {shape.needed} needed"
    return None


def jsonl_bytes(rows: Iterable[Any], *, ensure_ascii: bool = True) -> bytes:
    """`rows` as JSONL (UTF-8): one JSON value a line with sorted keys, each line ending in \\n."""
    import jsonlines  # deferred: qgate/core/lazy.py, DEFERRED

    out = io.StringIO()
    dumps = partial(json.dumps, sort_keys=True, ensure_ascii=ensure_ascii)
    with jsonlines.Writer(out, dumps=dumps) as writer:
        writer.write_all(rows)
    return out.getvalue().encode()
