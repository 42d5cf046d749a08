"""Real vLLM on the CPU: start, answer, report its configuration, stop without leftovers."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest

from qgate.errors import ExitCode, RuntimeFailure
from qgate.runtime.process import group_alive
from qgate.runtime.vllm_server import VllmServer

pytestmark = pytest.mark.integration


def _complete(server: VllmServer, prompt: str, max_tokens: int) -> dict[str, object]:
    body = json.dumps(
        {
            "model": server.served_model,
            "prompt": prompt,
            "max_tokens": max_tokens,
            "temperature": 0.0,
        }
    ).encode()
    request = urllib.request.Request(
        f"{server.base_url}/completions", data=body, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=120) as response:
        data: dict[str, object] = json.loads(response.read())
    return data


def test_reference_answers_a_completion(reference_server: VllmServer) -> None:
    assert reference_server.base_url.endswith("/v1")
    data = _complete(reference_server, "The capital of France is", 8)
    usage = data["usage"]
    assert isinstance(usage, dict)
    assert usage["completion_tokens"] >= 1
    choices = data["choices"]
    assert isinstance(choices, list) and choices[0]["text"].strip()
    reference_server.check_alive()


def test_effective_config_reports_what_the_server_applied(
    reference_server: VllmServer, serving_dtype: str
) -> None:
    """What the server stated, with qgate's CPU defaults (a candidate's FP8 KV cache as its
    server applied it: test_pipeline.py's report, on CPUs that run one; a profile's KV space
    over qgate's default: tests/unit/runtime/test_command.py)."""
    eff = reference_server.effective_config()
    assert eff.kv_cache_dtype == "auto"
    assert eff.kind == "vllm" and eff.role == "reference"
    assert eff.dtype == serving_dtype
    assert eff.max_model_len == 4096
    assert eff.tensor_parallel_size == 1
    assert eff.engine_version and eff.engine_version[0].isdigit()
    assert eff.args["gpu_memory_utilization"] == 0.3
    assert "--enforce-eager" in eff.command
    assert eff.env_flags["VLLM_CPU_KVCACHE_SPACE"] == "2"  # qgate's CPU default


def test_invalid_engine_argument_fails_fast_with_log_tail(
    smollm2_checkpoint: Path, runtime_dir: Path
) -> None:
    server = VllmServer(
        role="candidate",
        model_path=smollm2_checkpoint,
        served_model="smollm2",
        run_dir=runtime_dir,
        args={"enforce_eager": True, "kv_cache_dtype": "fp9"},
        startup_timeout_s=300,
    )
    with pytest.raises(RuntimeFailure) as info, server:
        pass
    err = info.value
    assert err.exit_code == ExitCode.INFRASTRUCTURE
    assert "exited during startup" in err.message and "exit status" in err.message
    assert "candidate runtime" in err.message
    assert any("fp9" in line for line in err.log_tail), err.log_tail
    assert server.pid is not None and not group_alive(server.pid)


def test_shared_server_runs_with_qgates_cpu_defaults(reference_server: VllmServer) -> None:
    """qgate's CPU defaults on a real vLLM; stopping is checked by the fixture's teardown."""
    from qgate.runtime.cores import BIND_ENV, bind_spec, usable_cores

    pgid = reference_server.pid
    assert pgid is not None
    eff = reference_server.effective_config()
    assert eff.max_model_len == 4096
    assert eff.env_flags["VLLM_CPU_KVCACHE_SPACE"] == "2"
    assert eff.args["gpu_memory_utilization"] == 0.3
    # Its engine threads are bound to every usable core (it started alone), and vLLM says so.
    spec = eff.env_flags[BIND_ENV]
    assert spec == bind_spec(usable_cores()), spec
    log = reference_server.log_path.read_text()
    assert f"VLLM_CPU_OMP_THREADS_BIND='{spec}'" in log
    assert f"core ids={sorted(usable_cores())}" in log
    # vLLM's engine core and worker run in the server's process group.
    assert len(_group_members(pgid)) >= 3


def _group_members(pgid: int) -> list[int]:
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            # Field 5 of /proc/PID/stat is the process group (after the parenthesised name).
            fields = stat.rsplit(")", 1)[1].split()
            if int(fields[2]) == pgid:
                members.append(int(entry.name))
    return members
