"""Session-scoped real vLLM servers shared by every integration test.

Servers start lazily, the first time a test asks for one, and stop at the
end of the session; the teardown checks that no process of theirs is left.

CI time (`make test` has a 20-minute budget; a vLLM start is ~35-50 s here): before a test
starts a server, it extends a run that exists.

- A fault qgate must catch (a wrong answer under load, past a length, after idling, a dropped
  request field) needs no server: `endpoint_run` runs a profile whose reference is the
  session's `reference_server` seen directly and whose candidate is the same server seen
  through the fault proxy (`fault_proxy("load:6")`, perf/faults/proxy.py's rules). One
  `qgate run`, nothing started (test_context_ladder_fault.py, test_perf_probes_fault.py: an
  endpoint side answers the life probes at first contact and after the idle pause, like a
  life qgate starts, so the idle fault needs no started candidate either).
- A candidate that needs a server of its own (other engine arguments) is one more entry under
  `candidates:` of an existing multi-candidate profile: one life more, no second reference.
  The quality suites and perf of a multi profile are shared by its candidates, so pick the run
  whose suites suit it: test_speculative_vllm.py (speculative candidates: its acceptance gate
  holds every candidate) or test_multi_vllm.py (serving and precision changes: its reuse passes
  run on every candidate), and assert on `run.reports["<name>"]`.
- A further check of a report already written reads it: test_pipeline.py's `passing_run`,
  test_multi_vllm.py's `multi`.

Memory (KV_SPACE): `make test` runs two lines of server tests at once (tests/conftest.py), a
started pair on each at times, and a CPU server allocates its whole KV cache at its start: the
runs started by test_pipeline.py and test_upgrade_vllm.py pass
`VLLM_CPU_KVCACHE_SPACE=1` in their environment (qgate keeps a value it inherits), half qgate's
CPU default and ample for their lengths. Measured with 2 GiB each: 21.6 of 24 GB in use while
test_pipeline.py's pair and test_cluster_run.py's two lives ran at once.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from qgate.profile import EngineArgValue
from qgate.profile.chat_templates import resolve_chat_template
from qgate.runtime.capabilities import cpu_serving_dtype, probe_cpu
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


# The session's servers (and what is reached through them: `fault_proxy`, `endpoint_run`).
SESSION_SERVERS = ("reference_server",)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The modules that use the session's servers run last, one after another as collected: the
    servers start with the first of them and stay up to the session's end, so they are up for
    that stretch only, not beside every started pair of the run (memory: `make test` runs two
    lines of server tests at once, tests/conftest.py). A module is never split (its own
    module-scoped servers would start twice)."""
    late = {
        item.nodeid.split("::", 1)[0]
        for item in items
        if item.nodeid.startswith("tests/integration/")
        and any(name in getattr(item, "fixturenames", ()) for name in SESSION_SERVERS)
    }
    items.sort(key=lambda item: item.nodeid.split("::", 1)[0] in late)


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
def fake_launcher() -> list[str]:
    """A launcher that imitates vLLM's server for fault injection (see fake_vllm.py)."""
    return [sys.executable, str(Path(__file__).with_name("fake_vllm.py"))]


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[object]:
    """A two-node Ray cluster whose nodes share nothing with the driver nor each other, joined.

    Each worker node runs in namespaces of its own (tests/helpers/hosts.py): its own address
    on a bridge made for the test, hostname, processes, and empty private /tmp, /dev/shm and
    qgate cache; the embedded checkpoint is bind-mounted read-only at the same path (a real
    cluster's model volume). The head (no CPUs: no life lands there) is the driver's node,
    in this machine's namespace. One node holds the custom resource `ref`, the other `cand`,
    each every core this process may use, so a CPU life (which holds every core of its node)
    takes a node alone. Without root (no namespaces), the simulated cluster of
    `ray.cluster_utils` (one address, one filesystem) stands in and `nodes` is empty.
    Everything is removed after the module, on every path.
    """
    ray = pytest.importorskip("ray", reason="the Ray extra is not installed")
    from helpers.hosts import HostsCluster, namespaces_problem

    from qgate.checkpoint.embedded import cache_root, checkpoint_path

    cores = len(os.sched_getaffinity(0))
    problem = namespaces_problem()
    if problem is None:
        model = checkpoint_path("smollm2")
        # 1 GiB of KV cache per life (KV_SPACE above: the other line may hold a pair meanwhile)
        # Ray's memory monitor off on the nodes: they share this machine's memory with the
        # other line's servers, which a real node would not, and it killed a life's worker at
        # 95% of the machine in CI on the Zen 4 kind (2026-12-07, twice, the run exit 3)
        env = {
            "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
            "VLLM_CPU_KVCACHE_SPACE": "1",
            "RAY_memory_monitor_refresh_ms": "0",
        }
        shared = [model] if model.is_dir() else []
        # this checkout and its venv, where a node's private /tmp or /dev/shm would hide them
        # (a CI clone under /tmp): installed read-only at the same path, as on a real node
        for path in (Path(__file__).resolve().parents[2], Path(sys.prefix)):
            if path.is_relative_to("/tmp") or path.is_relative_to("/dev/shm"):
                shared.append(path)
        with HostsCluster.two_nodes([cache_root()], shared, env, cores) as hosts:
            yield hosts
        return
    from ray.cluster_utils import Cluster

    print(f"ray_cluster: simulated nodes (one address, one filesystem): {problem}")
    cluster = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": cores, "resources": {"ref": 1}, "include_dashboard": False},
    )
    cluster.add_node(num_cpus=cores, resources={"cand": 1})
    cluster.wait_for_nodes()
    cluster.nodes = []  # type: ignore[attr-defined]
    try:
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()


ROOT = Path(__file__).resolve().parents[2]
QGATE = [sys.executable, "-m", "qgate.cli"]

PROXY = """
import asyncio, sys
sys.path.insert(0, {faults!r})
from proxy import Faults, Rule, serve
log = open({log!r}, "a", buffering=1)
faults = Faults([Rule.parse(r) for r in {rules!r}])
asyncio.run(serve("127.0.0.1", {port}, {upstream!r}, faults, log))
"""


@dataclass(frozen=True)
class FaultProxy:
    """The fault proxy in front of the session's `reference_server`."""

    rules: tuple[str, ...]
    url: str
    """Its OpenAI base URL (`.../v1`)."""
    log: Path
    """One JSON line per generate request: in flight, idle, prompt tokens, corrupted."""

    def entries(self) -> list[dict[str, Any]]:
        return [json.loads(x) for x in self.log.read_text().splitlines()]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def fault_proxy(
    reference_server: VllmServer, runtime_root: Path
) -> Iterator[Callable[..., FaultProxy]]:
    """Starts a fault proxy (perf/faults/proxy.py; rules such as `load:6`, `length:512`,
    `idle:30`) in front of the session's server, each with its own log; all stop at the
    session's end."""
    procs: list[subprocess.Popen[bytes]] = []

    def start(*rules: str) -> FaultProxy:
        port = _free_port()
        log = Path(tempfile.mkstemp(prefix="fault-", suffix=".jsonl", dir=runtime_root)[1])
        code = PROXY.format(
            faults=str(ROOT / "perf" / "faults"),
            log=str(log),
            port=port,
            upstream=reference_server.base_url.removesuffix("/v1"),
            rules=list(rules),
        )
        # its own errors (a client that hung up mid-stream) beside its log, not in pytest's
        with log.with_suffix(".stderr").open("w") as stderr:
            procs.append(subprocess.Popen([sys.executable, "-c", code], stderr=stderr))
        url = f"http://127.0.0.1:{port}/v1"
        for _ in range(100):
            try:
                urllib.request.urlopen(url + "/models", timeout=2).close()
                break
            except OSError:
                assert procs[-1].poll() is None, f"the fault proxy {rules} exited"
                time.sleep(0.1)
        return FaultProxy(rules, url, log)

    try:
        yield start
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(10)


ENDPOINT_PROFILE = """
name: {name}
model: {{embedded: smollm2}}
target: {{accelerator: cpu}}
engine: {{kind: endpoint}}
reference:
  endpoint: {{base_url: '{reference}'}}
candidate:
  endpoint: {{base_url: '{candidate}'}}
"""


@dataclass(frozen=True)
class EndpointRun:
    """One `qgate run` of an endpoint profile, signed and verified."""

    done: subprocess.CompletedProcess[str]
    report: Path
    """The signed report (report.intoto.jsonl); report.md and the raw records beside it."""
    wall_s: float
    verified: str
    """What `qgate verify --pubkey` printed (it exited 0)."""

    @property
    def predicate(self) -> dict[str, Any]:
        envelope = json.loads(self.report.read_text().splitlines()[0])
        payload: dict[str, Any] = json.loads(base64.b64decode(envelope["payload"]))
        return payload["predicate"]  # type: ignore[no-any-return]


@pytest.fixture(scope="session")
def endpoint_run(
    reference_server: VllmServer, tmp_path_factory: pytest.TempPathFactory
) -> Callable[[str, str, str], EndpointRun]:
    """Runs `qgate run` on a profile named `name` whose reference is the session's server and
    whose candidate is `candidate_url` (a `fault_proxy`'s), with `body` (the profile's
    `quality:` and `perf:` sections) appended; the report must verify."""

    def run(name: str, candidate_url: str, body: str) -> EndpointRun:
        work = tmp_path_factory.mktemp(name)
        profile = work / f"{name}.yaml"
        head = ENDPOINT_PROFILE.format(
            name=name, reference=reference_server.base_url, candidate=candidate_url
        )
        profile.write_text(head + body)
        env = dict(os.environ, XDG_CONFIG_HOME=str(work / "config"))
        env.pop("GITHUB_STEP_SUMMARY", None)
        keygen = subprocess.run(
            [*QGATE, "keygen", "--out", str(work / "k")], env=env, capture_output=True, text=True
        )
        assert keygen.returncode == 0, keygen.stderr
        args = ["--out", str(work / "runs"), "--key", str(work / "k.pem"), "--no-progress"]
        start = time.perf_counter()
        done = subprocess.run(
            [*QGATE, "run", str(profile), *args, "--cache-dir", str(work / "cache")],
            env=env,
            capture_output=True,
            text=True,
            timeout=1500,
            check=False,
        )
        wall = time.perf_counter() - start
        line = next((ln for ln in done.stdout.splitlines() if ln.startswith("report: ")), None)
        assert line is not None, done.stdout + done.stderr
        report = Path(line.split(": ", 1)[1].strip())
        verified = subprocess.run(
            [*QGATE, "verify", str(report), "--pubkey", str(work / "k.pub.pem")],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert verified.returncode == 0, verified.stdout + verified.stderr
        return EndpointRun(done, report, wall, verified.stdout)

    return run
