"""The mock OpenAI-compatible server (tests/mockserver/mock_openai.py), loaded by path: it
measures qgate's own client (known TTFT and ITL) and injects faults; never an engine."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

MOCK = Path(__file__).resolve().parents[1] / "mockserver" / "mock_openai.py"


def load_mock() -> ModuleType:
    """The mock server's module, imported from its file."""
    spec = importlib.util.spec_from_file_location("mock_openai", MOCK)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
