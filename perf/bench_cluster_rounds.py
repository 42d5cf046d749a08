"""Attribution's rounds on a simulated Ray cluster: wall time in waves against one at a time.

Starts a simulated cluster on this machine (`ray.cluster_utils.Cluster`, NODES
nodes of one CPU each), then runs the same ddmin search twice over CHANGES
named changes (the second fails alone: three lives one at a time for three
changes) with stand-in engines
(tests/integration/fake_vllm.py, started exactly as vLLM would be, on a node
of their own): once with as many trials at once as the cluster holds, once one
at a time. Each trial is a whole life: actor placed, server started, HTTP
from the driver, HOLD seconds of stand-in suites, server and actor stopped.
Prints both wall times, the waves and the lives each spent.

Usage: python perf/bench_cluster_rounds.py [--nodes 3] [--changes 3] [--hold 5]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from qgate.cluster import ray_api
from qgate.cluster.life import RayLife
from qgate.cluster.placement import LifeNeeds, capacity
from qgate.cluster.waves import Wave, ddmin_on
from qgate.core import http
from qgate.core.ddmin import Key, Outcome
from qgate.runtime.vllm_server import VllmServer

ROOT = Path(__file__).resolve().parent.parent
FAKE = ROOT / "tests" / "integration" / "fake_vllm.py"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=3)
    ap.add_argument("--changes", type=int, default=3)
    ap.add_argument("--hold", type=float, default=5.0, help="Seconds of stand-in suites.")
    a = ap.parse_args()
    import ray
    from ray.cluster_utils import Cluster

    names = [f"change{i}" for i in range(a.changes)]
    culprit = names[1]
    started = time.perf_counter()
    cluster = Cluster(
        initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False}
    )
    for _ in range(a.nodes - 1):
        cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    ray_api.connect(cluster.address)
    print(f"cluster of {a.nodes} nodes up in {time.perf_counter() - started:.1f} s")
    one = LifeNeeds(num_cpus=1)
    width = capacity(one, ray_api.nodes())
    folder = Path(tempfile.mkdtemp(prefix="qgate-bench-rounds-"))

    def trial(key: Key, wave: Wave) -> Outcome:
        name = "-".join(key)
        server = VllmServer(
            role="candidate",
            model_path=Path("/stand-in/model"),
            served_model="stand-in",
            run_dir=folder / name,
            launcher=[sys.executable, str(FAKE)],
            accelerator="cpu",
        )
        with wave.hold(RayLife(server, one, f"only-{name}")) as life:
            http.get_json(f"{life.base_url}/models", timeout=10)
            time.sleep(a.hold)
        return "FAIL" if culprit in key else "PASS"

    try:
        results = {}
        for w in (width, 1):
            waves: list[list[Key]] = []
            t0 = time.perf_counter()
            found = ddmin_on(names, trial, 4 * len(names), w, on_wave=waves.append)
            seconds = time.perf_counter() - t0
            results[w] = seconds
            print(
                f"width {w}: {seconds:.1f} s wall, {len(waves)} waves, {found.tests} lives, "
                f"found {' + '.join(found.failing or ())}"
            )
        print(
            f"up to {width} trials at once: {results[width]:.1f} s against "
            f"{results[1]:.1f} s one at a time (x{results[1] / results[width]:.2f})"
        )
    finally:
        ray.shutdown()
        cluster.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
