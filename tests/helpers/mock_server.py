"""The mock OpenAI-compatible server (tests/mockserver/mock_openai.py), loaded by path: it
measures qgate's own client (known TTFT and ITL) and injects faults; never an engine. Also a
stand-in runtime in front of it, and the loader the unit tests use for scripts outside the
package (the fault proxy and launcher in perf/faults/)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from qgate.core.records import Role
from qgate.core.serving import EffectiveConfig

ROOT = Path(__file__).resolve().parents[2]
MOCK = ROOT / "tests" / "mockserver" / "mock_openai.py"


def load_by_path(name: str, path: Path) -> ModuleType:
    """The module at `path`, imported as `name` (and registered in sys.modules, so that its
    dataclasses and pickling find it)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def load_mock() -> ModuleType:
    """The mock server's module, imported from its file."""
    return load_by_path("mock_openai", MOCK)


class MockRuntime:
    """The parts of a runtime the quality stage uses, in front of the mock server (an endpoint
    qgate did not start); it counts the stage's liveness checks."""

    log_path = None

    def __init__(self, role: Role, url: str) -> None:
        self.role = role
        self.base_url = url
        self.served_model = "mock"
        self.alive_checks = 0

    def headers(self) -> dict[str, str]:  # the Runtime protocol's member: none here
        return {}

    def check_alive(self) -> None:
        self.alive_checks += 1

    def effective_config(self) -> EffectiveConfig:
        return EffectiveConfig(
            role=self.role, kind="endpoint", base_url=self.base_url, served_model="mock"
        )
