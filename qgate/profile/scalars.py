"""YAML scalars a profile refuses because YAML 1.1 and YAML 1.2 read them differently.

`qgate.core.yamlload` reads `yes`, `off`, `010` or `1:30` as YAML 1.2 does (text, except
`010`) and lists each; PyYAML alone (YAML 1.1) would have made them true, false, 8 and 90.
Neither reading can be assumed to be what the writer meant, so each is refused with both
readings and what to write instead, except a word that the key names as one of its own
choices (`stop: off`, where `off` is one of 'off', 'settled', 'verdict').
"""

from __future__ import annotations

import types
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel

from qgate.core.yamlload import AmbiguousScalar, KeyPath
from qgate.profile.model import Profile

__all__ = ["ambiguous_problems", "word_choices"]


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
