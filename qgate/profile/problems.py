"""One problem of a profile, and the line a person reads for it: FILE:LINE KEY.PATH: message.

Every line is bounded: a pasted value, a long path or a huge key is cut in the middle,
and a message cut at its end, so that no error ever echoes a huge value whole.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from qgate.core.yamlload import KeyPath
from qgate.errors import ProfileError

__all__ = ["LONGEST_MESSAGE", "LONGEST_WORD", "Problem", "bounded", "format_path", "profile_error"]


@dataclass(frozen=True)
class Problem:
    line: int | None
    path: KeyPath
    message: str


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


def _format(shown: str, problem: Problem) -> str:
    where = shown if problem.line is None else f"{shown}:{problem.line}"
    key = bounded(format_path(problem.path), 120)
    message = bounded(problem.message)
    return f"{where} {key}: {message}" if key else f"{where}: {message}"


def profile_error(shown: str, problems: list[Problem]) -> ProfileError:
    ordered = sorted(problems, key=lambda p: p.line or 0)
    count = f"{len(ordered)} problem" + ("s" if len(ordered) != 1 else "")
    return ProfileError(f"invalid profile {shown} ({count})", [_format(shown, p) for p in ordered])
