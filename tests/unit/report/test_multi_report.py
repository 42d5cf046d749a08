"""The multi-candidate report: build, sign, verify, tamper, views, exit codes."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers.multi_synthetic import FAILING, build_multi, sign_multi, subjects
from helpers.report_synthetic import FAKES

from qgate.attest.keys import LoadedSigner
from qgate.attest.statement import sign_statement
from qgate.errors import ExitCode, VerificationFailed
from qgate.report.multi_model import MultiReport
from qgate.report.render.multi import render_multi_html, render_multi_junit, render_multi_md
from qgate.report.signing import build_statement as multi_statement
from qgate.report.signing import with_signer as with_multi_signer
from qgate.report.verify.multi import is_multi_payload, verify_multi_bytes
from qgate.run.report import exit_code_of


def _verify(data: bytes, signer: LoadedSigner) -> MultiReport:
    return verify_multi_bytes(data, signer.public_pem, recompute=FAKES).report


def _resign(data: bytes, signer: LoadedSigner, edit: Callable[[dict[str, Any]], None]) -> bytes:
    """The report with `edit` applied to its predicate, signed again with the same key."""
    envelope = json.loads(data)
    statement = json.loads(base64.b64decode(envelope["payload"]))
    edit(statement["predicate"])
    report = MultiReport.model_validate(statement["predicate"])
    return sign_statement(multi_statement(report, subjects(report)), signer)


def test_round_trip_and_table(ecdsa_signer: LoadedSigner) -> None:
    report = build_multi()
    data = sign_multi(report, ecdsa_signer)
    assert is_multi_payload(base64.b64decode(json.loads(data)["payload"]))
    result = verify_multi_bytes(data, ecdsa_signer.public_pem, recompute=FAKES)
    got = result.report
    assert got.verdict == "PASS"
    assert [r.candidate for r in got.table] == ["fp8kv", "policy"]
    assert got.table[0].accuracy_deltas == {"math.short": pytest.approx(0.0)}
    assert got.table[0].speed[0].ratios["output_throughput"].ratio is not None
    assert any(line.startswith("fp8kv: ") for line in result.checked)
    assert any(line.startswith("policy: ") for line in result.checked)


def test_required_failure_fails_optional_does_not() -> None:
    optional_fails = build_multi(policy_wrong=FAILING)
    assert optional_fails.verdict == "PASS"
    assert optional_fails.optional_failures == ["policy: FAIL"]
    assert exit_code_of(optional_fails.verdict) == ExitCode.PASS
    required_fails = build_multi(fp8_wrong=FAILING)
    assert required_fails.verdict == "FAIL"
    assert exit_code_of(required_fails.verdict) == ExitCode.GATE_FAILED
    assert (required_fails.table[0].lost, required_fails.table[0].gained) == (6, 1)


def test_errored_candidate(ecdsa_signer: LoadedSigner) -> None:
    report = build_multi(policy_error="candidate runtime: exited with status 1 (CUDA OOM)")
    assert report.verdict == "PASS" and report.optional_failures == ["policy: ERROR"]
    got = _verify(sign_multi(report, ecdsa_signer), ecdsa_signer)
    assert got.candidates[1].report is None
    assert "CUDA OOM" in render_multi_md(got)
    assert exit_code_of("ERROR") == ExitCode.INFRASTRUCTURE


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda p: p.update(verdict="FAIL"), "overall verdict"),
        (lambda p: p["candidates"][0]["report"].update(verdict="FAIL"), "overall verdict FAIL"),
        (lambda p: p["candidates"][1].update(required=True), "required"),
        (lambda p: p["table"][0].update(lost=3), "table row fp8kv"),
        (lambda p: p["candidates"].reverse(), "candidates"),
        (
            lambda p: p["candidates"][0]["report"]["profile"]["quality"]["math"].update(
                max_drop=0.9
            ),
            "profile differs",
        ),
        (
            lambda p: p["candidates"][0]["report"]["quality"]["runs"][1]["items"][1].update(
                correct=True
            ),
            "item",
        ),
        (lambda p: p.update(optional_failures=[]), "optional"),
        # a candidate's own speed gate added to the multi profile after the run
        (
            lambda p: p["profile"]["candidates"]["policy"].update(
                perf_gates=[{"metric": "output_throughput", "min_ratio": 2.0}]
            ),
            "policy: its report's profile differs from the multi profile at perf.gates",
        ),
    ],
)
def test_tampered_and_resigned_is_rejected(
    ecdsa_signer: LoadedSigner, edit: Callable[[dict[str, Any]], None], message: str
) -> None:
    data = sign_multi(build_multi(policy_wrong=FAILING), ecdsa_signer)
    _verify(data, ecdsa_signer)
    with pytest.raises(VerificationFailed, match=message):
        _verify(_resign(data, ecdsa_signer, edit), ecdsa_signer)


def test_byte_flip_rejected(ecdsa_signer: LoadedSigner) -> None:
    data = bytearray(sign_multi(build_multi(), ecdsa_signer))
    envelope = json.loads(bytes(data))
    payload = bytearray(base64.b64decode(envelope["payload"]))
    payload[-20] ^= 1
    envelope["payload"] = base64.b64encode(bytes(payload)).decode()
    with pytest.raises(VerificationFailed):
        _verify(json.dumps(envelope).encode(), ecdsa_signer)


def test_views(ecdsa_signer: LoadedSigner) -> None:
    report = with_multi_signer(build_multi(policy_wrong=FAILING), ecdsa_signer)
    md = render_multi_md(report)
    assert md.index("Candidates side by side") < md.index("Candidate fp8kv (required)")
    for column in (
        "Out tok/s ratio [95% CI]",
        "Req out tok/s ratio",
        "Decode tok/s ratio",
        "TTFT p90 ratio",
        "Lost / gained",
        "Mean KL",
        "Top-1",
    ):
        assert column in md
    assert "| policy | no | FAIL |" in md
    assert "Optional candidate did not pass" in md
    junit = render_multi_junit(report)
    assert junit.count("<testsuite ") == 2 and 'name="required" value="false"' in junit
    html = render_multi_html(report)
    assert html.count("<h2>Candidate ") == 2 and "frontier" in html


def test_show_and_compare_pick_a_candidate(
    ecdsa_signer: LoadedSigner, write_file: Callable[[str, bytes], Path]
) -> None:
    from click.testing import CliRunner

    from qgate.cli.main import main

    path = write_file("multi.intoto.jsonl", sign_multi(build_multi(), ecdsa_signer))
    runner = CliRunner()
    shown = runner.invoke(main, ["show", str(path)])
    assert shown.exit_code == 0 and "Candidates side by side" in shown.output
    cmp = runner.invoke(main, ["compare", f"{path}#fp8kv", f"{path}#policy"])
    assert cmp.exit_code == 0, cmp.output
    assert "fp8kv" in cmp.output and "policy" in cmp.output
    bare = runner.invoke(main, ["compare", str(path)])
    assert bare.exit_code == 2 and "#CANDIDATE" in bare.output


def test_frontier_keeps_the_undominated() -> None:
    from qgate.report.render.multi_plot import frontier

    # (speed ratio, worst accuracy delta): b dominates a; c is faster but worse than b
    assert frontier([(1.0, -0.1), (1.2, 0.0), (2.0, -0.2)]) == [1, 2]
    assert frontier([(1.0, 0.0)]) == [0]


def test_verify_against_the_profile_file(ecdsa_signer: LoadedSigner, tmp_path: Path) -> None:
    import yaml
    from helpers.multi_synthetic import MULTI_PROFILE

    from qgate.attest.statement import Subject
    from qgate.core.files import sha256_file

    path = tmp_path / "multi.yaml"
    path.write_text(yaml.safe_dump(MULTI_PROFILE, sort_keys=False))
    report = build_multi()
    digest = sha256_file(path)
    report.profile_sha256 = digest
    for entry in report.candidates:
        assert entry.report is not None
        entry.report.profile_sha256 = digest
    signed = with_multi_signer(report, ecdsa_signer)
    subject = [Subject(name="profile/multi.yaml", sha256=digest)]
    data = sign_statement(multi_statement(signed, subject), ecdsa_signer)
    result = verify_multi_bytes(data, ecdsa_signer.public_pem, profile=path, recompute=FAKES)
    assert "embedded profile equals multi.yaml; gates use its limits" in result.checked
    edited = {**MULTI_PROFILE, "quality": {**MULTI_PROFILE["quality"], "math": {"max_drop": 0.9}}}
    path.write_text(yaml.safe_dump(edited, sort_keys=False))
    with pytest.raises(VerificationFailed, match="differs from"):
        verify_multi_bytes(data, ecdsa_signer.public_pem, profile=path, recompute=FAKES)
