"""An insider's edit of a committed example report: the records edited, every perf figure,
gate and the verdict derived again with qgate's own functions, signed with a fresh key."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from helpers.examples import predicate_of
from helpers.report_synthetic import make_signer

from qgate.attest.dsse import keyid_of
from qgate.attest.statement import Subject, sign_statement
from qgate.gates.judge import judge
from qgate.gates.judgement import LIFE_SALTS, Derivation
from qgate.perf.cache_sources import CACHE_FROM
from qgate.perf.life_probes import probe_salt
from qgate.perf.salts import salt_scope
from qgate.profile import Profile
from qgate.profile.engine_checks import served
from qgate.report.model import Report
from qgate.report.signing import sign_report
from qgate.report.verify.machine import as_run
from qgate.report.verify.recompute import evidence_of
from qgate.report.verify.single import verify_bytes


def example_report(folder: Path) -> Report:
    """The committed run's report (its predicate, signature not checked)."""
    return Report.model_validate(predicate_of(folder / "report.intoto.jsonl"))


def salted_as_run(report: Report, profile: Profile) -> None:
    """From perf derivation CACHE_FROM on, every perf run of a side that salts carries the
    scope qgate/perf/salts.py makes for it, as `qgate run` salts them (a run copied to
    another round or block gets that one's); from LIFE_SALTS on, every life probe set too."""
    if report.perf.derivation < CACHE_FROM:
        return
    for run in report.perf.runs:
        if run.role != "standalone" and "cache_salt" in served(profile.engine_of(run.role)):
            run.params = {**run.params, "cache_salt": salt_scope(run.role, run.round, run.block)}
    if report.perf.derivation >= LIFE_SALTS and report.lives is not None:
        for p in report.lives.records:
            p.cache_salt = probe_salt(profile, p.role, p.side, p.life, p.round, p.purpose, p.kind)


def unsalted(report: Report) -> None:
    """`report`'s perf runs and life probes as a qgate before perf derivation CACHE_FROM made
    them: no salts."""
    for run in report.perf.runs:
        run.params = {k: v for k, v in run.params.items() if k != "cache_salt"}
    for p in report.lives.records if report.lives is not None else []:
        p.cache_salt = None


def rederived(report: Report, *, quality: bool = False) -> Report:
    """`report` with every verdict group after its quality verdicts (perf figures, perf and
    speed gates, lives, the pooled envelope gate, the verdict) made again by the one judge
    from its records, as `qgate run` makes them; the quality verdicts kept as stored, or with
    `quality` made again too (and the warnings), as they are after edited quality records."""
    profile = Profile.model_validate(report.profile)
    perf = report.perf
    salted_as_run(report, profile)
    judged = judge(
        profile,
        evidence_of(report),
        Derivation(quality=report.quality.derivation, perf=perf.derivation),
        judged_with=as_run(report, profile),
        quality=None if quality else report.quality.verdicts,
        resamples=perf.bootstrap_resamples,
        seed=perf.bootstrap_seed,
    )
    if quality:
        report.quality.verdicts, report.warnings = judged.quality, judged.warnings
    perf.results, perf.gates = judged.scenarios, judged.speed
    report.lives, report.envelope, report.verdict = judged.lives, judged.envelope, judged.verdict
    return report


def resigned_verify(
    folder: Path, edit: Callable[[Report], Any], profile: Path | None = None
) -> Any:
    """Edit the committed report in `folder`, re-derive, re-sign with a fresh key and verify
    it (against `profile`, default the folder's profile.yaml); what verify returns, or raises
    what verify raises."""
    report = example_report(folder)
    edit(report)
    line = (folder / "report.intoto.jsonl").read_text().splitlines()[0]
    statement = json.loads(base64.b64decode(json.loads(line)["payload"]))
    subjects = [Subject(name=s["name"], sha256=s["digest"]["sha256"]) for s in statement["subject"]]
    envelope, public_pem = resigned(report, subjects)
    return verify_bytes(envelope, public_pem, profile or folder / "profile.yaml")


def resigned(report: Report, subjects: list[Subject]) -> tuple[bytes, str]:
    """`report` signed with a fresh key, its own ('fresh') reference cache entry signed again
    by the same key as a run signs it; the envelope and the public key."""
    signer = make_signer("ecdsa")
    p = report.reference_provenance
    if p is not None:
        entry = json.loads(p.envelope)
        body = json.loads(base64.b64decode(entry["payload"]))
        p.envelope = sign_statement(body, signer).decode()
        p.signer_keyid = keyid_of(signer.public_pem)
        p.signer_public_key_pem = signer.public_pem
    return sign_report(report, subjects, signer), signer.public_pem
