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
from qgate.gates.judge import perf_results
from qgate.gates.speed import report_gates
from qgate.profile import Profile
from qgate.profile.perf import is_preview
from qgate.report.model import Report
from qgate.report.signing import sign_report
from qgate.report.verdict import overall
from qgate.report.verify.single import verify_bytes


def example_report(folder: Path) -> Report:
    """The committed run's report (its predicate, signature not checked)."""
    return Report.model_validate(predicate_of(folder / "report.intoto.jsonl"))


def rederived(report: Report) -> Report:
    """`report` with its perf figures, perf gates and verdict derived from its records again,
    as `qgate run` derives them."""
    profile = Profile.model_validate(report.profile)
    perf = report.perf
    perf.results = perf_results(
        profile.perf, perf.runs, resamples=perf.bootstrap_resamples, seed=perf.bootstrap_seed
    )
    perf.gates = report_gates(profile.perf, perf.status, perf.results)
    report.verdict = overall(report.all_verdicts(), perf.status, is_preview(profile))
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
    signer = make_signer("ecdsa")
    p = report.reference_provenance
    if p is not None:  # the run's own ('fresh') cache entry, signed by the same key
        entry = json.loads(p.envelope)
        body = json.loads(base64.b64decode(entry["payload"]))
        p.envelope = sign_statement(body, signer).decode()
        p.signer_keyid = keyid_of(signer.public_pem)
        p.signer_public_key_pem = signer.public_pem
    envelope = sign_report(report, subjects, signer)
    return verify_bytes(envelope, signer.public_pem, profile or folder / "profile.yaml")
