"""The engine registry: which class runs each `engine.kind`, and what each engine declares.

Entries are lazy ("module:Class", loaded on first use, as in lm-eval's
registry), so `qgate validate` and `--help` import no engine module they do
not need. Adding an engine is one module with a class derived from
`ServerProcess` (a process qgate starts) or from `EngineDecl` + `Lifecycle`,
plus one `register()` call or one line in `_BUILTIN`.

Each engine declares, at class level:
- `kind`: the name profiles use in `engine.kind`;
- `features`: what it serves beyond the OpenAI API (qgate/core/features.py);
- `metrics`: the names of its Prometheus counters qgate reads, or None;
- `spec_issues(launch)`: problems of an engine block for this kind (validate time);
- `from_profile(profile, role, model_path, run_dir)`: a not yet started runtime.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from qgate.core.features import Feature
from qgate.core.serving import MetricNames

if TYPE_CHECKING:
    from qgate.core.records import Role
    from qgate.core.serving import Runtime
    from qgate.profile import EngineLaunch, Profile
    from qgate.profile.base import KeyPath

__all__ = [
    "EngineDecl",
    "MetricNames",
    "UnknownEngine",
    "engine_class",
    "engine_kinds",
    "register",
    "unknown_engine_message",
]


class EngineDecl:
    """What an engine declares; the defaults suit an engine that serves only the OpenAI API."""

    kind: ClassVar[str] = ""
    features: ClassVar[frozenset[Feature]] = frozenset()
    metrics: ClassVar[MetricNames | None] = None
    starts_process: ClassVar[bool] = False

    @classmethod
    def served_features(cls, launch: EngineLaunch) -> frozenset[Feature]:
        """The features this engine serves as configured by `launch`."""
        return cls.features

    @classmethod
    def spec_issues(cls, launch: EngineLaunch) -> list[tuple[KeyPath, str]]:
        """Problems of an engine block of this kind (paths relative to the block)."""
        issues: list[tuple[KeyPath, str]] = []
        if launch.command is not None:
            issues.append((("command",), "only valid when kind is 'command'"))
        if launch.features is not None:
            why = "only valid for kinds 'command' and 'endpoint'"
            issues.append((("features",), f"{cls.kind} declares its own features; {why}"))
        return issues

    @classmethod
    def from_profile(cls, profile: Profile, role: Role, model_path: Path, run_dir: Path) -> Runtime:
        """A not yet started runtime for `role`."""
        raise NotImplementedError


_BUILTIN: dict[str, str] = {
    "vllm": "qgate.runtime.vllm_server:VllmServer",
    "endpoint": "qgate.runtime.endpoint:Endpoint",
    "sglang": "qgate.runtime.sglang_server:SglangServer",
    "command": "qgate.runtime.command_server:CommandServer",
}
_registry: dict[str, str | type[EngineDecl]] = dict(_BUILTIN)


class UnknownEngine(LookupError):
    """A kind no engine is registered for."""


def engine_kinds() -> list[str]:
    """Registered kinds, in registration order."""
    return list(_registry)


def unknown_engine_message(kind: str) -> str:
    """lm-eval's form, with a suggestion for a near miss."""
    import difflib

    kinds = engine_kinds()
    near = difflib.get_close_matches(kind, kinds, n=1, cutoff=0.6)
    hint = f" (did you mean '{near[0]}'?)" if near else ""
    return f"Unknown engine '{kind}'{hint}. Available: {', '.join(kinds)}"


def register(kind: str, engine: str | type[EngineDecl]) -> None:
    """Add (or replace) the engine for `kind`: a class, or "module:Class" to load lazily."""
    if not kind or not kind.isidentifier():
        raise ValueError(f"engine kind must be an identifier, not {kind!r}")
    _registry[kind] = engine


def engine_class(kind: str) -> type[EngineDecl]:
    """The engine class of `kind`; UnknownEngine (with the available kinds) otherwise."""
    entry = _registry.get(kind)
    if entry is None:
        raise UnknownEngine(unknown_engine_message(kind))
    if isinstance(entry, str):
        module, _, name = entry.partition(":")
        loaded = getattr(importlib.import_module(module), name)
        if not (isinstance(loaded, type) and issubclass(loaded, EngineDecl)):
            raise TypeError(f"{entry} is not an engine class")
        _registry[kind] = loaded
        return loaded
    return entry
