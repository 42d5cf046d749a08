from __future__ import annotations

from collections.abc import Iterator

import pytest
from helpers.mock_server import load_mock


@pytest.fixture(scope="session")
def mock_url() -> Iterator[str]:
    """Base URL (ending in /v1) of the mock server in its own process: TTFT 30 ms, ITL 5 ms."""
    with load_mock().running(ttft_ms=30.0, itl_ms=5.0) as url:
        yield url
