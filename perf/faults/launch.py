"""Starts a real vLLM server behind the fault proxy, as a side's `launcher`.

    launcher: [python, perf/faults/launch.py, --fault, "load:4", --share, "1", --]

qgate appends the server's command line (`--model M --served-model-name S --host H
--port P` and the engine flags). This script starts vLLM's OpenAI server with those
arguments on a free local port, waits for it, and serves the fault proxy (proxy.py) on the
host and port qgate asked for. vLLM runs in this process group, so stopping the side stops
both. Faults never ship as a profile: they exist to measure qgate (perf/faults/README.md).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from proxy import Faults, Rule, serve  # noqa: E402

SERVER_MODULE = "vllm.entrypoints.openai.api_server"


def split_address(argv: list[str]) -> tuple[list[str], str, int]:
    """The server's arguments without --host/--port, and the host and port they named."""
    rest, host, port = [], "127.0.0.1", 8000
    it = iter(argv)
    for arg in it:
        name, eq, value = arg.partition("=")
        if name in ("--host", "--port"):
            value = value if eq else next(it)
            host, port = (value, port) if name == "--host" else (host, int(value))
        else:
            rest.append(arg)
    return rest, host, port


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_ready(url: str, server: subprocess.Popen[bytes], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server.poll() is not None:
            sys.exit(f"fault launcher: vLLM exited with {server.returncode} before it was ready")
        try:
            with urllib.request.urlopen(url + "/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    sys.exit(f"fault launcher: vLLM not ready within {timeout_s:.0f} s")


def next_life(path: str | None) -> str:
    """This life's key for the broken-life draw: with `path`, the number of lives launched
    with it before (one line each, appended here), so each life a run restarts (perf rounds,
    attribution, reuse) draws on its own, reproducibly; without, '' (every life one draw)."""
    if not path:
        return ""
    counter = Path(path)
    before = len(counter.read_text().splitlines()) if counter.is_file() else 0
    with counter.open("a") as handle:
        handle.write(f"life {before}\n")
    return str(before)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="perf/faults/launch.py", allow_abbrev=False)
    p.add_argument("--fault", action="append", default=[], type=Rule.parse, metavar="KIND:VALUE")
    p.add_argument("--share", type=float, default=1.0, help="probability a match is corrupted")
    p.add_argument("--seed", type=int, default=int(os.environ.get("QGATE_FAULT_SEED", "0")))
    p.add_argument("--log", default=os.environ.get("QGATE_FAULT_LOG"))
    p.add_argument(
        "--lives-file",
        default=os.environ.get("QGATE_FAULT_LIVES"),
        help="a file counting the lives launched: each life then draws `life:P` on its own, "
        "and `life-n:K` breaks the K-th",
    )
    p.add_argument("--ready-timeout-s", type=float, default=900)
    ours = list(sys.argv[1:] if argv is None else argv)
    if "--" not in ours:  # else a vLLM flag such as --seed could be taken for ours
        p.error("end the launcher's own options with --, before the server's arguments")
    cut = ours.index("--")
    ns = p.parse_args(ours[:cut])
    server_args = ours[cut + 1 :]
    if not ns.fault:
        p.error("name at least one --fault")
    if any(r.kind == "life-n" for r in ns.fault) and not ns.lives_file:
        p.error("a life-n rule counts lives: give --lives-file (or QGATE_FAULT_LIVES)")
    rest, host, port = split_address(server_args)
    inner = free_port()
    cmd = [sys.executable, "-m", SERVER_MODULE, *rest, "--host", "127.0.0.1", "--port", str(inner)]
    server = subprocess.Popen(cmd)
    upstream = f"http://127.0.0.1:{inner}"
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        wait_ready(upstream, server, ns.ready_timeout_s)
        key = next_life(ns.lives_file)
        number = int(key) + 1 if key else None
        faults = Faults(ns.fault, share=ns.share, seed=ns.seed, life_key=key, life_number=number)
        print(
            f"fault launcher: {[f'{r.kind}:{r.value}' for r in ns.fault]} share {ns.share}"
            f" seed {ns.seed}{f' life {number}' if number else ''}"
            f"{' (this life broken)' if faults.life_broken else ''};"
            f" proxy {host}:{port} -> {upstream}",
            flush=True,
        )
        log = open(ns.log, "a", buffering=1) if ns.log else None  # noqa: SIM115
        asyncio.run(serve(host, port, upstream, faults, log))
    finally:
        if server.poll() is None:
            server.terminate()
            try:
                server.wait(30)
            except subprocess.TimeoutExpired:
                server.kill()


if __name__ == "__main__":
    main()
