"""How `make test` splits the suite over its two workers (tests/conftest.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
# By its path: `conftest` alone may name tests/integration/conftest.py, whichever pytest loaded.
_spec = importlib.util.spec_from_file_location("qgate_tests_conftest", TESTS / "conftest.py")
assert _spec is not None and _spec.loader is not None
_top = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_top)
INTEGRATION, SERVERLESS, scope_of = _top.INTEGRATION, _top.SERVERLESS, _top.scope_of


def test_every_server_test_is_one_unit_and_the_serverless_modules_their_own() -> None:
    assert scope_of("tests/integration/test_pipeline.py::test_a") == INTEGRATION
    assert scope_of("tests/integration/test_multi_vllm.py::test_b[x]") == INTEGRATION
    faults = "tests/integration/test_runtime_faults.py"
    assert scope_of(f"{faults}::test_c[sigterm]") == faults
    assert scope_of("tests/unit/test_layers.py::test_d") == "tests/unit/test_layers.py::test_d"


def test_the_serverless_modules_exist_and_start_no_real_server() -> None:
    """A module listed there runs beside the servers' line: it must not start vLLM itself."""
    for module in SERVERLESS:
        text = (TESTS.parent / module).read_text()
        assert module.startswith(INTEGRATION)
        for server in ("reference_server", "fp8kv_server", "smollm2_checkpoint", '"run"'):
            assert server not in text, (module, server)
