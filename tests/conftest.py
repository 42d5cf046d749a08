"""How `make test` spreads the suite over two workers (pytest-xdist, `-n 2`).

The integration tests start real servers: they run in two lines of work, each one unit of
work on one worker, one test after another within it. The two lines run side by side, and the
unit tests fill each worker once its line is done. Much of a line's time is waiting (server
imports and weight loads, idle pauses, Ray's start-up, HTTP round trips), so two lines overlap
well on two cores; one line left the unit tests' worker idle for most of the run (CI time).

The grouping is by path, not by xdist's `xdist_group` mark: under pytest 9.2 that mark's
nodeid suffix no longer reaches the scheduler (pytest-dev/pytest-xdist#1386), and the tests
would be spread one by one, two servers' tests at once.

What decides the lines:
- every module that uses the session's servers (`reference_server`,
  `fault_proxy`, `endpoint_run`: tests/integration/conftest.py) is in the first line: they are
  session-scoped per worker, and a second worker asking for one would start it again;
- both Ray modules are in one line: two simulated Ray clusters at once would share the
  machine's Ray address file;
- the lines' measured times are about equal (docs/measurements.md): with the Ray lives' stops no
  longer waiting out their grace, the second line also takes test_engines_real.py (its own
  servers: the SGLang and command engines, each through a launcher around vLLM) and
  test_runtime_faults_vllm.py (servers of its own): the first line measured ~950 s and the
  second ~850 s at a0a0c71 before it moved. At 5bccd5c (one run here, --durations=0) the
  second measured ~1180 s and the first ~1015 s; the first then lost the side-by-side Ctrl-C's
  two vLLM starts (stand-in servers now, test_runtime_faults.py) and took test_preview.py.

Each worker places its servers with core leases of its own (`QGATE_CORE_LEASES`, per worker):
a line's tests assert placements as its servers see them (a server started alone gets every
core), which leases shared with the other line would make depend on that line's timing.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

import pytest

INTEGRATION = "tests/integration/"
# The second line of server tests: modules that start their own servers only (never the
# session's), the two Ray modules together.
SECOND_LINE_SCOPE = "tests/integration/ (second line)"
SECOND_LINE = (
    "tests/integration/test_cluster_ray.py",
    "tests/integration/test_cluster_run.py",
    "tests/integration/test_engines_real.py",
    "tests/integration/test_multi_vllm.py",
    "tests/integration/test_runtime_faults_vllm.py",
    "tests/integration/test_upgrade_vllm.py",
)
# Integration modules that start no real server (stand-in engines only, tests/integration/
# fake_vllm.py): they need not wait in a servers' line, and run as a unit of their own.
SERVERLESS = ("tests/integration/test_runtime_faults.py",)
LEASES_ENV = "QGATE_CORE_LEASES"
OMP_WAIT_ENV = "OMP_WAIT_POLICY"


def scope_of(nodeid: str) -> str:
    """The xdist work unit of a test: SECOND_LINE_SCOPE for a SECOND_LINE module's, INTEGRATION
    for every other test that starts a real server, its module for a SERVERLESS module, else
    the test itself."""
    module = nodeid.split("::", 1)[0]
    if module in SERVERLESS:
        return module
    if module in SECOND_LINE:
        return SECOND_LINE_SCOPE
    return INTEGRATION if nodeid.startswith(INTEGRATION) else nodeid


def worker_leases(worker: str | None, environ: dict[str, str]) -> str | None:
    """The core-lease folder a worker's servers use: its own (per worker, per user) under
    xdist, unless one is set already; None outside xdist (qgate's default folder)."""
    if not worker or environ.get(LEASES_ENV):
        return None
    return os.path.join(tempfile.gettempdir(), f"qgate-core-leases-{os.getuid()}-{worker}")


def pytest_configure(config: pytest.Config) -> None:
    folder = worker_leases(os.environ.get("PYTEST_XDIST_WORKER"), dict(os.environ))
    if folder is not None:
        os.environ[LEASES_ENV] = folder  # subprocesses (qgate run, Ray's nodes) inherit it
    # The servers of both lines share the machine's cores (up to four at once on two cores).
    # OpenMP threads that spin while they wait then take the cores from the threads that have
    # work: four servers answering at once produced 78 output tokens/s spinning and 219 passive
    # (docs/measurements.md). Waiting changes no number a test reads; every server inherits it.
    os.environ.setdefault(OMP_WAIT_ENV, "PASSIVE")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """The server tests in two work units (the two lines); each unit test a unit of its own;
    each SERVERLESS module one unit."""
    from xdist.scheduler import LoadScopeScheduling  # only under xdist, which calls this hook

    class IntegrationInTwo(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

    return IntegrationInTwo(config, log)
