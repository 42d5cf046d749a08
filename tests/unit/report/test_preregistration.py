"""The plan signed before the run and the result statement after it, through `qgate plan
--sign`, the report writer, `qgate verify`, `qgate proof` and `qgate check-proof`.

Each forgery is an insider's: signed with the run's own key, every derived field made again
with qgate's own functions. What stops it is a copy someone else holds (the auditor's
pre-registration), the time the statement names, or the result statement beside the report.
"""

from __future__ import annotations

import base64
import json
import shutil
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from helpers.report_synthetic import PROFILE, build_report, make_signer

from qgate.attest.keys import LoadedSigner
from qgate.attest.statement import profile_subject
from qgate.cli.main import main
from qgate.core.plan import Plan, SuitePlan
from qgate.gates.quality import evaluate_quality
from qgate.profile import Profile
from qgate.report.model import Report
from qgate.report.preregistration import (
    PREREGISTRATION_NAME,
    criteria_of,
    plan_lock,
    preregistration_of,
    sign_preregistration,
)
from qgate.report.result_statement import RESULT_NAME
from qgate.report.verdict import overall
from qgate.report.verify.single import default_recompute
from qgate.report.writer import ENVELOPE_NAME, write_report

PLAN = Plan(
    reference_cached=False,
    preflight={"candidate": "none"},
    lives=[],
    suites=[SuitePlan(suite="math.short", items=10)],
)


@dataclass
class Run:
    """A written run folder: its report, statements, key and profile."""

    folder: Path
    profile: Path
    pubkey: Path
    signer: LoadedSigner

    @property
    def envelope(self) -> Path:
        return self.folder / ENVELOPE_NAME

    def verify(self, *extra: str) -> Result:
        args = ["verify", str(self.envelope), "--pubkey", str(self.pubkey), *extra]
        return CliRunner().invoke(main, args)


def _write(
    tmp: Path,
    prereg_at: datetime | None = None,
    max_drop: float | None = None,
    registered_drop: float | None = None,
) -> Run:
    """A report written as `qgate run` writes it, its plan signed first (at `prereg_at`);
    `max_drop` loosens the report's profile, `registered_drop` the statement's."""
    tmp.mkdir(parents=True, exist_ok=True)
    profile = tmp / "profile.yaml"
    profile.write_text(json.dumps(PROFILE))
    signer = make_signer("ecdsa")
    pubkey = tmp / "key.pub.pem"
    pubkey.write_text(signer.public_pem)
    report = build_report(items=10, requests=3, fns=default_recompute())
    report.profile_sha256 = profile_subject(profile).sha256
    report.plan = PLAN
    report.created_at = datetime.now(UTC).isoformat(timespec="seconds")
    folder = tmp / "run"
    folder.mkdir()
    if prereg_at is not None:
        declared = Profile.model_validate(PROFILE)
        if registered_drop is not None:
            declared.quality.math.max_drop = registered_drop  # type: ignore[union-attr]
        prereg = preregistration_of(declared, profile, report.profile_sha256, PLAN)
        prereg.signed_at = prereg_at.isoformat(timespec="seconds")
        (folder / PREREGISTRATION_NAME).write_bytes(sign_preregistration(prereg, signer))
    if max_drop is not None:  # every verdict made again under it, with qgate's own gates
        report.profile["quality"]["math"]["max_drop"] = max_drop
        q = report.quality
        spec = Profile.model_validate(report.profile).quality
        q.verdicts = evaluate_quality(spec, q.runs, q.divergence)
        report.verdict = overall(report.all_verdicts(), report.perf.status)
    write_report(folder, report, [profile_subject(profile)], signer, html=False, step_summary=False)
    return Run(folder, profile, pubkey, signer)


def _before() -> datetime:
    return datetime.now(UTC) - timedelta(hours=1)


def test_criteria_name_every_accuracy_gate_with_its_bar() -> None:
    criteria = criteria_of(Profile.model_validate(PROFILE))
    drop = next(c for c in criteria if c.gate == "quality.math.max_drop")
    assert (drop.comparator, drop.threshold, drop.rule) == ("<=", 0.25, "point")
    assert {c.gate for c in criteria} >= {"quality.math.max_drop", "quality.math.significance"}


def test_the_lock_moves_with_a_margin_and_with_the_plan() -> None:
    profile = Profile.model_validate(PROFILE)
    lock = plan_lock(profile, "a" * 64, PLAN)
    looser = Profile.model_validate(
        {**PROFILE, "quality": {**PROFILE["quality"], "math": {**PROFILE["quality"]["math"]}}}
    )
    looser.quality.math.max_drop = 0.3  # type: ignore[union-attr]
    fewer = PLAN.model_copy(update={"suites": [SuitePlan(suite="math.short", items=8)]})
    assert plan_lock(looser, "a" * 64, PLAN) != lock
    assert plan_lock(profile, "a" * 64, fewer) != lock
    assert plan_lock(profile, "b" * 64, PLAN) != lock
    assert plan_lock(profile, "a" * 64, PLAN) == lock


def test_a_preregistered_report_verifies_with_its_statements(tmp_path: Path) -> None:
    run = _write(tmp_path, prereg_at=_before())
    res = run.verify()
    assert res.exit_code == 0, res.output
    assert "ok  pre-registration lock re-derived" in res.output
    assert "ok  pre-registration preregistration.intoto.jsonl: signature by key" in res.output
    assert "ok  result statement result.intoto.jsonl" in res.output
    assert "ok  items root re-derived over 20 item records" in res.output


def test_a_statement_signed_after_the_servers_started_is_refused(tmp_path: Path) -> None:
    run = _write(tmp_path, prereg_at=datetime.now(UTC) + timedelta(hours=1))
    res = run.verify()
    assert res.exit_code == 1
    assert "after the run's servers could start" in res.stderr


def test_a_loosened_margin_under_a_new_statement_fails_against_the_auditors_copy(
    tmp_path: Path,
) -> None:
    # The auditor got the statement before the run; the insider then loosened max_drop in
    # the profile, signed a new statement (backdated) and re-derived every verdict.
    honest = _write(tmp_path / "a", prereg_at=_before())
    (tmp_path / "b").mkdir()
    auditors_copy = tmp_path / "b" / "theirs.intoto.jsonl"
    shutil.copy(honest.folder / PREREGISTRATION_NAME, auditors_copy)
    forged = _write(tmp_path / "c", prereg_at=_before(), max_drop=0.5, registered_drop=0.5)
    assert forged.verify().exit_code == 0  # alone it is self-consistent
    key = ["--preregistration-pubkey", str(honest.pubkey)]
    res = forged.verify("--preregistration", str(auditors_copy), *key)
    assert res.exit_code == 1
    assert "the report binds statement" in res.stderr and "registers lock" in res.stderr


def test_a_margin_loosened_after_the_statement_is_refused(tmp_path: Path) -> None:
    res = _write(tmp_path, prereg_at=_before(), max_drop=0.5).verify()
    assert res.exit_code == 1
    assert "error: preregistration.lock_sha256: " in res.stderr and "re-derived" in res.stderr


def test_a_report_whose_binding_was_deleted_fails_against_the_auditors_copy(
    tmp_path: Path,
) -> None:
    honest = _write(tmp_path / "a", prereg_at=_before())
    unbound = _write(tmp_path / "c")
    res = unbound.verify("--preregistration", str(honest.folder / PREREGISTRATION_NAME))
    assert res.exit_code == 1 and "binds to no pre-registration" in res.stderr
    assert "not pre-registered" in unbound.verify().output


def test_a_statement_swapped_beside_the_report_is_refused(tmp_path: Path) -> None:
    run = _write(tmp_path / "a", prereg_at=_before())
    other = _write(tmp_path / "b", prereg_at=_before() - timedelta(minutes=5))
    shutil.copy(other.folder / PREREGISTRATION_NAME, run.folder / PREREGISTRATION_NAME)
    res = run.verify("--preregistration-pubkey", str(other.pubkey))
    assert res.exit_code == 1 and "the report binds statement" in res.stderr


def test_an_edited_result_statement_is_refused(tmp_path: Path) -> None:
    run = _write(tmp_path, prereg_at=_before())
    other = _write(tmp_path / "b", max_drop=0.5)
    shutil.copy(other.folder / RESULT_NAME, run.folder / RESULT_NAME)  # another run's result
    res = run.verify("--preregistration-pubkey", str(run.pubkey))
    assert res.exit_code == 1


def test_one_item_checked_against_the_signed_result_alone(tmp_path: Path) -> None:
    run = _write(tmp_path, prereg_at=_before())
    payload = base64.b64decode(json.loads(run.envelope.read_bytes())["payload"])
    report = Report.model_validate(json.loads(payload)["predicate"])
    cand = next(r for r in report.quality.runs if r.role == "candidate")
    item = f"{cand.suite}/candidate/{cand.items[3].id}"
    proof = tmp_path / "proof.json"
    made = CliRunner().invoke(main, ["proof", str(run.envelope), item, "--out", str(proof)])
    assert made.exit_code == 0, made.output
    alone = tmp_path / "auditor"
    alone.mkdir()  # the auditor holds the proof and the small result statement, nothing else
    shutil.copy(proof, alone / "proof.json")
    shutil.copy(run.folder / RESULT_NAME, alone / RESULT_NAME)
    args = ["check-proof", str(alone / "proof.json"), "--result", str(alone / RESULT_NAME)]
    ok = CliRunner().invoke(main, [*args, "--pubkey", str(run.pubkey)])
    assert ok.exit_code == 0, ok.output
    assert f"ok  {item} is leaf" in ok.output and "of 20 under the signed root" in ok.output
    body = json.loads(proof.read_text())
    leaf = json.loads(body["leaf"])
    leaf["item"]["correct"] = not leaf["item"]["correct"]
    body["leaf"] = json.dumps(leaf, sort_keys=True, separators=(",", ":"))
    (alone / "proof.json").write_text(json.dumps(body))
    bad = CliRunner().invoke(main, [*args, "--pubkey", str(run.pubkey)])
    assert bad.exit_code == 1 and "do not lead to the signed root" in bad.stderr


def test_plan_sign_writes_a_statement_run_and_verify_accept(tmp_path: Path) -> None:
    profile = tmp_path / "profile.yaml"
    profile.write_text(json.dumps(PROFILE))
    key = tmp_path / "k.pem"
    assert CliRunner().invoke(main, ["keygen", "--out", str(key)]).exit_code == 0
    out = tmp_path / "pre.intoto.jsonl"
    res = CliRunner().invoke(main, ["plan", str(profile), "--sign", str(out), "--key", str(key)])
    assert res.exit_code == 0, res.output
    assert "pre-registration signed into" in res.stderr
    body = json.loads(out.read_bytes())
    assert body["payloadType"] == "application/vnd.in-toto+json"


@pytest.mark.parametrize("given", ["not json", '{"payload": "e30=", "signatures": []}'])
def test_run_refuses_a_statement_that_is_none(tmp_path: Path, given: str) -> None:
    from qgate.errors import BadInput
    from qgate.report.preregistration import read_statement

    with pytest.raises(BadInput, match="pre"):
        read_statement(given.encode(), "--preregistration x")
