"""Graded sessions from the wire to the auditor, with the mock server on both sides (its
`--recall N` answers them from the last N user messages): the same server on both sides
PASSes, one that loses the earlier turns FAILs on its graded turns with its ratios withheld;
each report is written signed, verified by `qgate verify`, and shows accuracy by turn."""

from __future__ import annotations

import asyncio
import importlib.util
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers.report_synthetic import PROFILE, build_report, make_signer

from qgate.attest.statement import profile_subject
from qgate.cli.main import main
from qgate.gates.judge import perf_results
from qgate.gates.speed import report_gates
from qgate.perf.runner import run_scenarios
from qgate.perf.salts import salt_scope
from qgate.profile import Profile
from qgate.report.verdict import overall
from qgate.report.verify.single import default_recompute
from qgate.report.writer import write_report

MOCK = Path(__file__).resolve().parents[2] / "mockserver" / "mock_openai.py"
AGENT = {
    "name": "agent",
    "kind": "multi_turn",
    "conversations": 2,
    "turns": 2,
    "shared_prefix_tokens": 32,
    "turn_input_tokens": 8,
    "output_tokens": 4,
    "warmup": 0,
    "requests": 4,
    "graded": {"sessions": 4, "turns": 8},
}


def _written(tmp_path: Path, candidate_recall: int) -> tuple[int, str, str]:
    spec = importlib.util.spec_from_file_location("mock_openai", MOCK)
    assert spec is not None and spec.loader is not None
    mock = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mock)
    profile_json = json.loads(json.dumps(PROFILE))
    profile_json["perf"] = {
        "scenarios": [AGENT],
        "probe_share": 0.0,
        "bootstrap": 200,
        "gates": [{"metric": "output_throughput", "min_ratio": 0.01}],
    }
    perf = Profile.model_validate(profile_json).perf
    assert perf is not None
    runs = []
    for role, recall in (("reference", 0), ("candidate", candidate_recall)):
        with mock.running(ttft_ms=5.0, itl_ms=1.0, recall=recall) as url:
            runs += asyncio.run(run_scenarios(url, "mock", perf, role, salt=salt_scope(role, 0, 0)))  # type: ignore[arg-type]
    report = build_report(fns=default_recompute(), profile_json=profile_json)
    report.perf.runs = runs
    report.perf.results = perf_results(perf, runs, resamples=200, seed=0)
    report.perf.gates = report_gates(perf, report.perf.status, report.perf.results)
    report.verdict = overall(report.all_verdicts(), report.perf.status)
    profile = tmp_path / "profile.yaml"
    profile.write_text(json.dumps(profile_json))
    report.profile_sha256 = profile_subject(profile).sha256
    signer = make_signer("ecdsa")
    pubkey = tmp_path / "key.pub.pem"
    pubkey.write_text(signer.public_pem)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    written = write_report(
        run_dir, report, [profile_subject(profile)], signer, html=False, step_summary=False
    )
    args = ["verify", str(written.envelope), "--pubkey", str(pubkey), "--profile", str(profile)]
    res = CliRunner().invoke(main, args)
    return res.exit_code, res.output, written.markdown.read_text()


def test_the_same_server_on_both_sides_passes_verified(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    code, out, md = _written(tmp_path, candidate_recall=0)
    assert code == 0 and "VERIFIED" in out and "verdict PASS" in out, out
    assert "and 64 graded session turns as the profile asks" in out  # 4 x 8 a side
    assert "| agent | 6 (code two turns back) | 4/4 | 4/4 |" in md


def test_a_server_that_loses_earlier_turns_fails_verified(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    code, out, md = _written(tmp_path, candidate_recall=2)  # sees the last 2 user messages
    assert code == 0 and "VERIFIED" in out and "verdict FAIL" in out, out
    assert "| agent | 2 (code two turns back) | 4/4 | 0/4 |" in md
    assert "GRADED TURNS FAILED in agent: its ratios are withheld" in md
    assert "ratio withheld, the scenario's graded turns failed" in md
