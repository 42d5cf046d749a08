"""YAML scalars a profile refuses because YAML 1.1 and YAML 1.2 read them differently.

`qgate.core.yamlload` reads `yes`, `off`, `010` or `1:30` as YAML 1.2 does (text, except
`010`) and lists each; PyYAML alone (YAML 1.1) would have made them true, false, 8 and 90.
Neither reading can be assumed to be what the writer meant, so each is refused with both
readings and what to write instead, except a word that the key names as one of its own
choices (`stop: off`, where `off` is one of 'off', 'settled', 'verdict').

A number written in other digits than ASCII 0-9 (`"٤٠"`, `０.１`, `²`) is text to YAML, to
pydantic and to most programs, but Python's int() and float() read `٤٠` as 40: an engine
argument would mean one thing to the check and another to the engine. Each is refused with
its ASCII spelling.
"""

from __future__ import annotations

import re
import types
import unicodedata
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel

from qgate.core.yamlload import AmbiguousScalar, KeyPath
from qgate.profile.model import Profile

__all__ = ["ambiguous_problems", "foreign_digit_problems", "word_choices"]


def _models_and_literals(annotation: Any) -> tuple[list[type[BaseModel]], set[str]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation], set()
    origin = get_origin(annotation)
    if origin is Literal:
        return [], {a for a in get_args(annotation) if isinstance(a, str)}
    if origin is Annotated:
        return _models_and_literals(get_args(annotation)[0])
    models: list[type[BaseModel]] = []
    words: set[str] = set()
    if origin in (Union, types.UnionType, list, dict, tuple):
        for arg in get_args(annotation):
            found, more = _models_and_literals(arg)
            models += found
            words |= more
    return models, words


def word_choices(path: KeyPath, root: type[BaseModel] = Profile) -> set[str]:
    """The words the key at `path` takes as named choices (its Literal values), if any."""
    models: list[type[BaseModel]] = [root]
    words: set[str] = set()
    for part in path:
        if not isinstance(part, str):
            continue  # a list index: the list's items have the choices
        owners = [m for m in models if part in m.model_fields]
        if not owners:
            if words:
                return set()  # a key below a choice: nothing there is named
            continue  # a free key (an engine argument, an environment variable): keep looking
        models, words = [], set()
        for owner in owners:
            found, more = _models_and_literals(owner.model_fields[part].annotation)
            models += found
            words |= more
    return words


def ambiguous_problems(ambiguous: list[AmbiguousScalar]) -> list[tuple[int, KeyPath, str]]:
    """(line, key path, message) of every ambiguous scalar the key does not name as a choice."""
    return [
        (a.line, a.path, a.message())
        for a in ambiguous
        if not (isinstance(a.yaml11, bool) and a.text in word_choices(a.path))
    ]


_ASCII_NUMBER = re.compile(r"[-+]?(?:\d[\d_]*)?(?:\.\d*)?(?:[eE][-+]?\d+)?", re.ASCII)


def _ascii_spelling(text: str) -> str | None:
    """`text` in ASCII digits when it is a number written with other digits ('٤٠' -> '40')."""
    if text.isascii() or not any(c.isdigit() for c in text):
        return None
    # NFKC folds full-width and superscript digits; decimal() maps the other scripts' digits
    folded = unicodedata.normalize("NFKC", text).strip()
    ascii_text = "".join(str(unicodedata.decimal(c)) if c.isdecimal() else c for c in folded)
    number = ascii_text.isascii() and _ASCII_NUMBER.fullmatch(ascii_text)
    return ascii_text if number and any(c.isdigit() for c in ascii_text) else None


def foreign_digit_problems(data: Any, path: KeyPath = ()) -> list[tuple[KeyPath, str]]:
    """(key path, message) of every value that is a number written in non-ASCII digits."""
    if isinstance(data, dict):
        return [
            p for key, value in data.items() for p in foreign_digit_problems(value, (*path, key))
        ]
    if isinstance(data, list):
        return [
            p for i, value in enumerate(data) for p in foreign_digit_problems(value, (*path, i))
        ]
    spelled = _ascii_spelling(data) if isinstance(data, str) else None
    if spelled is None:
        return []
    shown = data if len(data) <= 24 else data[:21] + "..."
    ascii_shown = spelled if len(spelled) <= 24 else spelled[:21] + "..."
    return [
        (
            path,
            f"{shown!r} is the number {ascii_shown} in digits other than ASCII 0-9, which "
            f"some programs read as a number and others as text: write {ascii_shown}",
        )
    ]
