"""One problem of a profile, and the line a person reads for it: FILE:LINE KEY.PATH: message.

Every line is bounded: a pasted value, a long path or a huge key is cut in the middle,
and a message cut at its end, so that no error ever echoes a huge value whole. So is the
list: a problem repeated in many places (5,000 bad list items, an alias used 5,000 times)
shows a few times and then "and N more like it", and at most MOST_LINES lines show.

A problem found on derived data (a side's merged engine args, a default) may name a key
the file never wrote; `in_file` moves it to the nearest key the file does write.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace

from qgate.core.yamlload import KeyPath
from qgate.errors import ProfileError

__all__ = [
    "LONGEST_MESSAGE",
    "LONGEST_WORD",
    "MOST_ALIKE",
    "MOST_LINES",
    "Problem",
    "bounded",
    "format_path",
    "in_file",
    "profile_error",
]


@dataclass(frozen=True)
class Problem:
    line: int | None
    path: KeyPath
    message: str
    missing: bool = False
    """The key is missing: its path names where to add it, not a key the file writes."""


def format_path(path: KeyPath) -> str:
    """`("perf", "scenarios", 0, "name")` -> `perf.scenarios[0].name`."""
    out = ""
    for part in path:
        if isinstance(part, int) and not isinstance(part, bool):
            out += f"[{part}]"
        else:
            text = str(part)
            # A key with a newline or NUL in it must not break the one-line message.
            text = text if text.isprintable() else text.encode("unicode_escape").decode()
            out += f".{text}" if out else text
    return out


LONGEST_WORD = 120
LONGEST_MESSAGE = 1000


def bounded(text: str, longest: int = LONGEST_MESSAGE) -> str:
    """`text` with every run of more than LONGEST_WORD non-blank characters (a pasted value,
    a path) cut in the middle, and the whole cut at `longest`: never a huge value echoed."""

    def cut(match: re.Match[str]) -> str:
        word = match.group(0)
        return f"{word[:80]}...({len(word) - 110:,} more)...{word[-30:]}"

    text = re.sub(rf"\S{{{LONGEST_WORD + 1},}}", cut, text)
    if len(text) <= longest:
        return text
    return f"{text[: longest - 30]}... ({len(text) - longest + 30:,} more characters)"


def in_file(problem: Problem, lines: Mapping[KeyPath, int]) -> Problem:
    """`problem` at the line of the nearest key the file writes (`lines`: the file's key
    paths) when its own key is a default or derived one, which the message then says."""
    path = problem.path
    if problem.missing or path in lines:
        return problem
    above = (path[:end] for end in range(len(path) - 1, 0, -1))
    written = next((key for key in above if key in lines), ())
    where = f"{format_path(written)}, line {lines[written]}" if written else "none"
    message = f"{problem.message} (not in the file: a default or derived value; nearest key "
    message += f"written: {where})"
    return replace(problem, line=lines.get(written), message=message)


MOST_ALIKE = 3
"""Problems of one kind shown before "and N more like it"."""
MOST_LINES = 50
"""Problem lines shown in all, before "and N more problems"."""

_VARYING = re.compile(r"'[^']*'|\"[^\"]*\"|\d[\d,._]*")


def _kind(problem: Problem) -> str:
    """Problems alike but for their place and values (quoted text and numbers)."""
    return _VARYING.sub("_", problem.message)


def _lines(shown: str, ordered: list[Problem]) -> list[str]:
    kinds: dict[str, list[Problem]] = {}
    for problem in ordered:
        kinds.setdefault(_kind(problem), []).append(problem)
    seen: dict[str, int] = {}
    out: list[str] = []
    for problem in ordered:
        kind = _kind(problem)
        seen[kind] = index = seen.get(kind, 0) + 1
        if index <= MOST_ALIKE:
            out.append(_format(shown, problem))
        if index == MOST_ALIKE and len(kinds[kind]) > MOST_ALIKE:
            rest = kinds[kind][MOST_ALIKE:]
            numbered = [p.line for p in rest if p.line is not None]
            first, last = min(numbered, default=0), max(numbered, default=0)
            where = f" (lines {first}-{last})" if first < last else f" (line {last})"
            where = where if numbered else ""
            out.append(f"{shown}: and {len(rest):,} more like it{where}")
    if len(out) > MOST_LINES:
        hidden = len(out) - MOST_LINES + 1
        out = [*out[: MOST_LINES - 1], f"{shown}: and {hidden:,} more lines of problems"]
    return out


def _format(shown: str, problem: Problem) -> str:
    where = shown if problem.line is None else f"{shown}:{problem.line}"
    key = bounded(format_path(problem.path), 120)
    message = bounded(problem.message)
    return f"{where} {key}: {message}" if key else f"{where}: {message}"


def profile_error(shown: str, problems: list[Problem]) -> ProfileError:
    ordered = sorted(problems, key=lambda p: p.line or 0)
    count = f"{len(ordered)} problem" + ("s" if len(ordered) != 1 else "")
    return ProfileError(f"invalid profile {shown} ({count})", _lines(shown, ordered))
