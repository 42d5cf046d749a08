"""Building blocks of every profile model: the strict base, key paths, cross-field issues.

The lowest layer of the profile: the models (qgate/profile*.py), their checks
and the runtime's command line build on it, and it imports nothing of qgate.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "MAX_TEXT",
    "RESERVED_ARGS",
    "EngineArgValue",
    "Fraction",
    "KeyIssue",
    "KeyPath",
    "Scalar",
    "Strict",
    "snake_args",
    "snake_key",
]

Scalar = str | int | float | bool | None
KeyPath = tuple[str | int, ...]


class KeyIssue(ValueError):
    """Cross-field problems raised by a model validator, each tied to a key path.

    The path is relative to the model that raises it, so that the loader can
    point at the exact key and line (e.g. `candidate.endpoint`) instead of at
    the model as a whole. `str()` stays readable for callers that validate
    without the loader.
    """

    def __init__(self, issues: list[tuple[KeyPath, str]]) -> None:
        self.issues = issues
        super().__init__("; ".join(f"{'.'.join(map(str, p))}: {m}" if p else m for p, m in issues))


EngineArgValue = Scalar | list[str | int | float | bool]
Fraction = Annotated[float, Field(ge=0.0, le=1.0)]


MAX_TEXT = 10_000
"""Characters of any one text in a profile (a description, an engine argument, a path)."""


def _leaves(annotation: Any) -> list[Any]:
    """The alternatives of a type: `int | list[int] | None` -> [int, list[int], None]."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _leaves(get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        return [leaf for arg in get_args(annotation) for leaf in _leaves(arg)]
    return [annotation]


def _bool_for_number(annotation: Any, value: Any, path: KeyPath) -> list[tuple[KeyPath, str]]:
    """Where a YAML true/false stands for a number (pydantic would read true as 1)."""
    leaves = _leaves(annotation)
    if isinstance(value, bool):
        takes_bool = any(
            leaf in (bool, Any) or (get_origin(leaf) is Literal and value in get_args(leaf))
            for leaf in leaves
        )
        number = any(leaf in (int, float) for leaf in leaves)
        return [(path, "must be a number, not true or false")] if number and not takes_bool else []
    kind = list if isinstance(value, list) else dict if isinstance(value, dict) else None
    inner = [get_args(leaf)[-1] for leaf in leaves if kind and get_origin(leaf) is kind]
    if not inner:
        return []
    items = enumerate(value) if isinstance(value, list) else value.items()
    return [
        issue
        for key, item in items
        for issue in _bool_for_number(Union[tuple(inner)], item, (*path, key))  # noqa: UP007
    ]


class Strict(BaseModel):
    """Base of every profile model: unknown keys are errors; numbers are numbers.

    No float field takes infinity or NaN (in any spelling: `.inf`, "inf", "NaN"), no
    number field takes true or false (pydantic alone reads true as 1), and no text is
    longer than MAX_TEXT characters.
    """

    model_config = ConfigDict(
        extra="forbid", validate_default=True, allow_inf_nan=False, str_max_length=MAX_TEXT
    )

    @model_validator(mode="before")
    @classmethod
    def _no_bool_numbers(cls, data: Any) -> Any:
        if isinstance(data, dict):
            issues = [
                issue
                for name, field in cls.model_fields.items()
                if name in data
                for issue in _bool_for_number(field.annotation, data[name], (name,))
            ]
            if issues:
                raise KeyIssue(issues)
        return data


# Set by qgate from other parts of the profile; an engine arg for them would conflict.
RESERVED_ARGS: dict[str, str] = {
    "model": "model.path",
    "host": "engine.host",
    "port": "engine.port",
    "served_model_name": "model.served_name",
}


def snake_key(key: str) -> str:
    """The one spelling of an engine argument's name: `--max-model-len` -> `max_model_len`."""
    return key.strip("-").replace("-", "_")


def snake_args(*layers: Mapping[str, EngineArgValue]) -> dict[str, EngineArgValue]:
    """Engine-argument layers overlaid in order, keys compared in snake_case (`snake_key`)."""
    merged: dict[str, EngineArgValue] = {}
    for layer in layers:
        for key, value in layer.items():
            merged[snake_key(key)] = value
    return merged
