"""`--format json` of run, verify, validate and compare against `qgate schema NAME`, and
`verify --require-pass` (qgate/cli/outputs.py, qgate/cli/report.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner
from helpers.report_synthetic import build_report

from qgate.attest.keys import load_signer
from qgate.attest.statement import Subject
from qgate.cli.main import main
from qgate.report.model import Report
from qgate.report.verify.single import default_recompute
from qgate.report.writer import ENVELOPE_NAME, write_report

SHIPPED = Path(__file__).parents[3] / "precision_profiles"


def _schema(name: str) -> dict[str, Any]:
    res = CliRunner().invoke(main, ["schema", name])
    assert res.exit_code == 0, res.output
    schema: dict[str, Any] = json.loads(res.stdout)
    return schema


def _valid(name: str, stdout: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(stdout)
    jsonschema.validate(data, _schema(name))
    assert data["format"] == f"qgate.{name}/1"
    return data


def _signed(tmp_path: Path, name: str, report: Report) -> Path:
    out = tmp_path / name
    out.mkdir()
    write_report(
        out,
        report,
        [Subject(name="profile/p.yaml", sha256=report.profile_sha256)],
        load_signer(key_path=tmp_path / "k.pem"),
        html=False,
    )
    return out / ENVELOPE_NAME


@pytest.fixture
def reports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, Path]:
    """(a PASS envelope, a FAIL envelope, the public key)."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    assert CliRunner().invoke(main, ["keygen", "--out", str(tmp_path / "k")]).exit_code == 0
    fns = default_recompute()
    passing = build_report(items=10, requests=4, fns=fns)
    failing = build_report(
        items=10,
        requests=4,
        fns=fns,
        cand_wrong=frozenset(range(1, 9)),
        perf_status="skipped: gates failed",
    )
    assert (passing.verdict, failing.verdict) == ("PASS", "FAIL")
    return (
        _signed(tmp_path, "pass", passing),
        _signed(tmp_path, "fail", failing),
        tmp_path / "k.pub.pem",
    )


def test_require_pass_exits_1_on_a_verified_fail_and_0_on_a_pass(
    reports: tuple[Path, Path, Path],
) -> None:
    passing, failing, pub = reports
    run = CliRunner().invoke
    assert run(main, ["verify", str(failing), "--pubkey", str(pub)]).exit_code == 0  # as before
    fail = run(main, ["verify", str(failing), "--pubkey", str(pub), "--require-pass"])
    assert fail.exit_code == 1
    assert "VERIFIED" in fail.stdout
    assert "NOT PASS" in fail.stderr and "verdict is FAIL" in fail.stderr
    ok = run(main, ["verify", str(passing), "--pubkey", str(pub), "--require-pass"])
    assert ok.exit_code == 0 and "NOT PASS" not in ok.output


def test_verify_json_tells_a_verified_fail_from_a_report_that_does_not_verify(
    reports: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    passing, failing, pub = reports
    run = CliRunner().invoke
    res = run(
        main, ["verify", str(failing), "--pubkey", str(pub), "--require-pass", "--format", "json"]
    )
    fail = _valid("verify", res.stdout)
    assert res.exit_code == 1 == fail["exit_code"]
    assert fail["verified"] and fail["verdict"] == "FAIL" and not fail["passed"]
    assert fail["kind"] == "single" and fail["error"] is None and fail["checked"]
    res = run(main, ["verify", str(passing), "--pubkey", str(pub), "--format", "json"])
    ok = _valid("verify", res.stdout)
    assert res.exit_code == 0 and ok["passed"] and ok["verdict"] == "PASS"
    other = tmp_path / "other"
    assert run(main, ["keygen", "--type", "ed25519", "--out", str(other)]).exit_code == 0
    res = run(main, ["verify", str(passing), "--pubkey", f"{other}.pub.pem", "--format", "json"])
    bad = _valid("verify", res.stdout)
    assert res.exit_code == bad["exit_code"] != 0
    assert not bad["verified"] and bad["verdict"] is None and "signature" in bad["error"]


def test_validate_json_lists_every_file_with_its_reason(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: x\nmodel: {embedded: smollm2}\nquality: {math: {limit: -1}}\n")
    good = SHIPPED / "smollm2-cpu-int8.yaml"
    res = CliRunner().invoke(
        main, ["validate", "--skip-files", "--format", "json", str(good), str(broken)]
    )
    data = _valid("validate", res.stdout)
    assert res.exit_code == 2 == data["exit_code"]
    oks = [(f["path"], f["ok"]) for f in data["files"]]
    assert oks == [(str(good), True), (str(broken), False)]
    assert data["files"][1]["error"] and data["files"][0]["error"] is None


def test_compare_json_names_its_aggregate_and_gives_an_interval(
    reports: tuple[Path, Path, Path],
) -> None:
    passing, failing, pub = reports
    res = CliRunner().invoke(
        main, ["compare", f"{passing}", f"{failing}", "--pubkey", str(pub), "--format", "json"]
    )
    assert res.exit_code == 0, res.output
    data = _valid("compare", res.stdout)
    assert "geometric mean" in data["aggregate"] and data["verified"]
    ran, skipped = data["rows"]
    assert ran["scenarios"] >= 1
    assert ran["ratio_ci_low"] <= ran["output_tokens_per_s_ratio"] <= ran["ratio_ci_high"]
    assert skipped["output_tokens_per_s_ratio"] is None and skipped["verdict"] == "FAIL"
    assert skipped["accuracy_delta"]["math.short"] < 0  # candidate − reference
    text = CliRunner().invoke(main, ["compare", f"{passing}", f"{failing}"])
    assert "geometric mean" in text.stdout and "[" in text.stdout.split("| PASS |")[1]


def test_run_json_summary_matches_its_schema(tmp_path: Path) -> None:
    from qgate.cli.run import json_summary
    from qgate.core.verdict import Verdict
    from qgate.errors import ExitCode
    from qgate.run.options import RunOutcome

    outcome = RunOutcome(
        run_dir=tmp_path,
        envelope=tmp_path / ENVELOPE_NAME,
        verdict="FAIL",
        exit_code=ExitCode.GATE_FAILED,
        perf_status="skipped: gates failed",
        verdicts=[
            Verdict(
                gate="math.long.max_drop",
                suite="math.long",
                observed=0.23,
                limit=0.15,
                passed=False,
                reason="drop 23 pts > 15 allowed",
            ),
            Verdict(
                gate="recall.1024.max_drop",
                suite="recall.1024",
                observed=0.0,
                limit=0.2,
                passed=True,
                underpowered=True,
                reason="ok",
            ),
        ],
    )
    data = _valid("run", json_summary(outcome).model_dump_json())
    assert (data["gates_passed"], data["gates_total"], data["exit_code"]) == (1, 2, 1)
    assert data["failed"] == [
        {
            "gate": "math.long.max_drop",
            "reason": "drop 23 pts > 15 allowed",
            "settled": True,
            "inconclusive": False,
            "exercised": None,
        }
    ]
    assert data["underpowered"] == ["recall.1024.max_drop"]
