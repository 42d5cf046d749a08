"""Runtimes: the servers qgate starts or is given, the engines behind them, and the fingerprint.

The surface below is loaded lazily (PEP 562): importing `qgate.runtime`
imports no engine, so `qgate validate` and `--help` stay instant.

- `make_runtime(profile, role, model_path, run_dir)`: a not yet started runtime for a side
- `engine_class(kind)`, `engine_kinds()`, `register(kind, engine)`: the engine registry
- `EngineDecl`, `ServerProcess`: what an engine declares; the lifecycle of a started server
- `VllmServer`, `SglangServer`, `CommandServer`, `Endpoint`: the registered engines
- `Runtime`, `Lifecycle`, `EffectiveConfig`: the protocol and what a server reports
- `Feature`, `FEATURES`: what an engine serves beyond the OpenAI API
- submodules: `fingerprint`, `redact`, `effective`, `capabilities`, `causes`
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from qgate.lazy import lazy_getattr

if TYPE_CHECKING:
    from qgate.runtime.base import EffectiveConfig, Lifecycle, Runtime
    from qgate.runtime.command_server import CommandServer
    from qgate.runtime.endpoint import Endpoint
    from qgate.runtime.engines import EngineDecl, engine_class, engine_kinds, register
    from qgate.runtime.factory import make_runtime
    from qgate.runtime.features import FEATURES, Feature
    from qgate.runtime.server import ServerProcess
    from qgate.runtime.sglang_server import SglangServer
    from qgate.runtime.vllm_server import VllmServer

__all__ = [
    "FEATURES",
    "CommandServer",
    "EffectiveConfig",
    "Endpoint",
    "EngineDecl",
    "Feature",
    "Lifecycle",
    "Runtime",
    "ServerProcess",
    "SglangServer",
    "VllmServer",
    "engine_class",
    "engine_kinds",
    "make_runtime",
    "register",
]

_HOME = {
    "EffectiveConfig": "base",
    "Lifecycle": "base",
    "Runtime": "base",
    "CommandServer": "command_server",
    "Endpoint": "endpoint",
    "EngineDecl": "engines",
    "engine_class": "engines",
    "engine_kinds": "engines",
    "register": "engines",
    "make_runtime": "factory",
    "FEATURES": "features",
    "Feature": "features",
    "ServerProcess": "server",
    "SglangServer": "sglang_server",
    "VllmServer": "vllm_server",
}


__getattr__ = lazy_getattr(__name__, _HOME)
