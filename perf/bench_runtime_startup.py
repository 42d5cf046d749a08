"""How much time does qgate's VllmServer add between spawn and a usable server?

    .venv/bin/python perf/bench_runtime_startup.py [--runs 1] [--fake] [--skip-bare]

For each run it starts the same server twice:

1. bare: `subprocess.Popen(command)` plus a tight /health polling loop (20 ms),
   the least any wrapper could do;
2. qgate: `with VllmServer(...)`, while a side thread polls /health every
   20 ms to find the instant the server really became healthy.

qgate's own overhead is then measured directly, which is far less noisy than
comparing two engine startups (vLLM's own startup varies by seconds):

- spawn: from calling start() to the process existing (port, command, log);
- detection lag: from the server being healthy to wait_ready noticing it;
- post-ready checks: /v1/models, /version, log parsing, config check.

`--fake` uses the fake launcher of the integration tests instead of vLLM,
so the engine takes ~0.1 s and the numbers are qgate's alone. The goal is
under 1 s added. On a shared 2-core machine, load from other processes
inflates every figure; the load average is printed with the results.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from qgate.runtime import command as cmd  # noqa: E402
from qgate.runtime import process  # noqa: E402
from qgate.runtime.vllm_server import VllmServer, free_port  # noqa: E402

POLL_S = 0.02
FAKE = [sys.executable, str(ROOT / "tests" / "integration" / "fake_vllm.py")]


def healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as r:
            return bool(r.status == 200)
    except OSError:
        return False


def make_server(model: Path, run_dir: Path, fake: bool) -> VllmServer:
    return VllmServer(
        role="reference",
        model_path=model,
        served_model="smollm2",
        run_dir=run_dir,
        args={"enforce_eager": True, "max_model_len": 4096},
        launcher=FAKE if fake else None,
        startup_timeout_s=900,
    )


def bare_run(model: Path, run_dir: Path, fake: bool) -> float:
    """Spawn-to-healthy of the same command without qgate around it."""
    server = make_server(model, run_dir, fake)
    port = free_port("127.0.0.1")
    launcher = FAKE if fake else list(cmd.detect_launcher())
    argv = cmd.build_command(launcher, str(model), "smollm2", "127.0.0.1", port, server.args)
    env = cmd.server_environment(server.env_overlay)
    with open(run_dir / "bare.log", "ab") as log:
        t0 = time.monotonic()
        proc = subprocess.Popen(
            argv, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
    try:
        while not healthy(port):
            if proc.poll() is not None:
                raise SystemExit(f"bare server exited: see {run_dir / 'bare.log'}")
            time.sleep(POLL_S)
        return time.monotonic() - t0
    finally:
        process.stop_group(proc, 20.0)


def qgate_run(model: Path, run_dir: Path, fake: bool) -> dict[str, float]:
    server = make_server(model, run_dir, fake)
    true_ready: list[float] = []
    stop_watch = threading.Event()

    def watch() -> None:
        while not stop_watch.is_set():
            if server.port is not None and healthy(server.port):
                true_ready.append(time.monotonic())
                return
            time.sleep(POLL_S)

    watcher = threading.Thread(target=watch, daemon=True)
    t_call = time.monotonic()
    server.start()
    t_spawned = server.spawned_at or t_call
    watcher.start()
    try:
        server.wait_ready()
        t_done = time.monotonic()
    finally:
        stop_watch.set()
        t_stop0 = time.monotonic()
        server.stop()
        t_stopped = time.monotonic()
    watcher.join(timeout=2)
    ready = server.ready_at or t_done
    healthy_at = true_ready[0] if true_ready else ready
    return {
        "spawn_s": t_spawned - t_call,
        "engine_s": healthy_at - t_spawned,
        "detect_lag_s": max(0.0, ready - healthy_at),
        "post_ready_s": t_done - ready,
        "total_s": t_done - t_call,
        "stop_s": t_stopped - t_stop0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--fake", action="store_true", help="fake launcher, no model load")
    parser.add_argument("--skip-bare", action="store_true", help="only the qgate runs")
    opts = parser.parse_args()

    if opts.fake:
        model = Path("/nonexistent/model")
    else:
        from qgate.checkpoint.embedded import checkpoint_path

        model = checkpoint_path("smollm2")
        if not (model / "config.json").is_file():
            raise SystemExit(f"embedded model not prepared at {model}")
    t = time.monotonic()
    launcher = FAKE if opts.fake else list(cmd.detect_launcher())
    print(f"launcher: {' '.join(launcher)} (detected in {time.monotonic() - t:.3f} s)")
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    rows = []
    with tempfile.TemporaryDirectory(prefix="qgate-bench-") as tmp:
        for i in range(opts.runs):
            run_dir = Path(tmp) / f"run{i}"
            run_dir.mkdir()
            bare = None if opts.skip_bare else bare_run(model, run_dir, opts.fake)
            q = qgate_run(model, run_dir, opts.fake)
            rows.append(q)
            added = q["spawn_s"] + q["detect_lag_s"] + q["post_ready_s"]
            bare_txt = f"{bare:7.2f} s" if bare is not None else "    n/a"
            print(
                f"run {i}: bare spawn->healthy {bare_txt} | qgate total {q['total_s']:7.2f} s "
                f"(engine {q['engine_s']:.2f} s) | added: spawn {q['spawn_s'] * 1e3:.1f} ms, "
                f"detect {q['detect_lag_s'] * 1e3:.1f} ms, checks {q['post_ready_s'] * 1e3:.1f} ms"
                f" = {added * 1e3:.1f} ms | stop {q['stop_s']:.2f} s"
            )
    worst = max(r["spawn_s"] + r["detect_lag_s"] + r["post_ready_s"] for r in rows)
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    print(f"qgate overhead, worst of {len(rows)}: {worst * 1e3:.1f} ms (goal < 1000 ms)")


if __name__ == "__main__":
    main()
