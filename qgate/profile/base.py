"""Building blocks of every profile model: the strict base, key paths, cross-field issues.

The lowest layer of the profile: the models (qgate/profile*.py), their checks
and the runtime's command line build on it, and it imports nothing of qgate.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
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


class Strict(BaseModel):
    """Base of every profile model: unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", validate_default=True)


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
