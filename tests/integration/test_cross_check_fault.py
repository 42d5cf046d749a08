"""The divergence cross-check on real vLLM (issue 55 item 4): scores bent as speculation bent
them fail every divergence gate as NOT TRUSTED; scores that agree with the server's own
generation pass.

No server of its own: the reference is the session's `reference_server`, the candidates are
the same server seen directly (`clean`) and through the fault proxy (`bent`, `scores:4`: at
every 4th prompt position of a scoring answer the two likeliest tokens' logprobs are
swapped, the text untouched: wrong prompt logprobs on some requests while the answers stay
right, vLLM #53488). An endpoint's engine is not known, so the profile asks the check of
every candidate (`cross_check: always`); a candidate that sets speculative_config gets it
unasked. The divergence limits are loose (a 135M model's greedy continuations on the CPU),
so the bent scores' own figures stay within them: only the second path shows they are not
the server's.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers.resign import rederived, resigned_verify

from qgate.errors import VerificationFailed
from qgate.gates.judge import quality_verdicts
from qgate.gates.judgement import Derivation
from qgate.profile import Profile
from qgate.report.model import Report
from qgate.report.verify.recompute import evidence_of
from qgate.runtime.vllm_server import VllmServer

pytestmark = pytest.mark.integration

BODY = """
quality:
  concurrency: 4
  divergence: {sequences: 4, tokens: 16, max_mean_kld: 5.0, min_top1_agreement: 0.5,
               cross_check: always}
"""


@pytest.fixture(scope="module")
def runs(
    reference_server: VllmServer,
    fault_proxy: Callable[[str], Any],
    endpoint_run: Callable[..., Any],
) -> dict[str, Any]:
    proxy = fault_proxy("scores:4")
    return {
        "clean": endpoint_run("cross-clean", reference_server.base_url, BODY),
        "bent": endpoint_run("cross-bent", proxy.url, BODY),
        "log": proxy.log,
    }


def _gates(run: Any) -> dict[str, dict[str, Any]]:
    return {v["gate"]: v for v in run.predicate["quality"]["verdicts"]}


def test_scores_that_agree_with_the_servers_own_generation_pass(runs: dict[str, Any]) -> None:
    clean = runs["clean"]
    assert clean.done.returncode == 0, clean.done.stdout + clean.done.stderr
    gates = _gates(clean)
    check = gates["divergence.cross_check"]
    assert check["passed"] and check["n"] > 0, check["reason"]
    assert check["observed"] <= 0.05, check  # decode and prefill of one server, measured
    cross = clean.predicate["quality"]["divergence"]["cross_check"]
    assert len(cross) == 4 and all(len(c["token_ids"]) == 16 for c in cross)
    assert "divergence cross-check (cross_check: always)" in clean.done.stdout + clean.done.stderr
    print(check["reason"])


def test_bent_scores_fail_every_divergence_gate_as_not_trusted(runs: dict[str, Any]) -> None:
    bent = runs["bent"]
    assert bent.done.returncode == 1, bent.done.stdout + bent.done.stderr
    gates = _gates(bent)
    check = gates["divergence.cross_check"]
    assert not check["passed"] and check["reason"].startswith("NOT TRUSTED: "), check
    for name in ("divergence.max_mean_kld", "divergence.min_top1_agreement"):
        v = gates[name]
        assert not v["passed"] and v["reason"].startswith("NOT TRUSTED ("), v
    # the bent scores' own figure is within its loose limit: only the second path sees them
    kld = gates["divergence.max_mean_kld"]
    assert kld["observed"] <= kld["limit"], kld
    lines = [json.loads(x) for x in Path(runs["log"]).read_text().splitlines()]
    assert any("prompt positions bent" in (x.get("corrupted") or "") for x in lines)
    print(check["reason"], "|", kld["reason"])


def test_a_passed_cross_check_written_over_the_records_is_refused(runs: dict[str, Any]) -> None:
    """An insider who marks the bent run's divergence gates passed and re-signs: verify
    re-derives the cross-check from the stored generations and refuses."""
    bent = runs["bent"]

    def forge(report: Report) -> None:
        for v in report.quality.verdicts:
            if v.suite == "divergence":
                v.passed = True

    profile = next(bent.report.parent.parent.parent.glob("*.yaml"))
    with pytest.raises(VerificationFailed, match="divergence"):
        resigned_verify(bent.report.parent, forge, profile)


def test_a_generation_taken_out_is_refused_even_with_every_verdict_derived_again(
    runs: dict[str, Any],
) -> None:
    """An insider takes one generation out of the clean run and derives every verdict again
    with qgate's own judge (the cross-check then says NOT TRUSTED, consistently): verify holds
    the records to the plan, which asks one generation a scored sequence."""
    clean = runs["clean"]

    def take_one_out(report: Report) -> None:
        div = report.quality.divergence
        assert div is not None and div.cross_check
        div.cross_check = div.cross_check[1:]
        derivation = Derivation(quality=report.quality.derivation, perf=report.perf.derivation)
        profile = Profile.model_validate(report.profile)
        report.quality.verdicts = quality_verdicts(profile, evidence_of(report), derivation)
        rederived(report)

    profile = next(clean.report.parent.parent.parent.glob("*.yaml"))
    with pytest.raises(VerificationFailed, match="1 of 4 have no generation"):
        resigned_verify(clean.report.parent, take_one_out, profile)
