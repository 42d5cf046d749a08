"""A speculative candidate on real vLLM (CPU, SmolLM2): n-gram prompt lookup, acceptance gated.

One run of two lives: the reference (no speculation) and a candidate that speculates with
vLLM's n-gram method (`--speculative-config`): `ngram` (3 tokens a draft, looked up from 2-3
token matches) drafts on the recall haystacks and the long math preamble and its acceptance
length clears the floor (PASS; its quality gated against the reference as usual). The report
holds both sides' counter snapshots, so verify re-derives the gate; the same records judged
against a floor above what `ngram` reached FAIL it, and against more drafts than it made are
NOT EXERCISED, never a PASS (zero drafts: tests/unit/quality/test_spec_gates.py; a NOT
EXERCISED gate failing the candidate and the run: test_multi_vllm.py's `fp8-weights`).

A further speculative candidate joins `candidates:` below (one life more, the same reference);
a candidate here that does not speculate fails its acceptance gate (NOT EXERCISED).

Measured 2026-12-03 (this CPU, two cores shared with other work; SmolLM2, bf16 where the CPU
has it): `ngram` drafted 59 times over 4 short + 4 long math items and 4 recall items, 103 of
176 draft tokens accepted: acceptance length 2.75, rate 58.5% (per draft position 0.69, 0.59,
0.46). Its suites took 9.1 s (math) and 6.0 s (recall) against the reference's 16.4 s and
9.1 s: about 1.1 s against 2.1 s a math item, 1.5 s against 2.3 s a recall item. 317 s for
the module with a third life (a candidate that never drafted, since dropped for CI time).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from qgate.profile.load_multi import first_profile, load_multi_file
from qgate.quality.spec_counters import SpecSnapshot
from qgate.quality.spec_gates import acceptance, evaluate_speculative

pytestmark = pytest.mark.integration

QGATE = [sys.executable, "-m", "qgate.cli"]
NGRAM = '{"method":"ngram","num_speculative_tokens":3,"prompt_lookup_max":3,"prompt_lookup_min":2}'

PROFILE = f"""
name: it-spec
model: {{embedded: smollm2}}
target: {{accelerator: cpu}}
engine:
  cpu_dtype: auto
  args: {{max_model_len: 1024, enforce_eager: true}}
  startup_timeout_s: 600
  preflight: never
candidates:
  ngram:
    args: {{speculative_config: '{NGRAM}'}}
quality:
  concurrency: 4
  math: {{prompts: [short, long], limit: 4, long_tokens: 384, max_drop: 0.5}}
  recall: {{context_tokens: [384], haystacks: 2, depths: [0.3, 0.7], max_drop: 0.5}}
  speculative: {{min_acceptance_length: 1.2}}
lives: {{probes: 0}}  # graded in test_perf_probes_fault.py (CI time)
"""


def qgate(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*QGATE, *args], capture_output=True, text=True, env=env, timeout=900, check=False
    )


class SpecRun:
    """The one run of this module, and what its tests read from it."""

    def __init__(self, folder: Path) -> None:
        self.env = dict(os.environ, XDG_CONFIG_HOME=str(folder / "config"))
        self.env.pop("GITHUB_STEP_SUMMARY", None)
        assert qgate("keygen", "--out", str(folder / "k"), env=self.env).returncode == 0
        self.pubkey = folder / "k.pub.pem"
        self.profile = folder / "spec.yaml"
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
        shown = qgate("show", str(self.envelope), "--format", "json", env=self.env)
        assert shown.returncode == 0, shown.stderr
        self.reports = {c["name"]: c["report"] for c in json.loads(shown.stdout)["candidates"]}

    def gate(self, name: str, gate: str) -> dict[str, object]:
        verdicts = self.reports[name]["quality"]["verdicts"]
        return next(v for v in verdicts if v["gate"] == gate)

    def snapshots(self, name: str) -> list[SpecSnapshot]:
        raw = self.reports[name]["quality"]["speculative"]
        return [SpecSnapshot.model_validate(s) for s in raw]


@pytest.fixture(scope="module")
def spec(tmp_path_factory: pytest.TempPathFactory, smollm2_checkpoint: Path) -> SpecRun:
    return SpecRun(tmp_path_factory.mktemp("spec"))


def test_ngram_acceptance_is_shown_and_gated(spec: SpecRun) -> None:
    out = spec.done.stdout
    assert spec.done.returncode == 0, out + spec.done.stderr
    assert "candidate ngram (required): PASS" in out, out
    length = spec.gate("ngram", "speculative.acceptance_length")
    assert length["passed"] is True and length["exercised"] is True, length
    assert isinstance(length["observed"], float) and length["observed"] >= 1.2, length
    assert spec.gate("ngram", "speculative.counters")["passed"] is True
    configs = spec.reports["ngram"]["effective_configs"]
    cand = next(c for c in configs if c["role"] == "candidate")
    ref = next(c for c in configs if c["role"] == "reference")
    assert "method='ngram'" in (cand["speculative_config"] or ""), cand["speculative_config"]
    assert ref["speculative_config"] == "None", ref["speculative_config"]
    # the change is confirmed by the server's own log: no warning names it
    assert not any("speculative_config" in w for w in spec.reports["ngram"]["warnings"])
    snaps = spec.snapshots("ngram")
    got = acceptance(snaps, "candidate")
    assert got is not None and got.drafts > 0 and got.accepted <= got.draft_tokens
    cost = {s.role: max(x.seconds for x in snaps if x.role == s.role) for s in snaps}
    print(
        f"ngram: acceptance length {got.length:.3f}, rate {got.rate:.1%} "
        f"({got.accepted:g} of {got.draft_tokens:g} draft tokens in {got.drafts:g} drafts); "
        f"quality stage seconds {cost}; snapshots "
        + "; ".join(f"{s.role} {s.at} {s.seconds}s {s.counters}" for s in snaps)
    )


def test_fewer_drafts_than_asked_is_not_exercised(spec: SpecRun) -> None:
    """The same records against a `min_drafts` above what `ngram` drafted: NOT EXERCISED (not
    a FAIL on the length), never a PASS, whatever the length reached."""
    profile = first_profile(load_multi_file(spec.profile)).model_copy(deep=True)  # ngram
    snaps = spec.snapshots("ngram")
    got = acceptance(snaps, "candidate")
    assert got is not None and got.drafts > 0
    assert profile.quality.speculative is not None
    profile.quality.speculative.min_drafts = int(got.drafts) + 1
    length = {v.gate: v for v in evaluate_speculative(profile, snaps)}[
        "speculative.acceptance_length"
    ]
    assert length.passed is False and length.exercised is False, length
    assert length.reason.startswith(f"NOT EXERCISED: {int(got.drafts)} drafts"), length


def test_a_floor_above_the_reached_acceptance_fails_it(spec: SpecRun) -> None:
    profile = first_profile(load_multi_file(spec.profile)).model_copy(deep=True)  # ngram
    snaps = spec.snapshots("ngram")
    got = acceptance(snaps, "candidate")
    assert got is not None and got.length is not None
    assert profile.quality.speculative is not None
    profile.quality.speculative.min_acceptance_length = got.length + 0.25
    verdicts = {v.gate: v for v in evaluate_speculative(profile, snaps)}
    assert verdicts["speculative.acceptance_length"].passed is False
    assert verdicts["speculative.acceptance_length"].exercised is True


def test_the_report_verifies_with_the_gate_re_derived(spec: SpecRun) -> None:
    verified = qgate(
        "verify",
        str(spec.envelope),
        *("--pubkey", str(spec.pubkey), "--profile", str(spec.profile)),
        env=spec.env,
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr
