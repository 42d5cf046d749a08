"""The CLI: keygen, write_report + verify exit codes, show, compare."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers.report_synthetic import build_report

from qgate.attest.keys import load_signer
from qgate.attest.statement import Subject
from qgate.cli.main import main
from qgate.report.verify.single import default_recompute
from qgate.report.writer import ENVELOPE_NAME, write_report


@pytest.fixture
def run_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    runner = CliRunner()
    res = runner.invoke(main, ["keygen", "--out", str(tmp_path / "k")])
    assert res.exit_code == 0, res.output
    assert "BEGIN" not in res.output  # the private key is never printed
    assert stat.S_IMODE((tmp_path / "k.pem").stat().st_mode) == 0o600
    out = tmp_path / "run"
    out.mkdir()
    (out / "quality.jsonl").write_text('{"x": 1}\n')
    report = build_report(items=10, requests=4, fns=default_recompute())
    written = write_report(
        out,
        report,
        [Subject(name="profile/p.yaml", sha256=report.profile_sha256)],
        load_signer(key_path=tmp_path / "k.pem"),
        html=False,
    )
    assert [a.path for a in written.report.artifacts] == ["quality.jsonl"]
    assert "hf_secretvalue123" not in written.envelope.read_text()
    return out, tmp_path / "k.pub.pem"


def test_verify_exit_codes(run_dir: tuple[Path, Path], tmp_path: Path) -> None:
    out, pub = run_dir
    runner = CliRunner()
    envelope = out / ENVELOPE_NAME
    ok = runner.invoke(main, ["verify", str(envelope), "--pubkey", str(pub)])
    assert ok.exit_code == 0, ok.output
    assert "VERIFIED" in ok.output and "quality verdicts recomputed" in ok.output

    other = tmp_path / "o"
    assert runner.invoke(main, ["keygen", "--type", "ed25519", "--out", str(other)]).exit_code == 0
    bad_key = runner.invoke(main, ["verify", str(envelope), "--pubkey", f"{other}.pub.pem"])
    assert bad_key.exit_code == 1
    assert "signature" in bad_key.output

    truncated = tmp_path / "t.jsonl"
    truncated.write_bytes(envelope.read_bytes()[:500])
    assert runner.invoke(main, ["verify", str(truncated), "--pubkey", str(pub)]).exit_code == 2


def test_show_formats(run_dir: tuple[Path, Path], tmp_path: Path) -> None:
    out, pub = run_dir
    runner = CliRunner()
    envelope = str(out / ENVELOPE_NAME)
    md = runner.invoke(main, ["show", envelope, "--pubkey", str(pub)])
    assert md.exit_code == 0 and "**Verdict: PASS**" in md.output
    js = runner.invoke(main, ["show", envelope, "--format", "json"])
    assert json.loads(js.stdout)["verdict"] == "PASS"
    target = tmp_path / "j.xml"
    res = runner.invoke(main, ["show", envelope, "--format", "junit", "--out", str(target)])
    assert res.exit_code == 0 and target.read_text().startswith("<?xml")
    cmp_html = tmp_path / "c.html"
    res = runner.invoke(main, ["compare", envelope, envelope, "--html", str(cmp_html)])
    assert res.exit_code == 0, res.output
    assert res.stdout.count("| smollm2-fp8kv-test | PASS |") == 2
    assert "<img " in cmp_html.read_text()
