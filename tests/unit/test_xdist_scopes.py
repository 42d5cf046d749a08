"""How `make test` splits the suite over its two workers (tests/conftest.py)."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
# By its path: `conftest` alone may name tests/integration/conftest.py, whichever pytest loaded.
_spec = importlib.util.spec_from_file_location("qgate_tests_conftest", TESTS / "conftest.py")
assert _spec is not None and _spec.loader is not None
_top = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_top)
INTEGRATION, SERVERLESS, scope_of = _top.INTEGRATION, _top.SERVERLESS, _top.scope_of
SECOND_LINE, SECOND_LINE_SCOPE = _top.SECOND_LINE, _top.SECOND_LINE_SCOPE
# What the session's servers are reached through (tests/integration/conftest.py).
SESSION_SERVERS = ("reference_server", "fault_proxy", "endpoint_run")


def _modules() -> list[str]:
    return sorted(f"tests/integration/{p.name}" for p in (TESTS / "integration").glob("test_*.py"))


def test_the_server_tests_are_two_units_and_the_serverless_modules_their_own() -> None:
    assert scope_of("tests/integration/test_pipeline.py::test_a") == INTEGRATION
    assert scope_of("tests/integration/test_multi_vllm.py::test_b[x]") == SECOND_LINE_SCOPE
    assert scope_of("tests/integration/test_cluster_ray.py::test_c") == SECOND_LINE_SCOPE
    faults = "tests/integration/test_runtime_faults.py"
    assert scope_of(f"{faults}::test_c[sigterm]") == faults
    assert scope_of("tests/unit/test_layers.py::test_d") == "tests/unit/test_layers.py::test_d"
    assert len({INTEGRATION, SECOND_LINE_SCOPE, faults}) == 3
    # each line holds some module (neither is empty, so both run)
    lines = {scope_of(m + "::t") for m in _modules()} - set(SERVERLESS)
    assert lines == {INTEGRATION, SECOND_LINE_SCOPE}


def test_the_serverless_modules_exist_and_start_no_real_server() -> None:
    """A module listed there runs beside the servers' lines: it must not start vLLM itself. It
    may start `qgate run` (and so name the embedded checkpoint) only on profiles whose engine
    launcher is the stand-in (`fake_launcher`): each profile it writes sets `launcher:`."""
    for module in SERVERLESS:
        text = (TESTS.parent / module).read_text()
        assert module.startswith(INTEGRATION)
        for server in ("reference_server", "fp8kv_server", "vllm.entrypoints"):
            assert server not in text, (module, server)
        if '"run"' in text or "smollm2_checkpoint" in text:
            profiles = re.findall(r'"""\s*\nname: .*?"""', text, flags=re.S)
            assert profiles and "fake_launcher" in text, module
            for profile in profiles:
                assert "\n  launcher: " in profile, (module, profile[:60])


def test_the_second_line_never_asks_for_the_session_servers() -> None:
    """They are session-scoped per worker: asked for on the second line's worker too, they
    would start a second time."""
    for module in SECOND_LINE:
        assert module in _modules(), module
        text = (TESTS.parent / module).read_text()
        for server in SESSION_SERVERS:
            assert not re.search(rf"\b{server}\b", text), (module, server)


def test_every_ray_module_is_in_one_line() -> None:
    """Two simulated Ray clusters at once would share the machine's Ray address file."""
    ray = [
        m
        for m in _modules()
        if re.search(r"\bray_cluster\b|--cluster|import ray", (TESTS.parent / m).read_text())
    ]
    assert len(ray) >= 2, ray
    assert len({scope_of(m + "::t") for m in ray}) == 1, ray


def test_each_worker_places_its_servers_with_leases_of_its_own() -> None:
    gw0 = _top.worker_leases("gw0", {})
    gw1 = _top.worker_leases("gw1", {})
    assert gw0 and gw1 and gw0 != gw1
    assert _top.worker_leases(None, {}) is None  # outside xdist: qgate's default folder
    assert _top.worker_leases("gw0", {_top.LEASES_ENV: "/x"}) is None  # one set is kept


def test_the_session_servers_modules_run_last_and_whole() -> None:
    """They start the session's servers, which stay up to the end: last, they are not up beside
    every started pair of both lines (memory), and no module is split."""
    spec = importlib.util.spec_from_file_location(
        "qgate_integration_conftest", TESTS / "integration" / "conftest.py"
    )
    assert spec is not None and spec.loader is not None
    conftest = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = conftest  # its dataclasses look their module up there
    spec.loader.exec_module(conftest)

    class Item:
        def __init__(self, nodeid: str, *fixtures: str) -> None:
            self.nodeid, self.fixturenames = nodeid, ["tmp_path", *fixtures]

    it = "tests/integration/"
    items = [
        Item(f"{it}test_a.py::t1"),
        Item(f"{it}test_b.py::t1"),  # the module's first test starts a server of its own
        Item(f"{it}test_b.py::t2", "endpoint_run", "reference_server"),
        Item("tests/unit/test_c.py::t1"),
        Item(f"{it}test_d.py::t1", "reference_server"),
        Item(f"{it}test_e.py::t1"),
    ]
    conftest.pytest_collection_modifyitems(items)
    assert [i.nodeid for i in items] == [
        f"{it}test_a.py::t1",
        "tests/unit/test_c.py::t1",
        f"{it}test_e.py::t1",
        f"{it}test_b.py::t1",
        f"{it}test_b.py::t2",
        f"{it}test_d.py::t1",
    ]
