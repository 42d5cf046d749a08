from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

MOCK = Path(__file__).resolve().parents[2] / "mockserver" / "mock_openai.py"


def load_mock() -> ModuleType:
    spec = importlib.util.spec_from_file_location("mock_openai", MOCK)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="session")
def mock_url() -> Iterator[str]:
    """Base URL (ending in /v1) of the mock server in its own process: TTFT 30 ms, ITL 5 ms."""
    with load_mock().running(ttft_ms=30.0, itl_ms=5.0) as url:
        yield url
