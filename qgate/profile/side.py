"""One side of a profile (reference or candidate) as it runs: the one owner of its settings.

A side's engine is its own `engine` block, else the top-level one; its arguments are that
block's with the side's over them, keys in snake_case (one rule: `max-model-len` and
`max_model_len` are the same key); its environment is the block's with the side's over it;
its engine version is what its engine class declares (qgate/profile/engines.py). Every
reader (the reference cache key, the haystack clip, the memory shares, the plan, verify)
asks `side(profile, role)` instead of merging the blocks itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from qgate.profile.base import EngineArgValue, KeyPath, snake_args, snake_key
from qgate.profile.engines import EngineDecl, engine_class
from qgate.profile.model import EngineLaunch, Profile, RuntimeSpec

__all__ = ["Side", "side", "side_as"]


@dataclass(frozen=True)
class Side:
    """A side's effective engine, arguments, environment and engine version."""

    role: str
    launch: EngineLaunch
    spec: RuntimeSpec

    @property
    def kind(self) -> str:
        """The engine kind (`engine.kind` of the side's engine block)."""
        return self.launch.kind

    @property
    def engine(self) -> type[EngineDecl]:
        """The engine class that runs this side."""
        return engine_class(self.launch.kind)

    @property
    def args(self) -> dict[str, EngineArgValue]:
        """The side's engine arguments over its engine block's, keys in snake_case."""
        return snake_args(self.launch.args, self.spec.args)

    @property
    def launch_args(self) -> dict[str, EngineArgValue]:
        """The arguments as the engine passes them on (its own merge: a `command` server keeps
        keys as written, since such servers spell flags their own way)."""
        return self.engine.merge_args(self.launch.args, self.spec.args)

    @property
    def env(self) -> dict[str, str]:
        """The side's environment over its engine block's."""
        return {**self.launch.env, **self.spec.env}

    def arg_path(self, name: str) -> KeyPath | None:
        """Where the argument `name` (spelled either way) is written: the side's own args,
        else its engine block's; None when unset."""
        block: KeyPath = (self.role, "engine") if self.spec.engine is not None else ("engine",)
        for where, layer in (
            ((self.role, "args"), self.spec.args),
            ((*block, "args"), self.launch.args),
        ):
            for key in layer:
                if snake_key(key) == snake_key(name):
                    return (*where, key)
        return None

    def arg(self, name: str) -> EngineArgValue:
        """One argument by name, spelled either way (None when unset)."""
        return self.args.get(snake_key(name))

    @property
    def max_model_len(self) -> int | None:
        """The context length the side asks for, or None."""
        value = self.arg("max_model_len")
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            return None
        # isdigit() also takes '²' and '٤٠' (the loader refuses them): int() fails or guesses
        return int(value) if str(value).isascii() and str(value).isdigit() else None

    def engine_version(self, packages: Mapping[str, str]) -> str | None:
        """The engine's version, as the engine declares it (`packages`: installed versions of
        the machine that serves the side, the fingerprint's)."""
        return self.engine.version(self.launch, packages)


def side(profile: Profile | Any, role: str) -> Side:
    """The side `role` ('reference' or 'candidate') of `profile`."""
    return side_as(profile, role, getattr(profile, role))


def side_as(profile: Profile | Any, role: str, spec: RuntimeSpec) -> Side:
    """The side `role` of `profile` as `spec` would run it (a setting being tried, such as a
    dtype the machine can serve, before it is the profile's)."""
    launch = spec.engine if spec.engine is not None else profile.engine
    return Side(role=role, launch=launch, spec=spec)
