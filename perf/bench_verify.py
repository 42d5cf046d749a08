"""How long `qgate verify` takes on a field-scale report; prints the figures and the machine.

The report is synthetic but field-sized (issue 54: verify of such a report takes under 5 s):

- 4 exact-answer suites of `--items` items per side (1,319: GSM8K's test split): math.short
  and math.long (the shipped set extended to `limit` items) and two local GSM8K-like lm-eval
  tasks (exact_match on the filtered answer; YAMLs and data written beside the report);
- a divergence run of `--sequences` x `--tokens` scored positions (256 x 128 = 32,768), top-20
  logprobs on both sides, each value from `position_divergence`;
- a one-hour agent scenario (`--duration` s of multi-turn conversations, 4 at a time,
  `--output-tokens` streamed tokens a turn, ~4,100 requests a side) with its per-minute time
  series. The records carry no graded probes and the profile asks none (`probes.items: 0`).

The quality verdicts come from `gates.judge.quality_verdicts` and every other derived field
from the one judge through `report.assemble.build_report`, as `qgate run` makes them; the
reference is 'fresh', its cache entry and the report signed with one fresh ECDSA P-256 key.
Verification is timed in-process (`verify_any_file`, what `qgate verify` runs once imported)
and as a `qgate verify --profile` subprocess (interpreter start and imports included), each
the median of `--repeat` runs, wall and CPU time: on a shared machine the CPU time is the
steadier figure. Goal: under 5 s.

`--compile` compiles the checkouts' qgate into their __pycache__ first (compileall), as an
installed qgate's .pyc files are: where PYTHONDONTWRITEBYTECODE is set and a checkout has no
__pycache__, every process compiles qgate's ~200 modules from source otherwise (~0.4 s of CPU
on the 2-core EPYC; the bench says which it measured).

`--baseline DIR` times another checkout beside this one (`git archive REV | tar -x -C DIR`):
for each of `--repeat` rounds, one fresh process per checkout verifying once imported, then
one `qgate verify` process per checkout, the two checkouts alternating so that both see the
same load. The report is this checkout's; the baseline must accept it.

    PYTHONPATH=$PWD .venv/bin/python perf/bench_verify.py [--items 1319] [--sequences 256]
        [--tokens 128] [--duration 3600] [--repeat 5] [--profile-top N] [--keep DIR]
        [--baseline DIR] [--compile]
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import json
import math
import os
import platform
import pstats
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from qgate.attest.keys import LoadedSigner, generate_private_pem, public_pem_of, signer_from_pem
from qgate.checkpoint.digests import FileDigest
from qgate.core.serving import EffectiveConfig
from qgate.gates.judge import perf_status, quality_verdicts
from qgate.gates.judgement import Evidence
from qgate.perf.records import RequestRecord, ScenarioRun
from qgate.perf.salts import salt_scope
from qgate.profile import MathSuite, Profile
from qgate.quality.cache_auth import provenance_of, sign_entry
from qgate.quality.data import evals_root, read_eval_file
from qgate.quality.divergence import position_divergence
from qgate.quality.lmeval_suite import lm_eval_data_sha256
from qgate.quality.math_set import (
    PREAMBLE,
    PROMPT_VERSION,
    long_prompt,
    math_data_sha256,
    math_items,
    short_prompt,
)
from qgate.quality.records import DivergenceRun, DivergenceSequence, ItemRecord, SuiteRun
from qgate.report.assemble import build_report
from qgate.report.inputs import ReportInputs
from qgate.report.model import Report
from qgate.report.signing import sign_report, subjects_for
from qgate.report.verify.multi import verify_any_file
from qgate.runtime.capabilities import caps_of, select_machine
from qgate.runtime.fingerprint import CpuInfo, Fingerprint

ROOT = Path(__file__).resolve().parents[1]
S = 1_000_000_000
TASKS = ("bench_gsm8k", "bench_gsm8k_cot")
LM_EVAL_YAML = """task: {task}
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: generate_until
doc_to_text: "Question: {{{{question}}}}\\nAnswer:"
doc_to_target: "{{{{answer}}}}"
filter_list:
  - name: last-integer
    filter:
      - function: regex
        regex_pattern: "(-?[0-9][0-9,]*)"
        group_select: -1
      - function: take_first
metric_list:
  - metric: exact_match
    aggregation: mean
    higher_is_better: true
    ignore_case: true
    regexes_to_ignore: [","]
"""


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def profile_json(args: argparse.Namespace, tasks_dir: Path) -> dict[str, Any]:
    # the bound rule over fewer items can never show 2 points; a smoke run (--items 20) gates
    # on the point drop instead, which reads the same records
    policy: dict[str, Any] = {"max_drop": 0.02}
    if args.items < 400:
        policy = {"max_drop": 0.25, "rule": "point"}
    return {
        "name": "bench-verify",
        "model": {"embedded": "smollm2"},
        "candidate": {"args": {"kv_cache_dtype": "fp8"}},
        "quality": {
            "math": {**policy, "prompts": ["short", "long"], "limit": args.items},
            "lm_eval": [
                {**policy, "task": t, "include_path": str(tasks_dir), "limit": args.items}
                for t in TASKS
            ],
            "divergence": {
                "sequences": args.sequences,
                "tokens": args.tokens,
                "max_mean_kld": 0.05,
            },
        },
        "perf": {
            "scenarios": [
                {
                    "name": "agent-4",
                    "kind": "multi_turn",
                    "conversations": 4,
                    "turns": 16,
                    "shared_prefix_tokens": 1024,
                    "turn_input_tokens": 64,
                    "output_tokens": args.output_tokens,
                    "duration_s": args.duration,
                    "series_bucket_s": 60,
                }
            ],
            # no graded probes: the records carry none, so the plan asks none
            "probe_share": 0.0,
            "probes": {"items": 0},
        },
        "lives": {"probes": 0},  # nor life probes: verify holds every life to its records
    }


def write_tasks(folder: Path, n: int) -> None:
    """Two local GSM8K-like lm-eval tasks over one `n`-document JSONL file."""
    data = folder / "gsm8k_like.jsonl"
    rows = [{"question": f"What is {i} + {i}?", "answer": str(2 * i)} for i in range(n)]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    for task in TASKS:
        (folder / f"{task}.yaml").write_text(LM_EVAL_YAML.format(task=task, data=data))


def _wrong(rng: random.Random, n: int) -> tuple[set[int], set[int]]:
    """Items the reference and the candidate answer wrong: 15% each, two lost, two gained."""
    ref = set(rng.sample(range(n), max(2, n * 15 // 100)))
    right = sorted(set(range(n)) - ref)
    lost, gained = set(rng.sample(right, 2)), set(rng.sample(sorted(ref), 2))
    return ref, (ref - gained) | lost


def math_runs(rng: random.Random, spec: MathSuite) -> list[SuiteRun]:
    items = math_items(spec)
    preamble = read_eval_file(evals_root() / PREAMBLE).decode()[:12_000]
    ref_wrong, cand_wrong = _wrong(rng, len(items))
    runs = []
    for form in spec.prompts:
        params: dict[str, str | int | float | bool | None] = {
            "form": form,
            "temperature": 0.0,
            "seed": 0,
            "max_tokens": spec.max_tokens,
            "concurrency": 8,
            "prompt_version": PROMPT_VERSION,
        }
        if form == "long":
            params |= {
                "preamble_tokens_budget": spec.long_tokens,
                "preamble_chars": len(preamble),
                "preamble_sha256": _sha(preamble),
            }
        for role, wrong in (("reference", ref_wrong), ("candidate", cand_wrong)):
            records = []
            for i, item in enumerate(items):
                answer = str(item.answer + (1 if i in wrong else 0))
                prompt = (
                    short_prompt(item.question)
                    if form == "short"
                    else long_prompt(preamble, item.question)
                )
                records.append(
                    ItemRecord(
                        id=item.id,
                        prompt_sha256=_sha(prompt),
                        output=f"The answer is {answer}.",
                        answer=answer,
                        expected=str(item.answer),
                        correct=i not in wrong,
                        output_tokens=7,
                        finish_reason="stop",
                    )
                )
            runs.append(
                SuiteRun(
                    suite=f"math.{form}",
                    role=role,  # type: ignore[arg-type]
                    data_sha256=math_data_sha256(
                        spec, form, max_model_len=None, long_tokens=spec.long_tokens
                    ),
                    params=params,
                    items=records,
                    wall_s=60.0,
                )
            )
    return runs


def lm_eval_runs(rng: random.Random, profile: Profile, n: int) -> list[SuiteRun]:
    runs = []
    for task in profile.quality.lm_eval:
        ref_wrong, cand_wrong = _wrong(rng, n)
        for role, wrong in (("reference", ref_wrong), ("candidate", cand_wrong)):
            records = []
            for i in range(n):
                answer = f"{2 * i + (1 if i in wrong else 0):,}"
                records.append(
                    ItemRecord(
                        id=f"doc-{i:05d}",
                        prompt_sha256=_sha(f"{task.task} {i}"),
                        output=f" {i} plus {i} makes {answer}.",
                        answer=answer,
                        expected=str(2 * i),
                        correct=i not in wrong,
                        score=0.0 if i in wrong else 1.0,
                    )
                )
            runs.append(
                SuiteRun(
                    suite=f"lm_eval.{task.task}",
                    role=role,  # type: ignore[arg-type]
                    data_sha256=lm_eval_data_sha256(task),
                    params={"backend": "local-completions", "metric": task.metric, "limit": n},
                    items=records,
                    wall_s=90.0,
                )
            )
    return runs


def _top20(rng: random.Random, token: int) -> dict[int, float]:
    """A top-20 logprob set (vLLM's shape: the scored token first, ids near it)."""
    logits = sorted((rng.gauss(0, 2) for _ in range(20)), reverse=True)
    z = math.log(sum(math.exp(x) for x in logits) * 1.05)  # leave a tail
    return {token + k: x - z for k, x in enumerate(logits)}


def divergence_run(rng: random.Random, sequences: int, tokens: int) -> DivergenceRun:
    """`sequences` x `tokens` positions; each value from position_divergence, as the run's."""
    out = []
    for j in range(sequences):
        ids = [1000 + 7 * j + t for t in range(tokens)]
        ref = [_top20(rng, t) for t in ids]
        cand = [{t: lp + rng.gauss(0, 0.01) for t, lp in r.items()} for r in ref]
        pos = [position_divergence(r, c, t, 20) for r, c, t in zip(ref, cand, ids, strict=True)]
        out.append(
            DivergenceSequence(
                id=f"s{j:04d}",
                prompt_sha256=_sha(f"p{j}"),
                token_ids=ids,
                kld=[p.kld for p in pos],
                top1_agree=[p.top1_agree for p in pos],
                delta_p=[p.delta_p for p in pos],
                reference_top_ids=[list(r) for r in ref],
                reference_top_logprobs=[list(r.values()) for r in ref],
                candidate_top_ids=[list(c) for c in cand],
                candidate_top_logprobs=[list(c.values()) for c in cand],
            )
        )
    return DivergenceRun(data_sha256=_sha("corpus"), top_k=20, tokens=tokens, sequences=out)


def agent_run(rng: random.Random, role: str, duration_s: float, tokens: int) -> ScenarioRun:
    """`duration_s` of 4 conversations at a time, 16 turns each, `tokens` streamed a turn."""
    itl = 25_000_000 if role == "reference" else 20_000_000
    recs: list[RequestRecord] = []
    free = [0, 0, 0, 0]  # when each of the 4 conversation slots can send again
    conversation = [0, 1, 2, 3]
    turn = [0, 0, 0, 0]
    started = 4
    end = int(duration_s * S)
    while True:
        slot = min(range(4), key=free.__getitem__)
        sent = free[slot]
        if sent >= end:
            break
        first = sent + int(rng.uniform(0.15, 0.45) * S)
        times = [first]
        for _ in range(tokens - 1):
            times.append(times[-1] + itl + rng.randint(-2_000_000, 2_000_000))
        done = times[-1] + 1_000
        recs.append(
            RequestRecord(
                index=len(recs),
                conversation=conversation[slot],
                turn=turn[slot],
                scheduled_ns=sent,
                sent_ns=sent,
                first_token_ns=first,
                done_ns=done,
                token_times_ns=times,
                chunk_tokens=[1] * tokens,
                prompt_tokens=1024 + turn[slot] * (64 + tokens) + 64,
                output_tokens=tokens,
                requested_output_tokens=tokens,
            )
        )
        free[slot] = done
        turn[slot] += 1
        if turn[slot] == 16:  # a new conversation from the shared prefix
            conversation[slot], turn[slot] = started, 0
            started += 1
    return ScenarioRun(
        scenario="agent-4",
        role=role,  # type: ignore[arg-type]
        kind="multi_turn",
        params={
            "warmup": 0,
            "requests": None,
            "duration_s": duration_s,
            "series_bucket_s": 60,
            "cache_salt": salt_scope(role, 0, 0),  # as qgate run salts a vLLM side's perf
        },
        gpus=1,
        duration_ns=max(r.done_ns for r in recs),
        requests=recs,
    )


def fingerprint() -> Fingerprint:
    return Fingerprint(
        hostname="bench-host",
        os="Linux-6.1-x86_64",
        python="3.12.0",
        cpu=CpuInfo(model="Bench CPU", logical_cores=128, flags=["avx512f", "amx_bf16"]),
        packages={"vllm": "0.11.0", "torch": "2.8.0"},
        checkpoint_dir="/models/bench",
        checkpoint=[
            FileDigest(path="config.json", size=2, sha256=_sha("config")),
            FileDigest(path="model.safetensors", size=9, sha256=_sha("weights")),
        ],
        checkpoint_sha256=_sha("tree"),
    )


def configs(profile: Profile) -> list[EffectiveConfig]:
    cand_args = {**profile.engine.args, **profile.candidate.args}
    return [
        EffectiveConfig(
            role="reference",
            kind="vllm",
            base_url="http://127.0.0.1:8001/v1",
            served_model="bench",
            engine_version="0.11.0",
            dtype="bfloat16",
            kv_cache_dtype="auto",
        ),
        EffectiveConfig(
            role="candidate",
            kind="vllm",
            base_url="http://127.0.0.1:8002/v1",
            served_model="bench",
            engine_version="0.11.0",
            dtype="bfloat16",
            kv_cache_dtype="fp8",
            args=cand_args,
        ),
    ]


def build(args: argparse.Namespace, folder: Path, signer: LoadedSigner) -> tuple[Report, Path]:
    """The report (assembled as `qgate run` assembles it) and the profile file it embeds; its
    reference measured in this run ('fresh'), the entry signed by `signer`."""
    rng = random.Random(1)
    write_tasks(folder, args.items)
    profile_path = folder / "bench.yaml"
    profile_path.write_text(json.dumps(profile_json(args, folder), indent=2))  # JSON is YAML
    profile = Profile.model_validate(json.loads(profile_path.read_text()))
    assert profile.quality.math is not None and profile.perf is not None
    runs = math_runs(rng, profile.quality.math) + lm_eval_runs(rng, profile, args.items)
    divergence = divergence_run(rng, args.sequences, args.tokens)
    fp, cfgs = fingerprint(), configs(profile)
    evidence = Evidence(runs=tuple(runs), divergence=divergence, configs=tuple(cfgs))
    verdicts = quality_verdicts(profile, evidence)
    status = perf_status(verdicts, skip_perf=False, force_perf=False)
    perf_runs = [
        agent_run(rng, r, args.duration, args.output_tokens) for r in ("reference", "candidate")
    ]
    report = build_report(
        ReportInputs(
            profile=profile,
            profile_sha256=subjects_for(profile_path, None)[0].sha256,
            fingerprint=fp,
            evidence=Evidence(
                configs=tuple(cfgs),
                runs=tuple(runs),
                divergence=divergence,
                status=status,
                perf_runs=tuple(perf_runs if status == "ran" else []),
                host=fp.hostname,
            ),
            verdicts=tuple(verdicts),
            stage_timings={"reference_quality": 400.0, "candidate_quality": 400.0, "perf": 7300.0},
            capability_notes=tuple(select_machine(profile, caps_of(fp)).notes),
            reference_provenance=provenance_of(
                "fresh", sign_entry(b"{}", "ab" * 32, signer), signer.public_pem
            ),
        )
    )
    return report, profile_path


def machine() -> str:
    model, flags = platform.processor() or "unknown CPU", set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name":
                model = value.strip()
            elif key.strip() == "flags":
                flags = set(value.split())
                break
    except OSError:
        pass
    simd = ", ".join(f for f in ("avx512f", "avx2") if f in flags) or "neither avx512f nor avx2"
    return f"{model} ({os.cpu_count()} logical CPUs; {simd}), Python {platform.python_version()}"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--items", type=int, default=1319, help="items per suite per side")
    ap.add_argument("--sequences", type=int, default=256, help="divergence sequences")
    ap.add_argument("--tokens", type=int, default=128, help="positions per sequence")
    ap.add_argument("--duration", type=float, default=3600.0, help="agent scenario, seconds")
    ap.add_argument("--output-tokens", type=int, default=128, help="streamed tokens a turn")
    ap.add_argument("--repeat", type=int, default=5, help="timed verifications of each kind")
    ap.add_argument("--profile-top", type=int, default=0, help="cProfile one verify, top N")
    ap.add_argument("--keep", type=Path, help="write the report, key and profile here")
    ap.add_argument("--baseline", type=Path, help="another checkout to time beside this one")
    ap.add_argument("--compile", action="store_true", help="compile the checkouts' bytecode first")
    return ap.parse_args(argv)


def write_signed(args: argparse.Namespace, folder: Path) -> tuple[Path, Path, Path]:
    """Build, sign and write the report: (envelope, public key, profile) under `folder`."""
    pem = generate_private_pem("ecdsa")
    signer = LoadedSigner(signer_from_pem(pem), public_pem_of(pem), "file")
    report, profile_path = build(args, folder, signer)
    envelope = folder / "report.intoto.jsonl"
    envelope.write_bytes(
        sign_report(report, subjects_for(profile_path, report.fingerprint), signer)
    )
    pub = folder / "key.pub.pem"
    pub.write_text(signer.public_pem)
    return envelope, pub, profile_path


def _median(values: list[float]) -> str:
    return f"median {statistics.median(values):.2f} s (min {min(values):.2f})"


# a fresh process: import, then time one verify_any_file; prints wall, CPU and which qgate
ONCE_IMPORTED = """
import json, sys, time
from pathlib import Path
import qgate
from qgate.report.verify.multi import verify_any_file
t, c = time.perf_counter(), time.process_time()
verify_any_file(*map(Path, sys.argv[1:4]))
print(json.dumps([time.perf_counter() - t, time.process_time() - c, qgate.__file__]))
"""


def _process_cmd(files: tuple[Path, Path, Path]) -> list[str]:
    """`qgate verify REPORT --pubkey KEY --profile PROFILE`, the venv's console script."""
    envelope, pub, profile_path = files
    qgate = Path(sys.executable).with_name("qgate")
    return [
        str(qgate),
        "verify",
        str(envelope),
        "--pubkey",
        str(pub),
        "--profile",
        str(profile_path),
    ]


def compile_bytecode(roots: list[Path]) -> None:
    """Each checkout's qgate compiled into its __pycache__ (ignored by git), as an installed
    qgate's .pyc files are: compileall writes them whatever PYTHONDONTWRITEBYTECODE says."""
    for root in roots:
        cmd = [sys.executable, "-m", "compileall", "-q", str(root / "qgate")]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def bytecode_line(compiled: bool) -> str:
    if compiled:
        return "bytecode: every checkout's qgate compiled first (compileall), as installed"
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        return (
            "bytecode: PYTHONDONTWRITEBYTECODE is set: a checkout without __pycache__ is "
            "compiled from source by every process (--compile: as installed)"
        )
    return "bytecode: in each checkout's __pycache__, as Python writes it"


def _timed(cmd: list[str], root: Path) -> tuple[float, float, str]:
    """Wall and CPU seconds of one child process run from checkout `root`, and its stdout."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    # run from `root`: `python -c` puts the working folder first on sys.path
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env, cwd=root)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        print(proc.stdout, proc.stderr)
        raise SystemExit(f"{cmd[0]} from {root} exited {proc.returncode}")
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return wall, cpu, proc.stdout


def compare_checkouts(args: argparse.Namespace, files: tuple[Path, Path, Path]) -> None:
    """This checkout and `--baseline`, alternating: verify once imported, and as a process."""
    envelope, pub, profile_path = files
    roots = {"this checkout": ROOT, f"baseline {args.baseline}": args.baseline}
    once = [sys.executable, "-c", ONCE_IMPORTED, str(envelope), str(pub), str(profile_path)]
    process = _process_cmd(files)
    got: dict[str, dict[str, list[float]]] = {k: {} for k in roots}
    for _ in range(args.repeat):
        for name, root in roots.items():
            wall, cpu, imported = json.loads(_timed(once, root)[2])
            if not Path(imported).is_relative_to(root.resolve()):
                raise SystemExit(f"{name}: imported {imported}, not the checkout's qgate")
            got[name].setdefault("once imported, wall", []).append(wall)
            got[name].setdefault("once imported, CPU", []).append(cpu)
        for name, root in roots.items():
            wall, cpu, _ = _timed(process, root)
            got[name].setdefault("as a process, wall", []).append(wall)
            got[name].setdefault("as a process, CPU", []).append(cpu)
    for name, figures in got.items():
        print(f"{name} ({args.repeat} runs each, alternating):")
        for what, values in figures.items():
            print(f"  verify {what}: {_median(values)}")


def main() -> None:
    args = parse_args()
    print(f"machine: {machine()}; load average {os.getloadavg()[0]:.1f} at the start")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) if args.keep is None else args.keep
        folder.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        envelope, pub, profile_path = write_signed(args, folder)
        print(
            f"report: 4 suites x {args.items} items per side, {args.sequences} x {args.tokens} "
            f"divergence positions (top-20), a {args.duration:g} s agent scenario with its "
            f"series; {envelope.stat().st_size / 1e6:.1f} MB envelope; built and signed in "
            f"{time.perf_counter() - t0:.1f} s"
        )

        # in-process: what `qgate verify` runs once its modules are imported
        walls, cpus = [], []
        for _ in range(args.repeat):
            t, c = time.perf_counter(), time.process_time()
            result = verify_any_file(envelope, pub, profile_path)
            walls.append(time.perf_counter() - t)
            cpus.append(time.process_time() - c)
        print(f"report: {result.report.verdict}, {len(result.checked)} checks hold:")
        for line in result.checked:
            print(f"  ok  {line}")
        for line in result.notes:
            print(f"  note {line}")
        print(
            f"verify in-process (verify_any_file, {args.repeat} runs): wall {_median(walls)}, "
            f"CPU {_median(cpus)}; goal < 5 s"
        )

        if args.profile_top:
            prof = cProfile.Profile()
            prof.runcall(verify_any_file, envelope, pub, profile_path)
            pstats.Stats(prof).sort_stats("cumulative").print_stats(args.profile_top)

        if args.compile:
            compile_bytecode([ROOT] + ([args.baseline] if args.baseline else []))
        print(bytecode_line(args.compile))
        walls, cpus = [], []
        for _ in range(args.repeat):
            wall, cpu, _ = _timed(_process_cmd((envelope, pub, profile_path)), ROOT)
            walls.append(wall)
            cpus.append(cpu)
        print(
            f"verify subprocess (`qgate verify --profile`, interpreter start and imports "
            f"included, {args.repeat} runs): wall {_median(walls)}, CPU {_median(cpus)}"
        )
        if args.baseline is not None:
            compare_checkouts(args, (envelope, pub, profile_path))
        print(f"load average {os.getloadavg()[0]:.1f} at the end (other work shares the CPUs)")


if __name__ == "__main__":
    main()
