"""How long `qgate verify` takes on a large report; prints the figures.

The report is synthetic: 10,000 exact-answer item records (5,000 per runtime),
10,000 perf request records (5,000 per runtime, 16 streamed tokens each) and a
64-sequence x 128-position divergence run with top-20 logprobs of both sides.
Its verdicts and figures come from the team's real functions, it is signed
with a fresh ECDSA P-256 key, and verification is timed in-process and as a
`qgate verify` subprocess. Goal: under 1 s.

    .venv/bin/python perf/bench_verify.py [--items 10000] [--requests 10000] [--resamples 2000]
"""

from __future__ import annotations

import argparse
import hashlib
import math
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from qgate.attest.keys import LoadedSigner, generate_private_pem, public_pem_of, signer_from_pem
from qgate.attest.statement import Subject
from qgate.gates.judgement import ScenarioResult
from qgate.perf.records import RequestRecord, ScenarioRun
from qgate.profile import Profile
from qgate.quality.cache_auth import ReferenceProvenance
from qgate.quality.records import DivergenceRun, DivergenceSequence, ItemRecord, SuiteRun
from qgate.report.model import PerfSection, QualitySection, Report
from qgate.report.signing import sign_report
from qgate.report.verdict import overall
from qgate.report.verify.single import default_recompute, verify_bytes


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _top20(rng: random.Random, token: int) -> dict[int, float]:
    """A top-20 logprob set (vLLM's shape: the scored token first, ids near it)."""
    logits = sorted((rng.gauss(0, 2) for _ in range(20)), reverse=True)
    ids = [token] + [token + 1 + k for k in range(19)]
    z = math.log(sum(math.exp(x) for x in logits) * 1.05)  # leave a tail
    return {t: x - z for t, x in zip(ids, logits, strict=True)}


def _sequence(rng: random.Random, j: int) -> DivergenceSequence:
    """128 positions of real top-20 logprobs on both sides; values from position_divergence."""
    from qgate.quality.divergence import position_divergence

    tokens = list(range(1000, 1128))
    ref = [_top20(rng, t) for t in tokens]
    cand = [{t: lp + rng.gauss(0, 0.01) for t, lp in r.items()} for r in ref]
    pos = [position_divergence(r, c, t, 20) for r, c, t in zip(ref, cand, tokens, strict=True)]
    return DivergenceSequence(
        id=f"s{j}",
        prompt_sha256=_sha(f"p{j}"),
        token_ids=tokens,
        kld=[p.kld for p in pos],
        top1_agree=[p.top1_agree for p in pos],
        delta_p=[p.delta_p for p in pos],
        reference_top_ids=[list(r) for r in ref],
        reference_top_logprobs=[list(r.values()) for r in ref],
        candidate_top_ids=[list(c) for c in cand],
        candidate_top_logprobs=[list(c.values()) for c in cand],
    )


def _cache_provenance() -> ReferenceProvenance:
    from qgate.quality.cache_auth import provenance_of, sign_entry

    pem = generate_private_pem("ecdsa")
    signer = LoadedSigner(signer_from_pem(pem), public_pem_of(pem), "file")
    envelope = sign_entry(b"{}", "ab" * 32, signer, "2026-11-29T00:00:00+00:00")
    return provenance_of("cache", envelope, signer.public_pem)


def build(items: int, requests: int, resamples: int) -> Report:
    rng = random.Random(1)
    fns = default_recompute()
    profile = Profile.model_validate(
        {
            "name": "bench",
            "model": {"embedded": "smollm2"},
            "candidate": {"args": {"kv_cache_dtype": "fp8"}},
            "quality": {
                "math": {"max_drop": 0.05, "prompts": ["short"]},
                "divergence": {"sequences": 64, "tokens": 128, "max_mean_kld": 0.05},
            },
            "perf": {
                "scenarios": [{"name": "s", "input_tokens": 64, "output_tokens": 16}],
                "bootstrap": resamples,
            },
        }
    )
    per_role = items // 2
    runs = []
    for role in ("reference", "candidate"):
        recs = []
        for i in range(per_role):
            ok = rng.random() < 0.8
            answer = str(i if ok else i + 1)
            recs.append(
                ItemRecord(
                    id=f"m{i:06d}",
                    prompt_sha256=_sha(str(i)),
                    output=f"The answer is {answer}.",
                    answer=answer,
                    expected=str(i),
                    correct=ok,
                    output_tokens=8,
                    finish_reason="stop",
                )
            )
        runs.append(
            SuiteRun(
                suite="math.short",
                role=role,
                data_sha256=_sha("d"),
                items=recs,
                cached=role == "reference",
            )
        )
    divergence = DivergenceRun(
        data_sha256=_sha("c"),
        top_k=20,
        tokens=128,
        sequences=[_sequence(rng, j) for j in range(64)],
    )
    perf_runs = []
    for role in ("reference", "candidate"):
        reqs = []
        for i in range(requests // 2):
            sent = i * 10_000_000
            first = sent + rng.randint(50_000_000, 150_000_000)
            times = [first + k * rng.randint(15_000_000, 25_000_000) for k in range(16)]
            times = sorted(times)
            reqs.append(
                RequestRecord(
                    index=i,
                    concurrency=4,
                    scheduled_ns=sent,
                    sent_ns=sent,
                    first_token_ns=first,
                    done_ns=times[-1] + 1000,
                    token_times_ns=times,
                    prompt_tokens=64,
                    output_tokens=16,
                    requested_output_tokens=16,
                )
            )
        perf_runs.append(
            ScenarioRun(
                scenario="s",
                role=role,
                kind="fixed",
                gpus=1,
                duration_ns=reqs[-1].done_ns,
                requests=reqs,
            )
        )
    assert profile.perf is not None
    ref_run, cand_run = perf_runs
    perf = PerfSection(
        status="ran",
        bootstrap_resamples=resamples,
        bootstrap_seed=0,
        runs=perf_runs,
        results=[
            ScenarioResult(
                scenario="s",
                reference=fns.summarize(ref_run, profile.perf.slo),
                candidate=fns.summarize(cand_run, profile.perf.slo),
                comparisons=fns.compare(ref_run, cand_run, resamples=resamples, seed=0),
                verdicts=fns.scenario_verdicts(profile.perf, cand_run),
            )
        ],
    )
    verdicts = fns.evaluate_quality(profile.quality, runs, divergence)
    report = Report(
        qgate_version="bench",
        created_at="2026-11-30T00:00:00Z",
        profile=profile.model_dump(mode="json"),
        profile_sha256=_sha("p"),
        quality=QualitySection(runs=runs, divergence=divergence, verdicts=verdicts),
        perf=perf,
        verdict="PASS",
        reference_provenance=_cache_provenance(),
    )
    report.verdict = overall(report.all_verdicts(), "ran")
    # the perf status must agree with the quality gates for verify to accept it
    if report.verdict == "FAIL" and not all(v.passed for v in verdicts):
        report.perf.status = "ungated"
        report.verdict = overall(report.all_verdicts(), "ungated")
    return report


def breakdown(data: bytes, public_pem: str, resamples: int) -> tuple[float, ...]:
    """Seconds spent parsing, in evaluate_quality, in summarize (both runs) and in compare."""
    from qgate.report.verify import single as v

    fns = default_recompute()
    t = time.perf_counter()
    payload, _ = v.check_signature(v.read_envelope(data), public_pem)
    _, parsed = v.parse_statement(payload)
    prof = Profile.model_validate(parsed.profile)
    t_parse = time.perf_counter() - t
    t = time.perf_counter()
    v._rederive(parsed, prof, "", v.VerifyResult(report=parsed, keyid="", subjects=[]))
    t_rederive = time.perf_counter() - t
    t = time.perf_counter()
    v.recompute_quality(parsed, prof, fns)
    t_quality = time.perf_counter() - t
    assert prof.perf is not None
    ref_run, cand_run = parsed.perf.runs
    t = time.perf_counter()
    for run in parsed.perf.runs:
        fns.summarize(run, prof.perf.slo)
    t_summ = time.perf_counter() - t
    t = time.perf_counter()
    fns.compare(ref_run, cand_run, resamples=resamples, seed=0)
    t_cmp = time.perf_counter() - t
    return t_parse, t_rederive, t_quality, t_summ, t_cmp


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--items", type=int, default=10_000)
    ap.add_argument("--requests", type=int, default=10_000)
    ap.add_argument("--resamples", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    t0 = time.perf_counter()
    report = build(args.items, args.requests, args.resamples)
    pem = generate_private_pem("ecdsa")
    signer = LoadedSigner(signer_from_pem(pem), public_pem_of(pem), "file")
    data = sign_report(
        report, [Subject(name="profile/bench.yaml", sha256=report.profile_sha256)], signer
    )
    print(
        f"report: {args.items} item records, {args.requests} request records, "
        f"{len(data) / 1e6:.1f} MB envelope; built and signed in {time.perf_counter() - t0:.2f} s"
    )

    times = []
    for _ in range(args.repeat):
        t = time.perf_counter()
        result = verify_bytes(data, signer.public_pem)
        times.append(time.perf_counter() - t)
    print(
        f"verify in-process: best {min(times):.3f} s, "
        f"median {sorted(times)[len(times) // 2]:.3f} s "
        f"over {args.repeat} runs (verdict {result.report.verdict})"
    )

    # where the time goes: envelope/signature/schema (qgate.report), then the
    # team's recomputation functions (quality gates, perf summaries, bootstrap),
    # with the garbage collector paused as verify_bytes pauses it
    from qgate.report.verify import single as v

    with v.cyclic_gc_paused():
        t_parse, t_red, t_quality, t_summ, t_cmp = breakdown(
            data, signer.public_pem, args.resamples
        )
    print(
        f"breakdown: envelope+signature+schema {t_parse:.3f} s, "
        f"re-derive correctness+divergence+provenance {t_red:.3f} s, "
        f"evaluate_quality {t_quality:.3f} s, "
        f"summarize x2 {t_summ:.3f} s, compare (bootstrap {args.resamples}) {t_cmp:.3f} s"
    )

    with tempfile.TemporaryDirectory() as tmp:
        env_path = Path(tmp) / "report.intoto.jsonl"
        env_path.write_bytes(data)
        pub = Path(tmp) / "k.pub.pem"
        pub.write_text(signer.public_pem)
        qgate = Path(sys.executable).with_name("qgate")
        cmd = [str(qgate), "verify", str(env_path), "--pubkey", str(pub)]
        sub_times = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
            sub_times.append(time.perf_counter() - t)
            if proc.returncode != 0:
                print(proc.stdout, proc.stderr)
                raise SystemExit(f"qgate verify exited {proc.returncode}")
        print(
            f"verify subprocess (`qgate verify`, incl. interpreter start): "
            f"best {min(sub_times):.3f} s, "
            f"median {sorted(sub_times)[len(sub_times) // 2]:.3f} s"
        )


if __name__ == "__main__":
    main()
