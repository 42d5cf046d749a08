"""`qgate run` of a profile with several candidates and a reuse pass, end to end on real vLLM (CPU,
SmolLM2): one run, three server starts, two stories.

One reference (prefix caching off) and two candidates: `prefix-cache` (a serving-policy change:
prefix caching on) and `fp8-weights` (a precision change: emulated FP8 weights, prefix caching
still off). The reference runs once; each candidate is gated and measured against it; one signed
report verifies against the profile, and its views show the side-by-side table.

The warm reuse pass asks the items again right after their cold pass, and the server's own
counters prove which path served it: `prefix-cache` reuses what its cold pass computed (warm
judged against the same side's cold pass: math.long's shared preamble makes its cold pass
largely cached by itself; exercised, PASS, perf runs); `fp8-weights` has the pass configured but
no cache to serve it from, so its pass gates end NOT EXERCISED, never PASS, and the run fails as
for any failed gate. The load pass asks the items inside filler traffic of 1.2x a small KV cache
(24 blocks of 128 tokens, 16 filler requests in flight): the engine preempts, and the items' own
served share comes from their answers' usage (enable_prompt_tokens_details), not the counter
window that holds the filler. The warm and load passes allow two cold-correct answers lost beyond
the reference's (`max_extra_flips: 2`): on the Intel AMX kind an answer depends on the batch and
on whether its prefix came from the cache (docs/measurements.md); at 0 one such turn of 4
items failed a benign candidate by chance, and at 1 two turns did in a CI run (2026-12-05).
This module shows the passes' plumbing, not the allowance's power. No divergence suite: its
scoring took 21 s a side of the module's 445 s on the AVX2-only kind (2026-12-06, alone), and
test_pipeline.py grades it on real vLLM.
Tiny sets (4 math items in the long form, one short perf scenario; no recall suite: it cost
~23 s a side in the reuse passes, and math.long shows both passes). Measured 2026-12-06 (2-core
AMD EPYC, AVX2 only, float32): candidate math.long reused share cold 63.0%, warm 84.0%; the
load pass 15 preemptions on the candidate (reference 14) while its items ran, the items 1,828
prompt tokens in a window of 3,628; the module 330 s alone, 445 s with recall, 48 KV blocks and
32 filler requests in flight.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from qgate.quality.reuse_records import shares
from qgate.report.model import Report
from qgate.report.render.md import render_markdown

pytestmark = pytest.mark.integration

QGATE = [sys.executable, "-m", "qgate.cli"]

PROFILE = """
name: it-multi
model: {embedded: smollm2}
target: {accelerator: cpu}
engine:
  cpu_dtype: auto
  args: {max_model_len: 1024, enforce_eager: true, enable_prompt_tokens_details: true,
         num_gpu_blocks_override: 24}
  startup_timeout_s: 600
  preflight: never
reference:
  args: {enable_prefix_caching: false}
candidates:
  prefix-cache:
    description: serving policy only
    args: {enable_prefix_caching: true}
  fp8-weights:
    args: {enable_prefix_caching: false}
    emulate_weights: {format: fp8_e4m3}
quality:
  concurrency: 4
  math: {prompts: [long], limit: 4, long_tokens: 384, max_flips: 1}
  reuse:
    passes: [warm, load]
    min_exercised_share: 0.5
    max_extra_flips: 2       # warm answers served from the cache turn where numerics vary:
                             # 2 of 4 long ones on the Intel AMX kind in CI (2026-12-05)
    load: {requests: 16, fill: 1.2, output_tokens: 16, max_prompt_tokens: 120}
lives: {probes: 0}  # graded in test_perf_probes_fault.py (CI time)
perf:
  probes: {items: 0}  # graded with lives in test_perf_probes_fault.py (CI time)
  scenarios:
    - {name: tiny, input_tokens: 32, output_tokens: 4, concurrency: 1, warmup: 0, requests: 2}
"""


def qgate(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*QGATE, *args], capture_output=True, text=True, env=env, timeout=900, check=False
    )


class MultiRun:
    """The one run of this module, and what its tests read from it."""

    def __init__(self, folder: Path) -> None:
        self.env = dict(os.environ, XDG_CONFIG_HOME=str(folder / "config"))
        self.env.pop("GITHUB_STEP_SUMMARY", None)
        assert qgate("keygen", "--out", str(folder / "k"), env=self.env).returncode == 0
        self.pubkey = folder / "k.pub.pem"
        self.profile = folder / "multi.yaml"
        self.profile.write_text(PROFILE)
        self.done = qgate(
            "run",
            str(self.profile),
            *("--out", str(folder / "runs"), "--key", str(folder / "k.pem")),
            *("--cache-dir", str(folder / "cache"), "--no-progress"),
            env=self.env,
        )
        line = next((ln for ln in self.done.stdout.splitlines() if ln.startswith("report: ")), None)
        assert line is not None, self.done.stdout + self.done.stderr
        self.envelope = Path(line.split(": ", 1)[1].strip())
        self.run_dir = self.envelope.parent
        shown = qgate("show", str(self.envelope), "--format", "json", env=self.env)
        assert shown.returncode == 0, shown.stderr
        self.report = json.loads(shown.stdout)
        self.reports = {c["name"]: c["report"] for c in self.report["candidates"]}


@pytest.fixture(scope="module")
def multi(tmp_path_factory: pytest.TempPathFactory, smollm2_checkpoint: Path) -> MultiRun:
    return MultiRun(tmp_path_factory.mktemp("multi"))


def test_one_reference_gates_and_measures_several_candidates(multi: MultiRun) -> None:
    done = multi.done
    # a NOT EXERCISED gate is never a pass: the run fails as for any failed gate
    assert done.returncode == 1, done.stdout + done.stderr
    reused = _prefix_cache_reused(multi)
    # one reference server for quality and perf, whatever the number of candidates
    run_dir = multi.run_dir
    assert (run_dir / "raw" / "reference-quality.json").is_file()
    assert (run_dir / "raw" / "reference-perf.json").is_file()
    for name in ("prefix-cache", "fp8-weights"):
        own = run_dir / "candidates" / name
        for file in ("raw/candidate-quality.json", "logs/candidate.log"):
            assert (own / file).is_file(), f"{name}/{file}"
    # perf only where every gate passed
    perf = run_dir / "candidates" / "prefix-cache" / "raw" / "candidate-perf.json"
    assert perf.is_file() == reused
    assert not (run_dir / "candidates" / "fp8-weights" / "raw" / "candidate-perf.json").exists()
    verified = qgate(
        "verify",
        str(multi.envelope),
        *("--pubkey", str(multi.pubkey), "--profile", str(multi.profile)),
        env=multi.env,
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "table of 2 candidates and overall verdict" in verified.stdout
    assert "reuse-pass answers re-derived" in verified.stdout
    md = (run_dir / "report.md").read_text()
    for column in (
        "Out tok/s ratio [95% CI]",
        "Req out tok/s ratio",
        "Decode tok/s ratio",
        "TTFT p90 ratio",
    ):
        assert column in md
    rows = {r["candidate"]: r for r in multi.report["table"]}
    if reused:
        assert rows["prefix-cache"]["speed"][0]["ratios"]["output_throughput"]["ratio"] > 0
    assert any("fp8_e4m3" in e for e in multi.reports["fp8-weights"]["emulated"])
    assert "<testsuite " in (run_dir / "junit.xml").read_text()
    picked = qgate(
        "compare", f"{multi.envelope}#prefix-cache", f"{multi.envelope}#fp8-weights", env=multi.env
    )
    assert picked.returncode == 0, picked.stdout + picked.stderr


def _prefix_cache_reused(multi: MultiRun) -> bool:
    """Whether the prefix-cache candidate PASSed with perf run (its warm and load passes
    exercised), or else FAILed only on reuse gates NOT EXERCISED: in two CI runs on the 2-core
    Zen 5 kind (2026-12-07) its warm pass found 0.0% of the cold pass's prompt tokens in the
    cache and its load pass preempted nothing, while the same module alone passed three times
    there (the cause is not known). qgate then says NOT EXERCISED, never PASS, which is what
    the module checks; the tests that need the candidate's perf records skip."""
    if "candidate prefix-cache (required): PASS; perf ran" in multi.done.stdout:
        return True
    assert "candidate prefix-cache (required): FAIL" in multi.done.stdout, multi.done.stdout
    report = multi.reports["prefix-cache"]
    failed = [v for v in report["quality"]["verdicts"] if not v["passed"]]
    assert failed, report["quality"]["verdicts"]
    for v in failed:
        assert v["gate"].startswith(("math.long@warm.", "math.long@load.")), v
        assert "NOT EXERCISED" in v["reason"] or v.get("not_exercised"), v
    return False


def _pass(report: dict[str, object], name: str, role: str, suite: str) -> dict[str, object]:
    passes = report["quality"]["passes"]  # type: ignore[index]
    run = next(p for p in passes if p["name"] == name and p["role"] == role)
    return next(s for s in run["suites"] if s["suite"] == suite)


def _warm(report: dict[str, object], role: str, suite: str) -> dict[str, object]:
    return _pass(report, "warm", role, suite)


def test_warm_is_proven_against_its_cold_pass(multi: MultiRun) -> None:
    """math.long's shared preamble makes the cold pass largely cached by itself: the warm gate
    counts what warm reused of the tokens the cold pass computed (issue 43)."""
    cached = multi.reports["prefix-cache"]
    gates = {v["gate"]: v for v in cached["quality"]["verdicts"]}
    for suite in ("math.long",):
        cold = _pass(cached, "cold", "candidate", suite)
        warm = _warm(cached, "candidate", suite)
        c = shares(cold["before"], cold["after"])  # type: ignore[arg-type]
        w = shares(warm["before"], warm["after"])  # type: ignore[arg-type]
        assert c.problem is None and w.problem is None, (c, w)
        was, now = c.of("reused"), w.of("reused")
        assert was is not None and now is not None and was < 1.0
        ex = gates[f"{suite}@warm.exercised"]
        assert ex["metric"] == "reused_beyond_cold_share"
        assert ex["observed"] == pytest.approx((now - was) / (1 - was))
        assert ex["passed"] is True and "against the same side's cold pass" in ex["reason"]
        print(f"{suite}: candidate reused share cold {was:.3f}, warm {now:.3f}")


def test_the_load_pass_counts_its_items_not_the_filler(multi: MultiRun) -> None:
    """The items' own prompt tokens come from their answers' usage (cached_tokens per request,
    --enable-prompt-tokens-details); the counter window also holds the filler's prompts."""
    cached = multi.reports["prefix-cache"]
    gates = {v["gate"]: v for v in cached["quality"]["verdicts"]}
    for suite in ("math.long",):
        for role in ("reference", "candidate"):
            load = _pass(cached, "load", role, suite)
            usage = load["usage"]  # type: ignore[index]
            window = shares(load["before"], load["after"]).prompt_tokens  # type: ignore[arg-type]
            assert usage["requests"] > 0 and usage["detailed"] == usage["requests"], usage
            assert window is not None and usage["prompt_tokens"] < window, (usage, window)
            print(f"{suite} {role}: items {usage}, window {window:,.0f} prompt tokens")
        ex = gates[f"{suite}@load.exercised"]
        assert "the items' own answers (usage.prompt_tokens_details, per request)" in ex["reason"]
        assert ex["n"] == int(_pass(cached, "load", "candidate", suite)["usage"]["prompt_tokens"])  # type: ignore[index]
        print(ex["reason"])


def test_warm_pass_exercised_with_prefix_caching_and_not_exercised_without(
    multi: MultiRun,
) -> None:
    cached = multi.reports["prefix-cache"]
    for suite in ("math.long",):
        cand = _warm(cached, "candidate", suite)
        got = shares(cand["before"], cand["after"])  # type: ignore[arg-type]
        assert got.device is not None and got.device >= 0.5, (suite, got)
        ref = _warm(cached, "reference", suite)
        assert shares(ref["before"], ref["after"]).device == 0.0  # type: ignore[arg-type]
    gates = {v["gate"]: v for v in cached["quality"]["verdicts"]}
    assert gates["math.long@warm.exercised"]["passed"] is True
    flips = gates["math.long@warm.self_flips"]
    assert flips["passed"] is True and "reference lost" in flips["reason"]  # both sides' flips

    plain = multi.reports["fp8-weights"]
    warm = [v for v in plain["quality"]["verdicts"] if "@warm." in v["gate"]]
    assert warm and all(v["passed"] is False and v["exercised"] is False for v in warm)
    assert plain["verdict"] == "FAIL"
    md = render_markdown(Report.model_validate(plain))
    assert "NOT EXERCISED math.long@warm" in md and "| NOT EXERCISED |" in md
    assert "Reuse passes: what served the prompts" in md
    assert "GateNotExercised" in (multi.run_dir / "junit.xml").read_text()


def test_perf_prompts_are_salted_and_their_cache_provenance_is_shown(multi: MultiRun) -> None:
    """Each side's perf requests carry their block's salt (qgate/perf/salts.py), and the
    report says where their prompt tokens came from: each request told its cached tokens
    (enable_prompt_tokens_details), none of them written by another request, and /metrics
    counted every prompt token by source (perf derivation 14)."""
    if not _prefix_cache_reused(multi):
        pytest.skip("the prefix-cache candidate's reuse passes were NOT EXERCISED: no perf ran")
    cached = multi.reports["prefix-cache"]
    (result,) = cached["perf"]["results"]
    runs = {r["role"]: r for r in cached["perf"]["runs"]}
    for role in ("reference", "candidate"):
        got = result["cache"][role]
        assert got["salted"] is True and runs[role]["params"]["cache_salt"] == f"qgate-{role}-r0-b0"
        assert got["requests"] == got["detailed"] == 2, got
        assert got["unexplained"] == 0 and got["prompt_tokens"] == 2 * 32, got
        counted = got["computed"] + got["device_cache"] + (got["external_tier"] or 0)
        assert counted >= got["prompt_tokens"], got  # the window also holds the probes' prompts
    md = render_markdown(Report.model_validate(cached))
    assert "Where prompt tokens came from" in md and "| candidate | 2 (2 told) | 64 |" in md
