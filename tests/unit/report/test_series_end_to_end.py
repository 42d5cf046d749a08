"""A duration-bound agent scenario measured against the mock server on both sides, written
as a signed report with its views, verified by `qgate verify`, and rejected once a bucket
is edited: the time series from the wire to the auditor."""

from __future__ import annotations

import asyncio
import base64
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
from qgate.report.model import Report
from qgate.report.signing import sign_report
from qgate.report.verdict import overall
from qgate.report.verify.single import default_recompute
from qgate.report.writer import write_report

MOCK = Path(__file__).resolve().parents[2] / "mockserver" / "mock_openai.py"
AGENT = {
    "name": "agent",
    "kind": "multi_turn",
    "conversations": 2,
    "turns": 2,
    "shared_prefix_tokens": 64,
    "turn_input_tokens": 8,
    "output_tokens": 4,
    "warmup": 1,
    "duration_s": 1.2,
    "series_bucket_s": 1,
}


def _measured_report() -> tuple[Report, dict[str, object]]:
    spec = importlib.util.spec_from_file_location("mock_openai", MOCK)
    assert spec is not None and spec.loader is not None
    mock = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mock)
    profile_json = json.loads(json.dumps(PROFILE))
    profile_json["perf"] = {"scenarios": [AGENT], "probe_share": 0.0, "bootstrap": 200}
    perf = Profile.model_validate(profile_json).perf
    assert perf is not None
    with mock.running(ttft_ms=30.0, itl_ms=5.0) as url:
        runs = [
            run
            for role in ("reference", "candidate")
            for run in asyncio.run(
                run_scenarios(url, "mock", perf, role, salt=salt_scope(role, 0, 0))
            )  # type: ignore[arg-type]
        ]
    report = build_report(fns=default_recompute())
    report.profile = Profile.model_validate(profile_json).model_dump(mode="json")
    report.perf.runs = runs
    report.perf.results = perf_results(perf, runs, resamples=200, seed=0)
    report.perf.gates = report_gates(perf, report.perf.status, report.perf.results)
    report.verdict = overall(report.all_verdicts(), report.perf.status)
    return report, profile_json


def test_a_measured_series_is_signed_shown_verified_and_guarded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    report, profile_json = _measured_report()
    profile = tmp_path / "profile.yaml"
    profile.write_text(json.dumps(profile_json))
    report.profile_sha256 = profile_subject(profile).sha256
    signer = make_signer("ecdsa")
    pubkey = tmp_path / "key.pub.pem"
    pubkey.write_text(signer.public_pem)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    subjects = [profile_subject(profile)]
    written = write_report(run_dir, report, subjects, signer, html=True, step_summary=False)
    md = written.markdown.read_text()
    assert "## Time series" in md and "**Scenario agent, 1 s buckets**" in md
    assert written.html is not None
    assert "<figcaption>Time series: agent</figcaption>" in written.html.read_text()

    def verify(envelope: Path) -> tuple[int, str]:
        res = CliRunner().invoke(
            main, ["verify", str(envelope), "--pubkey", str(pubkey), "--profile", str(profile)]
        )
        return res.exit_code, res.output

    code, out = verify(written.envelope)
    assert code == 0 and "VERIFIED" in out, out
    payload = base64.b64decode(json.loads(written.envelope.read_bytes())["payload"])
    forged = Report.model_validate(json.loads(payload)["predicate"])
    ref = forged.perf.results[0].reference
    assert ref is not None
    ref["time_series"]["buckets"][0]["output_throughput"] *= 1.5  # a faster first minute
    path = tmp_path / "forged.intoto.jsonl"
    path.write_bytes(sign_report(forged, subjects, signer))
    code, out = verify(path)
    assert code == 1 and "reference summary: time_series.buckets[0].output_throughput: " in out
    assert " stored, " in out and " re-derived" in out
