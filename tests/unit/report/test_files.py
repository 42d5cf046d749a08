"""Atomic writes, run folders, artifact digests, redaction and the overall verdict."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from pathlib import Path

import pytest
from helpers.report_synthetic import build_report

from qgate.core.verdict import Verdict
from qgate.errors import BadInput
from qgate.report.files import artifact_digests, atomic_write, new_run_dir
from qgate.report.redact import REDACTED, redact_report
from qgate.report.verdict import overall, perf_status


def test_atomic_write_replaces_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "f.json"
    atomic_write(target, b"one")
    atomic_write(target, b"two")
    assert target.read_bytes() == b"two"
    assert [p.name for p in target.parent.iterdir()] == ["f.json"]


def test_new_run_dir_never_reuses(tmp_path: Path) -> None:
    now = datetime(2026, 11, 30, 3, 0, 0, tzinfo=UTC)
    a = new_run_dir(tmp_path, "my profile/x", now)
    b = new_run_dir(tmp_path, "my profile/x", now)
    assert a != b and a.is_dir() and b.is_dir()
    assert a.name == "20261130T030000Z-my-profile-x"
    assert b.name == a.name + "-1"


def test_new_run_dir_that_cannot_be_made_is_bad_input(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    with pytest.raises(BadInput) as info:
        new_run_dir(tmp_path / "f" / "runs", "p")
    assert info.value.message.startswith(f"cannot create a run folder in {tmp_path / 'f' / 'runs'}")


def test_artifact_digests(tmp_path: Path) -> None:
    atomic_write(tmp_path / "b.txt", b"bbb")
    atomic_write(tmp_path / "logs" / "a.log", b"a")
    atomic_write(tmp_path / "report.intoto.jsonl", b"{}")
    arts = artifact_digests(tmp_path, exclude=("report.intoto.jsonl",))
    assert [a.path for a in arts] == ["b.txt", "logs/a.log"]
    assert arts[0].sha256 == hashlib.sha256(b"bbb").hexdigest() and arts[0].bytes == 3


def test_redaction_env_command_and_profile_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    report = build_report()
    report.profile["secrets"] = ["MY_PLAIN"]
    report.profile["engine"]["env"] = {"MY_PLAIN": "plainvalue", "VLLM_X": "1"}
    report.command_line += ["--flag=plainvalue", "--hf-token", "innocent-looking"]
    monkeypatch.setenv("MY_PLAIN", "plainvalue")
    clean = redact_report(report)
    text = clean.model_dump_json()
    assert "hf_secretvalue123" not in text and "plainvalue" not in text
    assert clean.profile["engine"]["env"] == {"MY_PLAIN": REDACTED, "VLLM_X": "1"}
    assert clean.effective_configs[1].command[-1] == REDACTED
    assert clean.command_line[-2:] == ["--hf-token", REDACTED]
    assert clean.profile_sha256 == report.profile_sha256  # digests are not token-shaped
    assert clean.quality == report.quality


def _v(passed: bool, inconclusive: bool = False) -> Verdict:
    return Verdict(
        gate="g",
        suite="s",
        observed=0.0,
        limit=0.0,
        passed=passed,
        inconclusive=inconclusive,
        reason="r",
    )


def test_overall_and_perf_status() -> None:
    assert overall([_v(True)], "ran") == "PASS"
    assert overall([_v(True), _v(False)], "skipped: gates failed") == "FAIL"
    assert overall([_v(False)], "ungated") == "UNGATED"
    assert overall([_v(True)], "skipped: --skip-perf") == "PASS"
    assert perf_status([_v(True)], False, False) == "ran"
    assert perf_status([_v(True), _v(False)], False, False) == "skipped: gates failed"
    assert perf_status([_v(False)], False, True) == "ungated"
    assert perf_status([_v(True)], True, False) == "skipped: --skip-perf"


def test_an_inconclusive_gate_is_neither_pass_nor_fail_and_a_failure_outranks_it() -> None:
    unsure = _v(False, inconclusive=True)
    assert overall([_v(True), unsure], "skipped: gates inconclusive") == "INCONCLUSIVE"
    assert overall([unsure, _v(False)], "skipped: gates failed") == "FAIL"
    assert overall([unsure], "ungated") == "UNGATED"
    assert perf_status([_v(True), unsure], False, False) == "skipped: gates inconclusive"
    assert perf_status([unsure, _v(False)], False, False) == "skipped: gates failed"
    assert perf_status([unsure], False, True) == "ungated"
