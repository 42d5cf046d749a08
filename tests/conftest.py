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
# Integration modules that start no real server (stand-in engines only, tests/integration/
# fake_vllm.py): they need not wait in the servers' line, and run on the other worker beside
# it (CI time). Not the Ray modules: two simulated Ray clusters at once would share the
# machine's Ray address file.
SERVERLESS = ("tests/integration/test_runtime_faults.py",)


def scope_of(nodeid: str) -> str:
    """The xdist work unit of a test: INTEGRATION for every test that starts a real server (one
    after another on one worker), its module for a SERVERLESS module, else the test itself."""
    module = nodeid.split("::", 1)[0]
    if module in SERVERLESS:
        return module
    return INTEGRATION if nodeid.startswith(INTEGRATION) else nodeid


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Every integration test that starts a server in one work unit; each unit test a unit of
    its own; each SERVERLESS module one unit."""
    from xdist.scheduler import LoadScopeScheduling  # only under xdist, which calls this hook

    class IntegrationInOne(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

    return IntegrationInOne(config, log)
