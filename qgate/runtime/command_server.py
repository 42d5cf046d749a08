"""Any command that starts an OpenAI-compatible server (ATOM, a runtime adapter, ...).

The profile gives the command as words with placeholders ({model} {port}
{host} {served_name}, and {python}: the interpreter running qgate, for a
server installed beside it) and declares the features the server serves (none
beyond the OpenAI API by default). `args` follow the command as
`--KEY VALUE`, KEY exactly as written (such servers spell flags their own way,
e.g. ATOM's `--kv_cache_dtype`). Without {served_name} in the command the
server is expected to answer to the model path, as ATOM's server does.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from qgate.core.features import Feature
from qgate.core.records import Role
from qgate.errors import BadInput
from qgate.profile.base import EngineArgValue
from qgate.runtime.flags import plain_flags
from qgate.runtime.server import ServerProcess

if TYPE_CHECKING:
    from qgate.profile import EngineLaunch, Profile
    from qgate.profile.base import KeyPath

__all__ = ["PLACEHOLDERS", "CommandServer", "fill"]

PLACEHOLDERS = ("model", "port", "host", "served_name", "python")
_FIELD = re.compile(r"\{([^{}]*)\}")


def fill(template: list[str], values: dict[str, str]) -> list[str]:
    """Each word with its placeholders replaced; BadInput for an unknown one."""
    out = []
    for word in template:
        for name in _FIELD.findall(word):
            if name not in values:
                raise BadInput(f"engine.command: unknown placeholder {{{name}}}")
        out.append(_FIELD.sub(lambda m: values[m.group(1)], word))
    return out


class CommandServer(ServerProcess):
    """A server started by the profile's own command."""

    kind: ClassVar[str] = "command"
    takes_cpu_dtype: ClassVar[bool] = True  # its args follow as --KEY VALUE: it gets --dtype
    template: list[str]
    declared: frozenset[Feature]

    @classmethod
    def served_features(cls, launch: EngineLaunch) -> frozenset[Feature]:
        return frozenset(launch.features or ())

    @classmethod
    def spec_issues(cls, launch: EngineLaunch) -> list[tuple[KeyPath, str]]:
        issues: list[tuple[KeyPath, str]] = []
        if not launch.command:
            return [
                (
                    ("command",),
                    "required when kind is 'command': the words that start "
                    "the server, e.g. [python, -m, my.server, --port, '{port}']",
                )
            ]
        if launch.launcher is not None:
            issues.append((("launcher",), "not used by kind 'command' (give 'command')"))
        for index, word in enumerate(launch.command):
            for name in _FIELD.findall(word):
                if name not in PLACEHOLDERS:
                    known = " ".join(f"{{{p}}}" for p in PLACEHOLDERS)
                    issues.append(
                        (("command", index), f"unknown placeholder {{{name}}}; known: {known}")
                    )
        if launch.port is None and not any("{port}" in w for w in launch.command):
            issues.append((("command",), "must contain {port}, or set a fixed 'port'"))
        return issues

    @classmethod
    def merge_args(
        cls, shared: Mapping[str, EngineArgValue], role: Mapping[str, EngineArgValue]
    ) -> dict[str, EngineArgValue]:
        """Keys kept as written: such servers mix `--kv_cache_dtype` and `--max-model-len`."""
        return {**shared, **role}

    def configure(self, profile: Profile, role: Role) -> None:
        launch = profile.engine_of(role)
        self.set_template(list(launch.command or ()))

    def set_template(self, template: list[str]) -> None:
        """The command words; without {served_name}, the server answers to the model path."""
        self.template = template
        if not any("{served_name}" in word for word in template):
            self._served_model = str(self.model_path)

    def build_command(self, port: int) -> list[str]:
        values = {
            "model": str(self.model_path),
            "port": str(port),
            "host": self.host,
            "served_name": self.served_model,
            "python": sys.executable,
        }
        return [*fill(self.template, values), *plain_flags(self.args, lambda key: key)]

    @classmethod
    def from_template(
        cls,
        template: list[str],
        *,
        role: Role,
        model_path: Path,
        served_model: str,
        run_dir: Path,
        **kw: object,
    ) -> CommandServer:
        """A command server without a profile (tests, scripts)."""
        fields = {"model_path": model_path, "served_model": served_model, "run_dir": run_dir}
        server = cls(role=role, **fields, **kw)  # type: ignore[arg-type]
        server.set_template(template)
        return server
