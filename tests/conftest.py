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
  On the Intel AMX kind (2026-12-05, one run, --durations=0) the modules summed to ~637 s on
  the first line and ~771 s on the second (units ~190 s): the detection smoke's 32 items add
  ~30 s to the first, and test_runtime_faults_vllm.py (~47 s, servers of its own) moved back
  to the first line (~715 s against ~725 s).

Each worker places its servers with core leases of its own (`QGATE_CORE_LEASES`, per worker):
a line's tests assert placements as its servers see them (a server started alone gets every
core), which leases shared with the other line would make depend on that line's timing.

The tests are hermetic (issue 56): the session (both workers) gets one home of its own, a
temporary folder that `XDG_CACHE_HOME` and `XDG_CONFIG_HOME` point into, and every variable
that would carry the user's qgate state into a test (a cache or evals folder, a signing key,
forced CPU flags, a Ray address, GitHub's job variables) is unset. The user's reference
cache, emulated checkpoints, keys and plans are not seen: `make demo` then `make test` gives
the results of `make test` alone (tests/unit/test_hermetic.py runs a sample both ways). Two
things the setup built are shared, read-only to the tests: the prepared embedded model (hard-linked
into the session's cache: `make setup` converts it once) and the engine environments
(`QGATE_ENGINE_ENVS`, content-keyed builds of pinned packages).
"""

from __future__ import annotations

import os
import shutil
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
    "tests/integration/test_upgrade_vllm.py",
)
# Integration modules that start no real server (stand-in engines only, tests/integration/
# fake_vllm.py): they need not wait in a servers' line, and run as a unit of their own.
SERVERLESS = ("tests/integration/test_runtime_faults.py",)
LEASES_ENV = "QGATE_CORE_LEASES"
OMP_WAIT_ENV = "OMP_WAIT_POLICY"
HOME_ENV = "QGATE_TEST_HOME"
ENGINES_ENV = "QGATE_ENGINE_ENVS"
# The user's qgate state that an environment variable carries: unset for the tests.
USER_STATE = (
    "QGATE_CACHE_DIR",
    "QGATE_CPU_FLAGS",
    "QGATE_DEBUG",
    "QGATE_EVALS_DIR",
    "QGATE_LOG_LEVEL",
    "QGATE_RAY_WORKDIR",
    "QGATE_SIGNING_KEY",
    "RAY_ADDRESS",
)
_OWN_HOME: list[str] = []  # the home this process made (the controller, or a lone pytest)


def hermetic_env(environ: dict[str, str], home: str, user_cache: str) -> dict[str, str | None]:
    """The changes that give the tests `home` instead of the user's state: the XDG folders
    into it, the engine environments kept where the user's build put them, every USER_STATE
    and GITHUB_* variable unset (None)."""
    changes: dict[str, str | None] = {
        HOME_ENV: home,
        "XDG_CACHE_HOME": os.path.join(home, "cache"),
        "XDG_CONFIG_HOME": os.path.join(home, "config"),
        ENGINES_ENV: environ.get(ENGINES_ENV) or os.path.join(user_cache, "engines"),
    }
    gone = [k for k in environ if k in USER_STATE or k.startswith("GITHUB_")]
    changes.update({key: None for key in gone})
    return changes


def make_home(user_cache: str) -> str:
    """A new session home; the user's prepared models linked into its qgate cache."""
    home = tempfile.mkdtemp(prefix="qgate-tests-")
    qgate_cache = os.path.join(home, "cache", "qgate")
    os.makedirs(qgate_cache)
    os.makedirs(os.path.join(home, "config"))
    models = os.path.join(user_cache, "models")
    if os.path.isdir(models):
        # hard links, not a symlink: an emulated copy's key holds its source's resolved path,
        # which must be the same on the driver and on a test's namespaced nodes
        shutil.copytree(models, os.path.join(qgate_cache, "models"), copy_function=_link)
    return home


def _link(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:  # another filesystem
        shutil.copy2(src, dst)


def _go_hermetic() -> None:
    """Once per session, in the process that starts it: xdist's workers inherit the home."""
    if os.environ.get(HOME_ENV):
        return
    from qgate.checkpoint.embedded import cache_root  # the user's, before the change

    user_cache = str(cache_root())
    home = make_home(user_cache)
    _OWN_HOME.append(home)
    for key, value in hermetic_env(dict(os.environ), home, user_cache).items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


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
    _go_hermetic()
    folder = worker_leases(os.environ.get("PYTEST_XDIST_WORKER"), dict(os.environ))
    if folder is not None:
        os.environ[LEASES_ENV] = folder  # subprocesses (qgate run, Ray's nodes) inherit it
    # The servers of both lines share the machine's cores (up to four at once on two cores).
    # OpenMP threads that spin while they wait then take the cores from the threads that have
    # work: four servers answering at once produced 78 output tokens/s spinning and 219 passive
    # (docs/measurements.md). Waiting changes no number a test reads; every server inherits it.
    os.environ.setdefault(OMP_WAIT_ENV, "PASSIVE")


def pytest_unconfigure(config: pytest.Config) -> None:
    for home in _OWN_HOME:
        shutil.rmtree(home, ignore_errors=True)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """The server tests in two work units (the two lines); each unit test a unit of its own;
    each SERVERLESS module one unit."""
    from xdist.scheduler import LoadScopeScheduling  # only under xdist, which calls this hook

    class IntegrationInTwo(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

    return IntegrationInTwo(config, log)
