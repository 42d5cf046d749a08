"""How much error does `qgate perf` add to TTFT, in its closed loop, next to `vllm bench serve`?

    flock /tmp/qgate-vllm.lock .venv/bin/python perf/bench_client_fidelity.py \
        [--levels 1 100 500] [--reps 3] [--clients qgate vllm] [--progress] [--qgate-src DIR]

Starts the mock OpenAI server (tests/mockserver/mock_openai.py --log) in its
own process; it logs, per request, its arrival time and the time each content
chunk's write returned (CLOCK_MONOTONIC, which `time.perf_counter` reads in
every process), and tags the first token `r<n>` so any client's output can be
matched with the log. Then, for each level (concurrent streams) and
repetition, alternating the clients:

- qgate: `run_scenarios` -- the closed loop `qgate perf` runs (fixed scenario,
  2 warm-ups, 2 x level measured requests, at least 10), on `run_loop` (uvloop).
  `RawClient.send` is wrapped only to keep each raw response for scoring.
- vllm: `vllm bench serve` (vllm.benchmarks.serve, random dataset, same
  lengths, --max-concurrency level, --request-rate inf, --num-warmups 2,
  --save-detailed) in a subprocess; its start_times and ttfts/itls
  (perf_counter) are matched with the log by the generated text.

Per request: TTFT error = measured TTFT (client send -> first content chunk
read) - true TTFT (server arrival -> first chunk written) = delivery (client
send -> server arrival: connection set-up for vLLM's client, the server's
accept and parse backlog) + receive lag (first chunk written -> read by the
client). Receive lag is also given over every chunk. Server loop lag (how
late the mock's own 2 ms timer fired during the run) shows how much of
delivery is the server's busy event loop rather than the client. The table
shows, per client and level, the median over repetitions of each figure (and
the range of the TTFT-error p50 and p99 over repetitions).

`--qgate-src DIR` imports qgate from another tree (e.g. `git archive` of an
older commit) to measure before/after with the same script. `--progress`
adds a qgate run with the live progress display drawing (to /dev/null, as if
on a terminal) to measure its cost. The machine is shared: the load average
is printed with every run, and figures from a loaded machine are noisy.

Measured 2026-11-30 14:30-14:55 UTC, AMD EPYC (Zen 4) VM with 2 cores shared
with other agents (load average 0.7-2.0), defaults (TTFT 50 ms, ITL 10 ms,
128/64 tokens, 2 x level requests, 3 alternating repetitions), medians in ms,
TTFT error p50 / p99, then receive lag of the first chunk p50 / p99:

    streams  qgate before issue 13      qgate after               vllm bench serve
    1        +0.27 / +0.41, 0.06/0.09   +0.21 / +0.31, -0.02/0.09  +1.3 / +1.7
    100      +8.6 / +37.5,  0.01/37.2   +5.1 / +20.2,  0.00/0.62   +47 / +77
    500      +59 / +268,    1.2/268     +56 / +71,     0.01/1.26   +214 / +360

After the change nearly all of qgate's TTFT error is delivery (its send stamp
to the mock's handler start: the mock's own backlog, which grows because the
client now drives it harder, 635 instead of 463 req/s at 500 streams), and
receive lag, the client's own share, is under 1.3 ms at p99.
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TOKENIZER = Path.home() / ".cache/qgate/models/smollm2-135m-instruct"
VLLM_BENCH = """
import sys
from vllm.benchmarks.serve import add_cli_args, main
from vllm.utils.argparse_utils import FlexibleArgumentParser
p = FlexibleArgumentParser()
add_cli_args(p)
main(p.parse_args(sys.argv[1:]))
"""


def load_mock() -> Any:
    spec = importlib.util.spec_from_file_location(
        "mock_openai", ROOT / "tests" / "mockserver" / "mock_openai.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    if not s:
        return float("nan")
    k = (len(s) - 1) * q / 100
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


class ServerLog:
    """The mock's per-request log, read as it grows."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.rows: dict[int, dict[str, Any]] = {}

    def get(self, tags: list[int]) -> dict[int, dict[str, Any]]:
        deadline = time.monotonic() + 10
        while True:
            self.rows = {}
            self.lags: list[tuple[int, int]] = []
            for line in self.path.read_text().splitlines():
                o = json.loads(line)
                if "loop_lag" in o:
                    self.lags += [(t, lag) for t, lag in o["loop_lag"]]
                else:
                    self.rows[o["n"]] = o
            if all(t in self.rows for t in tags) or time.monotonic() > deadline:
                return self.rows
            time.sleep(0.2)


# One scored request: (client send, client read time of every content chunk, tag), all ns.
Seen = tuple[int, list[int], int]


class _FakeTty(io.StringIO):
    def isatty(self) -> bool:
        return True

    def write(self, s: str) -> int:
        return len(s)


def run_qgate(
    url: str, level: int, requests: int, a: argparse.Namespace, progress: bool
) -> tuple[list[Seen], float]:
    import qgate.perf.rawhttp as rh
    from qgate.core.sse import parse_sse
    from qgate.perf.client import run_loop
    from qgate.perf.runner import run_scenarios
    from qgate.profile import PerfSpec

    captured: list[Any] = []
    orig = rh.RawClient.send

    async def keep(self: Any, path: str, body: bytes, headers: Any = None) -> Any:
        r = await orig(self, path, body, headers)
        captured.append(r)
        return r

    spec = PerfSpec.model_validate(
        {
            "scenarios": [
                {
                    "name": f"c{level}",
                    "input_tokens": a.input_tokens,
                    "output_tokens": a.tokens,
                    "concurrency": level,
                    "requests": requests,
                    "warmup": 2,
                }
            ],
            "probe_share": 0.0,
            "compare_to": "none",
        }
    )
    rh.RawClient.send = keep  # type: ignore[method-assign]
    old_err = sys.stderr
    if progress:
        sys.stderr = _FakeTty()
    try:
        (run,) = run_loop(run_scenarios(url, "mock", spec, "candidate", progress=progress))
    finally:
        rh.RawClient.send = orig  # type: ignore[method-assign]
        sys.stderr = old_err
    out: list[Seen] = []
    for raw in captured[2:]:  # the two warm-ups come first
        if hasattr(raw, "decode"):  # since issue 13 the framing is decoded after the run
            raw.decode()
        p = parse_sse(raw.chunks, keep_events=True)
        ev = [(t, e) for t, e in p.events if e.get("choices")]
        if raw.error or p.error or not ev:
            continue
        tag = int(str(ev[0][1]["choices"][0].get("text", "")).strip().lstrip("r"))
        out.append((raw.sent_ns, [t for t, _ in ev], tag))
    rate = len(run.requests) / (run.duration_ns / 1e9) if run.duration_ns else 0.0
    return out, rate


def run_vllm(
    url: str, level: int, requests: int, a: argparse.Namespace, seed: int
) -> tuple[list[Seen], float]:
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
            "mock",
            "--tokenizer",
            str(a.tokenizer),
            "--dataset-name",
            "random",
            "--random-input-len",
            str(a.input_tokens),
            "--random-output-len",
            str(a.tokens),
            "--ignore-eos",
            "--num-prompts",
            str(requests),
            "--max-concurrency",
            str(level),
            "--request-rate",
            "inf",
            "--num-warmups",
            "2",
            "--seed",
            str(seed),
            "--disable-tqdm",
            "--save-result",
            "--save-detailed",
            "--result-dir",
            d,
            "--result-filename",
            "r.json",
        ]
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=d)
        if p.returncode != 0:
            raise RuntimeError(f"vllm bench serve failed:\n{p.stdout[-2000:]}\n{p.stderr[-3000:]}")
        res = json.loads((Path(d) / "r.json").read_text())
    out: list[Seen] = []
    for st, ttft, itls, text, err in zip(
        res["start_times"],
        res["ttfts"],
        res["itls"],
        res["generated_texts"],
        res["errors"],
        strict=True,
    ):
        if err or not text:
            continue
        sent = int(st * 1e9)
        reads = [sent + int(ttft * 1e9)]
        for g in itls:
            reads.append(reads[-1] + int(g * 1e9))
        tag = int(text.split()[0].lstrip("r"))
        out.append((sent, reads, tag))
    return out, float(res.get("request_throughput") or 0.0)


def score(seen: list[Seen], log: ServerLog) -> dict[str, float]:
    rows = log.get([t for _, _, t in seen])
    err: list[float] = []
    delivery: list[float] = []
    # Steady state: requests sent after the first response had ended, i.e. not part of the
    # opening burst whose connection set-up and accept backlog the server pays for.
    first_end = min((r[-1] for _, r, _ in seen), default=0)
    steady_err: list[float] = []
    steady_deliv: list[float] = []
    lag1: list[float] = []
    lag_all: list[float] = []
    for sent, reads, tag in seen:
        row = rows.get(tag)
        if row is None:
            continue
        recv, writes = row["recv_ns"], row["writes_ns"]
        true_ttft = writes[0] - recv
        err.append(((reads[0] - sent) - true_ttft) / 1e6)
        delivery.append((recv - sent) / 1e6)
        if sent > first_end:
            steady_err.append(err[-1])
            steady_deliv.append(delivery[-1])
        lag1.append((reads[0] - writes[0]) / 1e6)
        lag_all += [(r - w) / 1e6 for r, w in zip(reads, writes, strict=False)]
    start = min((s for s, _, _ in seen), default=0)
    end = max((r[-1] for _, r, _ in seen), default=0)
    loop_lag = [lag / 1e6 for t, lag in log.lags if start <= t <= end]
    return {
        "n": len(err),
        "steady_n": len(steady_err),
        "steady50": pct(steady_err, 50),
        "steady99": pct(steady_err, 99),
        "steadydeliv50": pct(steady_deliv, 50),
        "srvlag50": pct(loop_lag, 50),
        "srvlag99": pct(loop_lag, 99),
        "err50": pct(err, 50),
        "err99": pct(err, 99),
        "deliv50": pct(delivery, 50),
        "deliv99": pct(delivery, 99),
        "lag50": pct(lag1, 50),
        "lag99": pct(lag1, 99),
        "lagall50": pct(lag_all, 50),
        "lagall99": pct(lag_all, 99),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--levels", type=int, nargs="+", default=[1, 100, 500])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--clients", nargs="+", choices=["qgate", "vllm"], default=["qgate", "vllm"])
    ap.add_argument("--progress", action="store_true", help="also qgate with progress drawing")
    ap.add_argument("--tokens", type=int, default=64, help="output tokens per request")
    ap.add_argument("--input-tokens", type=int, default=128)
    ap.add_argument("--ttft-ms", type=float, default=50.0)
    ap.add_argument("--itl-ms", type=float, default=10.0)
    ap.add_argument("--min-requests", type=int, default=10, help="at least this many per run")
    ap.add_argument("--tokenizer", type=Path, default=TOKENIZER, help="for vllm's random data")
    ap.add_argument("--qgate-src", type=Path, default=ROOT, help="tree to import qgate from")
    a = ap.parse_args()
    sys.path.insert(0, str(a.qgate_src.resolve()))
    import qgate

    print(
        f"qgate from {Path(qgate.__file__).parent}; {os.cpu_count()} CPUs; mock TTFT "
        f"{a.ttft_ms} ms, ITL {a.itl_ms} ms, {a.input_tokens} in / {a.tokens} out tokens"
    )
    clients = list(a.clients)
    if a.progress:
        clients.insert(1, "qgate+progress")
    results: dict[tuple[str, int], list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory() as d:
        logpath = Path(d) / "mock.jsonl"
        logpath.touch()
        log = ServerLog(logpath)
        with load_mock().running(a.ttft_ms, a.itl_ms, log=str(logpath)) as url:
            for rep in range(a.reps):
                order = clients if rep % 2 == 0 else clients[::-1]
                for level in a.levels:
                    n = max(2 * level, a.min_requests)
                    for c in order:
                        load = os.getloadavg()[0]
                        if c == "vllm":
                            seen, rate = run_vllm(url, level, n, a, seed=rep)
                        else:
                            seen, rate = run_qgate(url, level, n, a, c == "qgate+progress")
                        s = score(seen, log)
                        s["rate"] = rate
                        s["load"] = load
                        results.setdefault((c, level), []).append(s)
                        print(
                            f"rep {rep} {c:15s} c={level:4d} n={s['n']:4.0f} load {load:5.2f}  "
                            f"TTFT err p50 {s['err50']:+8.2f} p99 {s['err99']:+8.2f}  "
                            f"delivery p50 {s['deliv50']:7.2f} (server loop lag p50 "
                            f"{s['srvlag50']:5.2f} p99 {s['srvlag99']:6.2f})  recv lag first p50 "
                            f"{s['lag50']:7.2f} p99 {s['lag99']:7.2f}  all p50 "
                            f"{s['lagall50']:7.2f} p99 {s['lagall99']:7.2f}  {rate:6.1f} req/s"
                            f"  | steady n={s['steady_n']:.0f} TTFT err p50 {s['steady50']:+7.2f}"
                            f" p99 {s['steady99']:+7.2f} delivery p50 {s['steadydeliv50']:6.2f}",
                            flush=True,
                        )
    print(
        f"\nMedian of {a.reps} alternating repetitions, ms (TTFT error p50/p99 range over reps);"
        f" load average at the end {os.getloadavg()[0]:.2f}:\n"
    )
    print_steady(a.levels, clients, results)
    head = (
        "| client | streams | TTFT err p50 (range) | TTFT err p99 (range) | delivery p50 | "
        "server loop lag p50/p99 | recv lag 1st p50/p99 | recv lag all p50/p99 | req/s | load |"
    )
    print(head)
    print("|" + "---|" * 10)
    for level in a.levels:
        for c in clients:
            rs = results.get((c, level), [])
            if not rs:
                continue

            def med(k: str, rs: list[dict[str, float]] = rs) -> float:
                return statistics.median(r[k] for r in rs)

            def rng(k: str, rs: list[dict[str, float]] = rs) -> str:
                return f"{min(r[k] for r in rs):+.1f}..{max(r[k] for r in rs):+.1f}"

            print(
                f"| {c} | {level} | {med('err50'):+.2f} ({rng('err50')}) | "
                f"{med('err99'):+.2f} ({rng('err99')}) | {med('deliv50'):.2f} | "
                f"{med('srvlag50'):.2f}/{med('srvlag99'):.2f} | "
                f"{med('lag50'):.2f}/{med('lag99'):.2f} | {med('lagall50'):.2f}/"
                f"{med('lagall99'):.2f} | {med('rate'):.1f} | {med('load'):.1f} |"
            )


def print_steady(
    levels: list[int], clients: list[str], results: dict[tuple[str, int], list[dict[str, float]]]
) -> None:
    """The same medians for requests sent after the opening burst (see `score`)."""
    print("Steady state (sent after the first response ended), medians over repetitions, ms:\n")
    print("| client | streams | requests | TTFT err p50 (range) | TTFT err p99 | delivery p50 |")
    print("|" + "---|" * 6)
    for level in levels:
        for c in clients:
            rs = results.get((c, level), [])
            if not rs:
                continue
            med = {k: statistics.median(r[k] for r in rs) for k in rs[0]}
            lo, hi = min(r["steady50"] for r in rs), max(r["steady50"] for r in rs)
            print(
                f"| {c} | {level} | {med['steady_n']:.0f} | {med['steady50']:+.2f} "
                f"({lo:+.1f}..{hi:+.1f}) | {med['steady99']:+.2f} | {med['steadydeliv50']:.2f} |"
            )
    print("\nAll measured requests:\n")


if __name__ == "__main__":
    main()
