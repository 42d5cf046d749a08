"""Suites beyond the schema's own fields: the settings of plug-in suites under `quality:`.

A suite an installed distribution adds (entry-point group `qgate.suites`) is configured
like a built-in one, under `quality.<its key>`, though `QualitySpec` has no field for it:
`QualitySpec` asks `setting_model(key)` for the model of every key it does not declare
(the suite registry answers: qgate/profile/suites.py installs the look-up when it is
imported), validates the setting with it and keeps it beside its fields (read with
`getattr(spec, key)`, written by `model_dump`, so a report's resolved profile holds it).
A key that is neither a field nor a registered suite is refused exactly as before: an
`extra_forbidden` error, reported with the other errors of the block.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

__all__ = ["look_up_with", "setting_model", "split_settings"]

_LOOK_UP: list[Callable[[str], type[BaseModel] | None]] = []


def look_up_with(look_up: Callable[[str], type[BaseModel] | None]) -> None:
    """Install the suite registry's answer to "which model configures key?" (None: no suite)."""
    _LOOK_UP[:] = [look_up]


def setting_model(key: str) -> type[BaseModel] | None:
    """The profile model of the plug-in suite configured by `quality.<key>`, or None."""
    return _LOOK_UP[0](key) if _LOOK_UP else None


def _replayable(error: Mapping[str, Any]) -> dict[str, Any]:
    """`error` in a form `ValidationError.from_exception_data` takes (a custom type as a
    value error with the same message)."""
    try:
        ValidationError.from_exception_data("check", [error])  # type: ignore[list-item]
    except KeyError:
        return {
            "type": "value_error",
            "loc": error["loc"],
            "input": error["input"],
            "ctx": {"error": ValueError(error["msg"])},
        }
    return dict(error)


def split_settings(
    title: str,
    declared: Mapping[str, Any],
    data: Mapping[str, Any],
    validate: Callable[[dict[str, Any]], Any],
) -> tuple[Any, dict[str, BaseModel]]:
    """(the block validated by `validate` without the plug-in keys, the plug-in settings);
    one ValidationError with every problem of both (an unknown key as `extra_forbidden`)."""
    own: dict[str, Any] = {}
    extra: dict[str, BaseModel] = {}
    errors: list[dict[str, Any]] = []
    for key, value in data.items():
        model = setting_model(key) if isinstance(key, str) and key not in declared else None
        if key in declared or model is None:
            own[key] = value
            continue
        try:
            extra[key] = model.model_validate(value)
        except ValidationError as exc:
            errors += [{**e, "loc": (key, *e["loc"])} for e in exc.errors(include_url=False)]
    unknown = [k for k in own if k not in declared]
    errors += [{"type": "extra_forbidden", "loc": (k,), "input": own.pop(k)} for k in unknown]
    try:
        block = validate(own)
    except ValidationError as exc:
        if not errors:
            raise
        errors = [*(dict(e) for e in exc.errors(include_url=False)), *errors]
    if errors:
        raise ValidationError.from_exception_data(title, [_replayable(e) for e in errors])  # type: ignore[misc]
    return block, extra
