"""SGLang-style and custom-launcher (`command`) runtimes, each started for real on the CPU.

tests/integration/engine_launcher.py translates each command line into a
vLLM one and execs it, so the process qgate starts, watches and stops is the
one its engine class built the command for. One profile, two sides: the
reference on `sglang` (the top-level engine), the candidate on `command`
(its own `candidate.engine`, an ATOM-like command line).
"""

from __future__ import annotations

import json
import sys
import urllib.request
from pathlib import Path

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


def _run(runtime: Runtime) -> tuple[dict[str, object], int]:
    with runtime:
        pid = getattr(runtime, "pid", None)
        assert pid is not None and group_alive(pid)
        config = runtime.effective_config()
        answer = _complete(runtime)
        data = config.model_dump()
    assert not group_alive(pid), f"{runtime.role} left processes in group {pid}"
    data["answer"] = answer
    return data, pid


def test_sglang_runtime_starts_serves_and_stops(
    smollm2_checkpoint: Path, runtime_dir: Path
) -> None:
    runtime = make_runtime(_profile(), "reference", smollm2_checkpoint, runtime_dir)
    assert isinstance(runtime, SglangServer)
    config, _ = _run(runtime)
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
    smollm2_checkpoint: Path, runtime_dir: Path
) -> None:
    runtime = make_runtime(_profile(), "candidate", smollm2_checkpoint, runtime_dir)
    assert isinstance(runtime, CommandServer)
    config, _ = _run(runtime)
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
