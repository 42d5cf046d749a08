"""Settings that would do nothing where they stand, and lists that repeat themselves.

A setting of a pass, a stage or a mode that the profile does not enable is ignored
silently at run time, so a user who set it believes it took effect. Each such pair
is one rule in `INERT` (the setting, and why it does nothing here), checked only for
keys the profile writes (`model_fields_set`), never for defaults. Lists of levels,
names or choices must not repeat an entry, compared case-folded (folder names and
result ids of two entries that differ only in case collide on many file systems).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from qgate.core.yamlload import KeyPath
from qgate.profile import (
    AccuracyPolicy,
    ContextLadder,
    EngineLaunch,
    FixedScenario,
    LivesSpec,
    LmEvalTask,
    MathSuite,
    PerfProbes,
    Profile,
    QualitySpec,
    RecallSuite,
    ReuseSpec,
    WeightEmulation,
)
from qgate.profile.engine_checks import starts_process

__all__ = [
    "INERT",
    "REPEATS_MEAN_SOMETHING",
    "endpoint_round_problems",
    "inert_problems",
    "repeat_problems",
]

Found = list[tuple[KeyPath, str]]
Rule = Callable[[Any], str | None]

_SIZED = "detect sizes the suite and its count replaces this; remove one of the two"
_NO_PROBES = "gates the life probes, and probes is 0: set probes, or remove this"
_NO_ITEMS = "gates the probes, and items is 0: set items, or remove this"

INERT: dict[tuple[type[BaseModel], str], Rule] = {
    (AccuracyPolicy, "rule"): lambda p: (
        "decides how max_drop is judged, and max_drop is not set: set max_drop, or remove this"
        if p.max_drop is None
        else None
    ),
    (AccuracyPolicy, "power"): lambda p: (
        "detect.power is the power when detect is given; remove this" if p.detect else None
    ),
    (MathSuite, "limit"): lambda p: _SIZED if p.detect else None,
    (RecallSuite, "haystacks"): lambda p: _SIZED if p.detect else None,
    (ContextLadder, "per_bucket"): lambda p: _SIZED if p.detect else None,
    (LmEvalTask, "limit"): lambda p: _SIZED if p.detect else None,
    (MathSuite, "long_tokens"): lambda p: (
        None
        if "long" in p.prompts
        else "only the long prompt form has a preamble; prompts has no 'long'"
    ),
    (QualitySpec, "stop_block"): lambda q: (
        "only used when stop is 'settled', 'verdict' or 'looks' (stop is 'off')"
        if q.stop == "off"
        else None
    ),
    (QualitySpec, "looks"): lambda q: (
        None if q.stop == "looks" else f"only used when stop is 'looks' (stop is {q.stop!r})"
    ),
    (ReuseSpec, "load"): lambda r: (
        None
        if "load" in r.passes
        else "only the 'load' pass sends filler traffic; passes has no 'load'"
    ),
    (ReuseSpec, "reset_wait_s"): lambda r: (
        None
        if "restored" in r.passes
        else "only the 'restored' pass resets the device cache; passes has no 'restored'"
    ),
    (ReuseSpec, "min_exercised_share"): lambda r: (
        None
        if {"warm", "restored"} & set(r.passes)
        else "only the warm and restored passes are judged by a share (the load pass by "
        "load.min_preemptions)"
    ),
    (FixedScenario, "burstiness"): lambda s: (
        "only shapes open-loop arrivals; set request_rate too, or remove this"
        if s.request_rate is None
        else None
    ),
    (LivesSpec, "idle_s"): lambda s: (
        "only sets the pause before the idle probes, and probes is 0: set probes, or remove this"
        if s.probes == 0 and s.idle_s > 0
        else None
    ),
    (LivesSpec, "max_flips"): lambda s: _NO_PROBES if s.probes == 0 else None,
    (AccuracyPolicy, "show"): lambda p: (
        None
        if p.rule == "bound" and p.max_drop is not None and 0 < p.max_drop < 1
        else "only sizes a max_drop gate judged by its bound: set rule: bound and a max_drop "
        "between 0 and 1, or remove this"
    ),
    (PerfProbes, "max_flips"): lambda p: _NO_ITEMS if p.items == 0 else None,
    (PerfProbes, "significance"): lambda p: _NO_ITEMS if p.items == 0 else None,
    (PerfProbes, "alpha"): lambda p: _NO_ITEMS if p.items == 0 else None,
    (WeightEmulation, "group_size"): lambda w: (
        None
        if w.granularity == "group"
        else f"only used with granularity 'group' (granularity is {w.granularity!r})"
    ),
}
"""(model, field) -> why the field, where written, does nothing (None: it does something)."""

REPEATS_MEAN_SOMETHING: frozenset[tuple[type[BaseModel], str]] = frozenset(
    {(EngineLaunch, "launcher"), (EngineLaunch, "command")}
)
"""Lists whose entries may repeat: command lines (`-m x -m y`)."""


def _rule(model: type[BaseModel], name: str) -> Rule | None:
    return next((r for o in model.__mro__ if (r := INERT.get((o, name))) is not None), None)


def _children(value: Any, path: KeyPath) -> list[tuple[KeyPath, BaseModel]]:
    if isinstance(value, BaseModel):
        return [(path, value)]
    if isinstance(value, list):
        return [((*path, i), v) for i, v in enumerate(value) if isinstance(v, BaseModel)]
    if isinstance(value, dict):
        return [((*path, k), v) for k, v in value.items() if isinstance(v, BaseModel)]
    return []


def inert_problems(model: BaseModel, path: KeyPath = ()) -> Found:
    """Every written setting that does nothing where it stands (`INERT`), in every model."""
    found: Found = []
    for name in type(model).model_fields:
        rule = _rule(type(model), name)
        why = rule(model) if rule is not None and name in model.model_fields_set else None
        if why is not None:
            found.append(((*path, name), why))
        for where, child in _children(getattr(model, name), (*path, name)):
            found += inert_problems(child, where)
    return found


def _fold(item: Any) -> Any:
    return item.casefold() if isinstance(item, str) else item


def _show(item: Any) -> str:
    text = repr(item)
    return text if len(text) <= 40 else text[:37] + "..."


def _repeats(items: list[Any], path: KeyPath) -> Found:
    found: Found = []
    first: dict[Any, int] = {}
    for index, item in enumerate(items):
        if isinstance(item, list):
            found += _repeats(item, (*path, index))
            continue
        try:
            key = (type(item) is bool, _fold(item))  # true is not 1
            earlier = first.setdefault(key, index)
        except TypeError:
            continue
        if earlier != index:
            case = " (they differ only in case)" if items[earlier] != item else ""
            found.append(
                (
                    (*path, index),
                    f"repeats {_show(item)}, first at [{earlier}]{case}; list each entry once",
                )
            )
    return found


def repeat_problems(model: BaseModel, path: KeyPath = ()) -> Found:
    """Entries that repeat an earlier one of the same list (case-folded), in every model."""
    found: Found = []
    for name in type(model).model_fields:
        value = getattr(model, name)
        allowed = any((o, name) in REPEATS_MEAN_SOMETHING for o in type(model).__mro__)
        if isinstance(value, list) and not allowed:
            scalars = [v for v in value if not isinstance(v, BaseModel)]
            if len(scalars) == len(value):
                found += _repeats(value, (*path, name))
        for where, child in _children(value, (*path, name)):
            found += repeat_problems(child, where)
    return found


def endpoint_round_problems(profile: Profile) -> Found:
    """perf.rounds > 1 restarts both sides' servers each round: an endpoint cannot restart."""
    if profile.perf is None or profile.perf.rounds <= 1:
        return []
    fixed = [r for r in ("reference", "candidate") if not starts_process(profile.engine_of(r).kind)]
    if not fixed:
        return []
    return [
        (
            ("perf", "rounds"),
            f"each round restarts both sides' servers, and qgate cannot restart the "
            f"{' and the '.join(fixed)}'s running endpoint: set rounds: 1 (blocks still "
            "interleave the sides within one life)",
        )
    ]
