"""Building a vLLM server command line and environment from a profile (pure functions)."""

from __future__ import annotations

import functools
import importlib.metadata
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from qgate.errors import BadInput
from qgate.profile.base import RESERVED_ARGS, EngineArgValue, snake_args

__all__ = [
    "API_SERVER_MODULE",
    "APPEND_FLAGS",
    "CPU_GPU_MEMORY_UTILIZATION",
    "CPU_KVCACHE_DEFAULT",
    "CPU_KVCACHE_ENV",
    "RESERVED_ARGS",
    "STORE_TRUE_FLAGS",
    "apply_platform_defaults",
    "build_command",
    "detect_launcher",
    "engine_args_to_flags",
    "flag_name",
    "flag_value",
    "merge_args",
    "merge_env",
    "model_is_positional",
    "server_environment",
]

# vLLM's boolean flags are argparse.BooleanOptionalAction (so `False` is
# `--no-flag`), except these few store_true frontend flags, where False is
# simply the default and must be omitted. Emitting `--no-x` for an unknown
# flag is deliberate: vLLM rejects it at once, whereas silently dropping
# e.g. `enable_prefix_caching: false` would serve a different configuration.
STORE_TRUE_FLAGS = frozenset(
    {
        "disable_log_stats",
        "disable_log_requests",
        "aggregate_engine_logging",
        "headless",
        "grpc",
        "data_parallel_multi_port_external_lb",
    }
)

# Flags that take repeated occurrences (argparse "append"), not one list.
APPEND_FLAGS = frozenset({"middleware"})


CPU_KVCACHE_ENV = "VLLM_CPU_KVCACHE_SPACE"
CPU_KVCACHE_DEFAULT = "2"
CPU_GPU_MEMORY_UTILIZATION = 0.3

API_SERVER_MODULE = "vllm.entrypoints.openai.api_server"


def flag_name(key: str) -> str:
    """`kv_cache_dtype` -> `--kv-cache-dtype`."""
    return "--" + key.strip("-").replace("_", "-")


def flag_value(value: str | int | float | bool) -> str:
    """A flag's value as argv text (booleans as true/false)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def engine_args_to_flags(args: Mapping[str, EngineArgValue]) -> list[str]:
    """Turn snake_case engine args into vLLM flags, in the order given.

    True -> bare flag; False -> `--no-flag` (omitted for store_true flags);
    None -> omitted; a list -> one flag followed by its values (repeated
    flags for append-style options); anything else -> `--flag value`.
    """
    out: list[str] = []
    for key, value in args.items():
        norm = key.strip("-").replace("-", "_")
        if norm in RESERVED_ARGS:
            raise BadInput(f"engine arg '{key}' is set by qgate; use {RESERVED_ARGS[norm]}")
        flag = flag_name(norm)
        if value is None:
            continue
        if isinstance(value, bool):
            if value:
                out.append(flag)
            elif norm not in STORE_TRUE_FLAGS:
                out.append("--no-" + flag[2:])
        elif isinstance(value, list):
            if not value:
                continue
            if norm in APPEND_FLAGS:
                for item in value:
                    out += [flag, flag_value(item)]
            else:
                out += [flag, *(flag_value(item) for item in value)]
        else:
            out += [flag, flag_value(value)]
    return out


def merge_args(
    shared: Mapping[str, EngineArgValue], role: Mapping[str, EngineArgValue]
) -> dict[str, EngineArgValue]:
    """Shared engine args overlaid by the role's (keys compared in snake_case)."""
    return snake_args(shared, role)


def merge_env(shared: Mapping[str, str], role: Mapping[str, str]) -> dict[str, str]:
    """Shared environment overlaid by the role's."""
    return {**shared, **role}


def apply_platform_defaults(
    args: Mapping[str, EngineArgValue],
    env: Mapping[str, str],
    accelerator: str,
    inherited_env: Mapping[str, str],
) -> tuple[dict[str, EngineArgValue], dict[str, str]]:
    """Add the CPU backend's required settings unless the profile (or the shell) sets them.

    vLLM on the CPU fails at startup with its default memory utilization,
    and its KV cache size comes from an environment variable (ENVIRONMENT.md).
    Nothing is injected for other accelerators.
    """
    out_args = dict(args)
    out_env = dict(env)
    if accelerator.lower() != "cpu":
        return out_args, out_env
    if "gpu_memory_utilization" not in out_args:
        out_args["gpu_memory_utilization"] = CPU_GPU_MEMORY_UTILIZATION
    if CPU_KVCACHE_ENV not in out_env and CPU_KVCACHE_ENV not in inherited_env:
        out_env[CPU_KVCACHE_ENV] = CPU_KVCACHE_DEFAULT
    return out_args, out_env


def _console_script_works(script: str) -> bool:
    try:
        done = subprocess.run([script, "--version"], capture_output=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


@functools.cache
def detect_launcher(python: str = sys.executable) -> tuple[str, ...]:
    """The command that starts a vLLM OpenAI server with this interpreter's vLLM.

    The `vllm` console script where it works, else `python -m` the API server
    module (the CPU build's console script fails: its distribution is
    `vllm-cpu`, and the script looks up `vllm`). The probe runs once per process.
    """
    fallback = (python, "-m", API_SERVER_MODULE)
    script = Path(python).parent / "vllm"
    script_path = str(script) if script.exists() else shutil.which("vllm")
    if script_path is None:
        return fallback
    try:
        importlib.metadata.distribution("vllm")
    except importlib.metadata.PackageNotFoundError:
        # Exactly how the script fails; spare the ~10 s probe.
        return fallback
    if _console_script_works(script_path):
        return (script_path, "serve")
    return fallback


def model_is_positional(launcher: Sequence[str]) -> bool:
    """Whether this launcher takes the model as its first positional argument.

    `vllm serve MODEL` does (vLLM 0.26 warns that `vllm serve --model` will be
    removed). The `python -m vllm.entrypoints.openai.api_server` form (the only
    one the CPU build can use, ENVIRONMENT.md) parses a positional `model_tag`
    too, but in vLLM 0.26 and vllm-cpu 0.32 only `vllm serve` copies it into
    `--model`: there a positional model would be ignored and vLLM's default
    model served, so that form keeps `--model`.
    """
    return bool(launcher) and launcher[-1] == "serve"


def build_command(
    launcher: Sequence[str],
    model: str,
    served_model: str,
    host: str,
    port: int,
    args: Mapping[str, EngineArgValue],
) -> list[str]:
    """The full server command: launcher, model, served name, address, then engine flags.

    The model is positional after `... serve`, else `--model MODEL` (model_is_positional).
    """
    model_args = [model] if model_is_positional(launcher) else ["--model", model]
    return [
        *launcher,
        *model_args,
        "--served-model-name",
        served_model,
        "--host",
        host,
        "--port",
        str(port),
        *engine_args_to_flags(args),
    ]


def server_environment(
    overlay: Mapping[str, str], base: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The server's process environment: the caller's, the overlay, and an unbuffered log."""
    env = dict(os.environ if base is None else base)
    env.update(overlay)
    # The log file is the only live view of a starting server; buffered
    # output would hide the very lines a failure message needs.
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env
