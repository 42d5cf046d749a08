"""A starting server's log and environment: the line that says it failed for good, and the
environment recorded for it (engine variables it inherited, the profile's overlay, secrets
redacted). Read by the server lifecycle (qgate/runtime/server.py).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

from qgate.core.redact import redact_env
from qgate.runtime.causes import is_noise

__all__ = ["ENGINE_ENV_PREFIXES", "FATAL_STARTUP_MARKERS", "fatal_startup_line", "recorded_env"]


# Lines after which a starting vLLM server never becomes healthy; some
# versions then hang instead of exiting (seen: a worker failing its KV cache
# allocation on a machine short of memory left the API server waiting).
FATAL_STARTUP_MARKERS = (
    "Engine core initialization failed",
    "EngineCore failed to start",
    "Worker failed with error",
    "WorkerProc hit an exception",
    "torch.OutOfMemoryError",
    "CUDA out of memory",
    "HIP out of memory",
)


def fatal_startup_line(text: str) -> str | None:
    """The first log line that says a starting server has failed for good, if any.

    Lines at INFO/WARNING level and Python warnings never count, whatever they quote.
    """
    for line in text.splitlines():
        if any(marker in line for marker in FATAL_STARTUP_MARKERS) and not is_noise(line):
            return line.strip()
    return None


# Inherited variables that change what the engine does; recorded with the overlay.
ENGINE_ENV_PREFIXES = (
    "VLLM_",
    "SGLANG_",
    "SGL_",
    "ATOM_",
    "HIP_",
    "ROCM_",
    "ROCR_",
    "CUDA_",
    "NCCL_",
    "OMP_",
    "PYTORCH_",
    "AITER_",
    "TORCH_",
    "HF_HUB_OFFLINE",
)


def recorded_env(
    overlay: Mapping[str, str],
    secret_names: Iterable[str],
    inherited: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment a server ran with, as recorded: engine variables it inherited, the
    profile's overlay, secrets redacted."""
    env = os.environ if inherited is None else inherited
    kept = {k: v for k, v in env.items() if k.startswith(ENGINE_ENV_PREFIXES)}
    return redact_env({**kept, **overlay}, list(secret_names))
