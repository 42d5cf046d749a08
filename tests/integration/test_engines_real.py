"""SGLang-style and custom-launcher (`command`) runtimes, started for real on the CPU, at once.

tests/integration/engine_launcher.py translates each command line into a
vLLM one and execs it, so the process qgate starts, watches and stops is the
one its engine class built the command for. One profile, two sides: the
reference on `sglang` (the top-level engine), the candidate on `command`
(its own `candidate.engine`, an ATOM-like command line).
"""

from __future__ import annotations

import contextlib
import json
import sys
import urllib.request
from pathlib import Path

import pytest

from qgate.core.serving import Runtime
from qgate.profile import Profile
from qgate.runtime.command_server import CommandServer
from qgate.runtime.factory import make_runtime
from qgate.runtime.process import group_alive
from qgate.runtime.sglang_server import SglangServer

LAUNCHER = str(Path(__file__).with_name("engine_launcher.py"))


def _profile() -> Profile:
    return Profile.model_validate(
        {
            "name": "engines",
            "model": {"embedded": "smollm2", "served_name": "smollm2"},
            "engine": {
                "kind": "sglang",
                "launcher": [sys.executable, LAUNCHER, "sglang"],
                "args": {"context_length": 2048, "disable_cuda_graph": True},
                "env": {"VLLM_CPU_KVCACHE_SPACE": "1"},
                "startup_timeout_s": 900,
            },
            "candidate": {
                "engine": {
                    "kind": "command",
                    "command": [
                        sys.executable,
                        LAUNCHER,
                        "atom",
                        "--model",
                        "{model}",
                        "--host",
                        "{host}",
                        "--server-port",
                        "{port}",
                    ],
                    "args": {"max-model-len": 2048, "enforce-eager": True},
                    "env": {"VLLM_CPU_KVCACHE_SPACE": "1"},
                    "startup_timeout_s": 900,
                },
                "args": {"kv_cache_dtype": "bf16"},
            },
            "quality": {"math": {}},
        }
    )


def _complete(runtime: Runtime) -> dict[str, object]:
    body = {"model": runtime.served_model, "prompt": "1 + 1 =", "max_tokens": 4, "temperature": 0.0}
    request = urllib.request.Request(
        f"{runtime.base_url}/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=300) as response:
        data: dict[str, object] = json.loads(response.read())
    return data


def _serve_both(runtimes: list[Runtime]) -> list[dict[str, object]]:
    """Start every runtime at once (their start-ups overlap, as side-by-side runs do), ask
    each for a completion, stop them all; each one's applied config, answer and group."""
    out: list[dict[str, object]] = []
    with contextlib.ExitStack() as stack:
        for runtime in runtimes:
            stack.callback(runtime.stop)
            runtime.start()
        for runtime in runtimes:
            runtime.wait_ready()
            pid = getattr(runtime, "pid", None)
            assert pid is not None and group_alive(pid)
            data = runtime.effective_config().model_dump()
            data["answer"], data["pid"] = _complete(runtime), pid
            out.append(data)
    for data, runtime in zip(out, runtimes, strict=True):
        assert not group_alive(data["pid"]), f"{runtime.role} left processes in its group"
    return out


@pytest.fixture(scope="module")
def served(
    smollm2_checkpoint: Path, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, dict[str, object]]:
    """The sglang reference and the command candidate of one profile, started together."""
    profile = _profile()
    runtimes = [
        make_runtime(profile, role, smollm2_checkpoint, tmp_path_factory.mktemp(role))
        for role in ("reference", "candidate")
    ]
    assert isinstance(runtimes[0], SglangServer) and isinstance(runtimes[1], CommandServer)
    reference, candidate = _serve_both(runtimes)
    return {"reference": reference, "candidate": candidate}


def test_sglang_runtime_starts_serves_and_stops(
    served: dict[str, dict[str, object]], smollm2_checkpoint: Path
) -> None:
    config = served["reference"]
    assert config["kind"] == "sglang" and config["served_model"] == "smollm2"
    command = config["command"]
    assert isinstance(command, list)
    assert command[command.index("--model-path") + 1] == str(smollm2_checkpoint)
    assert command[command.index("--context-length") + 1] == "2048"
    assert "--disable-cuda-graph" in command
    # The applied context length is read back from the server, not from the request.
    assert config["max_model_len"] == 2048
    # vLLM under the launcher has no /get_server_info: said, not assumed applied.
    warnings = config["engine_warnings"]
    assert isinstance(warnings, list)
    assert any("applied configuration not readable" in w for w in warnings)
    answer = config["answer"]
    assert isinstance(answer, dict) and answer["choices"][0]["text"]


def test_command_runtime_starts_serves_and_stops(
    served: dict[str, dict[str, object]], smollm2_checkpoint: Path
) -> None:
    config = served["candidate"]
    assert config["kind"] == "command"
    # No {served_name} in the command: the server answers to the model path, as ATOM's does.
    assert config["served_model"] == str(smollm2_checkpoint)
    command = config["command"]
    assert isinstance(command, list) and "--server-port" in command
    # The template's words, then the side's engine args and its own args, spelled as written.
    assert command[-5:] == [
        "--max-model-len",
        "2048",
        "--enforce-eager",
        "--kv_cache_dtype",
        "bf16",
    ]
    assert config["max_model_len"] == 2048
    answer = config["answer"]
    assert isinstance(answer, dict) and answer["choices"][0]["text"]
