"""Speculative candidates on real vLLM (CPU, SmolLM2): acceptance shown, gated and verified.

One run: the reference is the session's `reference_server` seen as an endpoint (no reference
life of its own), the candidates start in sequence with its arguments and a speculative method
(`--speculative-config`):

- `ngram` (3 tokens a draft, looked up from 2-3 token matches) drafts on the recall haystack and
  the long math preamble; its acceptance length clears the floor: PASS, its quality gated
  against the reference as usual;
- `random-draft` drafts with a draft model that was never trained (SmolLM2's vocabulary on one
  layer of seeded random weights): the target rejects nearly every draft, its answers stay the
  target's own and pass every quality gate, and the acceptance gate alone FAILs it, its
  measured length in the report and on the console.

The report holds each side's counter snapshots, so verify re-derives the gate (a forged PASS
re-signed with the run's key is refused); the same records also show the rule for a reference
that speculates (95% of its length) and NOT EXERCISED for fewer drafts than asked (zero
drafts: tests/unit/gates/test_speculative.py).

A further speculative candidate joins `candidates:` below (one life more, the same reference).
"""

from __future__ import annotations

import base64
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from qgate.attest.keys import load_signer
from qgate.attest.statement import sign_statement
from qgate.gates.speculative import acceptance, evaluate_speculative
from qgate.profile import Profile
from qgate.profile.load_multi import load_multi_file
from qgate.quality.spec_counters import SpecSnapshot
from qgate.runtime.vllm_server import VllmServer

pytestmark = pytest.mark.integration

QGATE = [sys.executable, "-m", "qgate.cli"]
NGRAM = '{"method":"ngram","num_speculative_tokens":3,"prompt_lookup_max":3,"prompt_lookup_min":2}'
# A draft model that was never trained: SmolLM2's tokenizer and vocabulary on one small layer of
# seeded random weights (`random_draft`). vLLM drafts 3 tokens a step with it and the target
# rejects nearly every one: speculation that runs, is counted, and gains nothing. (vLLM's
# `draft_load_config: {load_format: dummy}` would say the same in one line, but the
# draft_model method ignores it: measured, the draft loaded the real weights, length 3.93.)
RANDOM_DRAFT = '{{"method":"draft_model","model":"{model}","num_speculative_tokens":3}}'
FLOOR = 1.5

# The reference is the session's `reference_server` (tests/integration/conftest.py: SmolLM2 in
# the serving dtype, eager, max_model_len 4096, the tool-call chat template), seen as an
# endpoint: no reference life of this module's own. The candidates start with its arguments.
PROFILE = """
name: it-spec
model: {{embedded: smollm2}}
target: {{accelerator: cpu}}
engine:
  args:
    dtype: {dtype}
    max_model_len: 4096
    enforce_eager: true
    kv_cache_dtype: auto
    chat_template: 'qgate:chatml-tools'
    tool_call_parser: hermes
    enable_auto_tool_choice: true
  startup_timeout_s: 600
  preflight: never
reference:
  engine: {{kind: endpoint}}
  endpoint: {{base_url: '{reference}'}}
candidates:
  ngram:
    args: {{speculative_config: '{ngram}'}}
  random-draft:
    args: {{speculative_config: '{random_draft}'}}
quality:
  concurrency: 4
  math: {{prompts: [long], limit: 4, long_tokens: 256, max_drop: 0.5, rule: point}}
  recall: {{context_tokens: [256], haystacks: 1, depths: [0.3, 0.7], max_drop: 0.5, rule: point}}
  speculative: {{min_acceptance_length: {floor}}}
lives: {{probes: 0}}  # graded in test_perf_probes_fault.py (CI time)
"""


def _draft_maker() -> Callable[[Path, Path], Path]:
    """`random_draft` of perf/gpu/make_random_draft.py: the H200 run builds the same draft."""
    path = Path(__file__).parents[2] / "perf" / "gpu" / "make_random_draft.py"
    spec = importlib.util.spec_from_file_location("make_random_draft", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.random_draft  # type: ignore[no-any-return]


random_draft = _draft_maker()


def qgate(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*QGATE, *args], capture_output=True, text=True, env=env, timeout=900, check=False
    )


class SpecRun:
    """The one run of this module, and what its tests read from it."""

    def __init__(self, folder: Path, reference: str, dtype: str, model: Path) -> None:
        self.env = dict(os.environ, XDG_CONFIG_HOME=str(folder / "config"))
        self.env.pop("GITHUB_STEP_SUMMARY", None)
        assert qgate("keygen", "--out", str(folder / "k"), env=self.env).returncode == 0
        self.pubkey, self.key = folder / "k.pub.pem", folder / "k.pem"
        self.profile = folder / "spec.yaml"
        self.profile.write_text(
            PROFILE.format(
                dtype=dtype,
                reference=reference,
                ngram=NGRAM,
                random_draft=RANDOM_DRAFT.format(model=random_draft(folder / "draft", model)),
                floor=FLOOR,
            )
        )
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

    def gate(self, name: str, gate: str) -> dict[str, Any]:
        verdicts = self.reports[name]["quality"]["verdicts"]
        return next(v for v in verdicts if v["gate"] == gate)

    def candidate(self, name: str) -> Profile:
        loaded = load_multi_file(self.profile)
        return next(c.profile for c in loaded.multi.candidates if c.name == name).model_copy(
            deep=True
        )

    def snapshots(self, name: str) -> list[SpecSnapshot]:
        raw = self.reports[name]["quality"]["speculative"]
        return [SpecSnapshot.model_validate(s) for s in raw]


@pytest.fixture(scope="module")
def spec(
    tmp_path_factory: pytest.TempPathFactory,
    reference_server: VllmServer,
    serving_dtype: str,
    smollm2_checkpoint: Path,
) -> SpecRun:
    folder = tmp_path_factory.mktemp("spec")
    return SpecRun(folder, reference_server.base_url, serving_dtype, smollm2_checkpoint)


def test_ngram_acceptance_is_shown_and_gated(spec: SpecRun) -> None:
    out = spec.done.stdout
    assert spec.done.returncode == 1, out + spec.done.stderr  # `random-draft` fails the run
    assert "candidate ngram (required): PASS" in out, out
    length = spec.gate("ngram", "speculative.acceptance_length")
    assert length["passed"] is True and length["exercised"] is True, length
    assert isinstance(length["observed"], float) and length["observed"] >= FLOOR, length
    assert spec.gate("ngram", "speculative.counters")["passed"] is True
    configs = spec.reports["ngram"]["effective_configs"]
    cand = next(c for c in configs if c["role"] == "candidate")
    ref = next(c for c in configs if c["role"] == "reference")
    assert "method='ngram'" in (cand["speculative_config"] or ""), cand["speculative_config"]
    assert ref["kind"] == "endpoint" and ref["speculative_config"] is None, ref
    # the change is confirmed by the server's own log: no warning names it
    assert not any("speculative_config" in w for w in spec.reports["ngram"]["warnings"])
    snaps = spec.snapshots("ngram")
    got = acceptance(snaps, "candidate")
    assert got is not None and got.drafts > 0 and got.accepted <= got.draft_tokens
    _show("ngram", spec)


def test_an_untrained_draft_model_fails_its_acceptance_gate(spec: SpecRun) -> None:
    """`random-draft` drafts 3 tokens a step from random weights and the target rejects
    nearly all of them: the acceptance gate FAILs it with the length it measured, while its
    answers (the target model's own tokens) pass every quality gate: the acceptance gate alone
    catches speculation that gains nothing."""
    out = spec.done.stdout
    assert "candidate random-draft (required): FAIL" in out, out
    length = spec.gate("random-draft", "speculative.acceptance_length")
    assert length["passed"] is False and length["exercised"] is True, length
    assert length["observed"] < FLOOR and length["limit"] == FLOOR, length
    got = acceptance(spec.snapshots("random-draft"), "candidate")
    assert got is not None and got.drafts > 0 and got.length == length["observed"], got
    shown = f"acceptance length {got.length:.3f} ({got.accepted:g} accepted of "
    assert length["reason"].startswith(shown) and "< 1.500 (floor 1.5)" in length["reason"]
    assert shown in out, out  # on the console too, with the failed gate
    verdicts = spec.reports["random-draft"]["quality"]["verdicts"]
    failed = {v["gate"] for v in verdicts if not v["passed"]}
    assert failed == {"speculative.acceptance_length"}, failed
    configs = spec.reports["random-draft"]["effective_configs"]
    cand = next(c for c in configs if c["role"] == "candidate")
    assert "method='draft_model'" in (cand["speculative_config"] or ""), cand
    _show("random-draft", spec)


def _show(name: str, spec: SpecRun) -> None:
    snaps = spec.snapshots(name)
    got = acceptance(snaps, "candidate")
    assert got is not None and got.length is not None and got.rate is not None
    cost = {s.role: max(x.seconds for x in snaps if x.role == s.role) for s in snaps}
    print(
        f"{name}: acceptance length {got.length:.3f}, rate {got.rate:.1%} "
        f"({got.accepted:g} of {got.draft_tokens:g} draft tokens in {got.drafts:g} drafts; "
        f"by position {got.per_position}); quality stage seconds {cost}"
    )


def test_against_a_speculating_reference_the_share_rule_holds(spec: SpecRun) -> None:
    """The rule for a reference that speculates too (TensorRT-LLM's: at least 95% of its
    acceptance length), on the run's real counters: `ngram`'s snapshots as the reference's,
    without a floor. `ngram` against itself passes (share 1.0); `random-draft` fails."""
    reference = [
        s.model_copy(update={"role": "reference"})
        for s in spec.snapshots("ngram")
        if s.role == "candidate"
    ]
    ref = acceptance(reference, "reference")
    assert ref is not None and ref.length is not None
    for name, passed in (("ngram", True), ("random-draft", False)):
        profile = spec.candidate(name)
        assert profile.quality.speculative is not None
        profile.quality.speculative.min_acceptance_length = None
        own = [s for s in spec.snapshots(name) if s.role == "candidate"]
        verdict = {v.gate: v for v in evaluate_speculative(profile, reference + own)}[
            "speculative.acceptance_length"
        ]
        assert verdict.passed is passed and verdict.exercised is True, verdict
        assert verdict.limit == pytest.approx(0.95 * ref.length), verdict
        assert f"0.95 x reference {ref.length:.3f}" in verdict.reason, verdict


def test_fewer_drafts_than_asked_is_not_exercised(spec: SpecRun) -> None:
    """The same records against a `min_drafts` above what `ngram` drafted: NOT EXERCISED (not
    a FAIL on the length), never a PASS, whatever the length reached."""
    profile = spec.candidate("ngram")
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


def test_the_report_verifies_with_the_gate_re_derived(spec: SpecRun, tmp_path: Path) -> None:
    verified = qgate(
        "verify",
        str(spec.envelope),
        *("--pubkey", str(spec.pubkey), "--profile", str(spec.profile)),
        env=spec.env,
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "quality.speculative: the speculative-decoding counters" in verified.stdout
    # the FAIL is re-derived from the counters, not read: `random-draft`'s gate claimed passed,
    # signed again with the run's own key, is refused naming the gate
    line = spec.envelope.read_text().splitlines()[0]
    statement = json.loads(base64.b64decode(json.loads(line)["payload"]))
    entry = next(c for c in statement["predicate"]["candidates"] if c["name"] == "random-draft")
    gate = next(
        v
        for v in entry["report"]["quality"]["verdicts"]
        if v["gate"] == "speculative.acceptance_length"
    )
    gate["passed"] = True
    folder = shutil.copytree(spec.envelope.parent, tmp_path / "forged")
    forged = folder / spec.envelope.name
    forged.write_bytes(sign_statement(statement, load_signer(spec.key)))
    refused = qgate(
        "verify",
        str(forged),
        *("--pubkey", str(spec.pubkey), "--profile", str(spec.profile)),
        env=spec.env,
    )
    assert refused.returncode != 0, refused.stdout
    assert "speculative.acceptance_length" in refused.stdout + refused.stderr, refused.stderr
