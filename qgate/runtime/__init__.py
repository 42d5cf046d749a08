"""Runtimes: the servers qgate starts or is given, the engines behind them, and the fingerprint.

The surface below is loaded lazily (PEP 562): importing `qgate.runtime`
imports no engine, so `qgate validate` and `--help` stay instant.

- `make_runtime(profile, role, model_path, run_dir)`: a not yet started runtime for a side
- `ServerProcess`: the lifecycle of a started server
- `VllmServer`, `SglangServer`, `CommandServer`, `Endpoint`: the registered engines
- submodules: `fingerprint`, `effective`, `capabilities`, `causes`, `cores`

What every engine declares and the registry of kinds are the profile's
(qgate/profile/engines.py); the runtime protocol and what a server reports are
shared types (qgate/core/serving.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from qgate.core.lazy import lazy_getattr

if TYPE_CHECKING:
    from qgate.runtime.command_server import CommandServer
    from qgate.runtime.endpoint import Endpoint
    from qgate.runtime.factory import make_runtime
    from qgate.runtime.server import ServerProcess
    from qgate.runtime.sglang_server import SglangServer
    from qgate.runtime.vllm_server import VllmServer

__all__ = [
    "CommandServer",
    "Endpoint",
    "ServerProcess",
    "SglangServer",
    "VllmServer",
    "make_runtime",
]

_HOME = {
    "CommandServer": "command_server",
    "Endpoint": "endpoint",
    "make_runtime": "factory",
    "ServerProcess": "server",
    "SglangServer": "sglang_server",
    "VllmServer": "vllm_server",
}


__getattr__ = lazy_getattr(__name__, _HOME)
