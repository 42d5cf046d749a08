"""`qgate calibrate`: a report's answers on ladder items become calibration records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers.report_synthetic import build_report

from qgate.attest.keys import load_signer
from qgate.attest.statement import Subject
from qgate.cli.main import main
from qgate.cli.report import load_report
from qgate.profile import Calibration, MathSuite
from qgate.quality.calibrate import math_calibration
from qgate.quality.records import ItemRecord, SuiteRun
from qgate.report.model import PREDICATE_TYPE, Report
from qgate.report.verify.envelope import open_signed
from qgate.report.writer import ENVELOPE_NAME, write_report


def _run(role: str, correct: dict[str, bool]) -> SuiteRun:
    items = [
        ItemRecord(id=i, prompt_sha256="0" * 64, output="x", answer="x", expected="x", correct=c)
        for i, c in correct.items()
    ]
    return SuiteRun(suite="math.long", role=role, data_sha256="0" * 64, items=items)  # type: ignore[arg-type]


def test_calibrate_writes_per_level_records_that_a_profile_calibrates_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    runner = CliRunner()
    assert runner.invoke(main, ["keygen", "--out", str(tmp_path / "k")]).exit_code == 0
    ids = [f"L{lv}-{k:04d}" for lv in (2, 5) for k in range(1, 11)]
    ref = {i: i.startswith("L2") or i.endswith(("1", "3", "5", "7", "9")) for i in ids}
    cand = {i: ok and i != "L5-0001" for i, ok in ref.items()}
    report = build_report(items=4, requests=2)
    report.quality.runs = [*report.quality.runs, _run("reference", ref), _run("candidate", cand)]
    out = tmp_path / "run"
    out.mkdir()
    write_report(
        out,
        report,
        [Subject(name="profile/p.yaml", sha256=report.profile_sha256)],
        load_signer(key_path=tmp_path / "k.pem"),
        html=False,
    )
    target = tmp_path / "calibration.json"
    envelope = out / ENVELOPE_NAME
    unverified = runner.invoke(main, ["calibrate", str(envelope), "-o", str(target)])
    assert unverified.exit_code == 2 and "--pubkey" in unverified.output  # verified reports only
    other = tmp_path / "other"
    assert runner.invoke(main, ["keygen", "--out", str(other)]).exit_code == 0
    refused = runner.invoke(
        main,
        ["calibrate", str(envelope), "-o", str(target), "--pubkey", f"{other}.pub.pem"],
    )
    assert refused.exit_code != 0 and not target.exists()  # another signer's key
    # the synthetic records are not re-derivable (no real ladder answers): the signature and
    # the key are checked as verify checks them, the recomputation stubbed
    seen: list[Path | None] = []

    def signature_only(path: Path, pubkey: Path | None) -> Report:
        assert pubkey is not None
        seen.append(pubkey)
        data, pem = path.read_bytes(), pubkey.read_bytes()
        open_signed(data, pem, str(path), PREDICATE_TYPE, Report.model_validate)
        return load_report(path, None)

    monkeypatch.setattr("qgate.cli.calibrate.load_report", signature_only)
    res = runner.invoke(
        main,
        [
            "calibrate",
            str(out / ENVELOPE_NAME),
            "-o",
            str(target),
            "--suite",
            "math.long",
            "--pubkey",
            str(tmp_path / "k.pub.pem"),
        ],
    )
    assert res.exit_code == 0, res.output
    assert "level 2: reference 10/10 (100%)" in res.output
    assert "level 5: reference 5/10 (50%), 1 lost / 0 gained" in res.output
    data = json.loads(target.read_text())
    assert seen == [tmp_path / "k.pub.pem"]
    assert data["suite"] == "math.long" and "verified" in data["source"]
    assert data["model"] == "smollm2" and data["engine"] == "vllm"
    assert data["model_sha256"] == report.fingerprint.checkpoint_sha256  # type: ignore[union-attr]
    assert len(data["items"]) == 20  # the core-set items of the report are not ladder items
    result = math_calibration(MathSuite(calibration=Calibration(records=target, min_items=5)))
    assert result is not None and result.chosen == [5] and result.discordance == 0.1
    key = ["--pubkey", str(tmp_path / "k.pub.pem")]
    missing = runner.invoke(
        main, ["calibrate", str(envelope), "-o", str(target), "--suite", "recall.1024", *key]
    )
    assert missing.exit_code == 2 and "no reference run of recall.1024" in missing.output
    easy = runner.invoke(main, ["calibrate", str(envelope), "-o", str(target), *key])
    assert easy.exit_code == 2 and "no ladder items" in easy.output  # the core set's math.short
