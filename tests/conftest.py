"""How `make test` spreads the suite over two workers (pytest-xdist, `-n 2`).

The integration tests start real servers and must run one after another: they form one unit
of work, on one worker, while the other worker runs the unit tests. The grouping is by path,
not by xdist's `xdist_group` mark: under pytest 9.2 that mark's nodeid suffix no longer
reaches the scheduler (pytest-dev/pytest-xdist#1386), and the tests would be spread one by
one, two servers' tests at once.
"""

from __future__ import annotations

from typing import Any

import pytest

INTEGRATION = "tests/integration/"


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Every integration test in one work unit; each unit test a unit of its own."""
    from xdist.scheduler import LoadScopeScheduling  # only under xdist, which calls this hook

    class IntegrationInOne(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return INTEGRATION if nodeid.startswith(INTEGRATION) else nodeid

    return IntegrationInOne(config, log)
