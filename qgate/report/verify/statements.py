"""The report's two companions: the pre-registration signed before the run, and the result
statement signed after it (qgate/report/preregistration.py, result_statement.py).

Inside the report, both bindings are derived fields, re-derived here: the pre-registration's
lock from the signed profile and the report's plan, the items' Merkle root from its records
(`check_bindings`). Beside the report (or given), the statements themselves are checked
(`check_statements`): their signatures, that the report binds to exactly the pre-registration
file's bytes, that it registered what the report was judged by and was signed before the run's
servers could start; and that the result statement says what the report says, over the
report's own envelope. The times are the signer's own clock: only a copy of the
pre-registration held by someone else before the run proves it came first (`qgate verify
--preregistration THEIR_COPY`).
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from qgate.attest.dsse import check_signature, read_envelope
from qgate.attest.statement import PAYLOAD_TYPE, STATEMENT_TYPE
from qgate.core.files import sha256_bytes
from qgate.errors import BadInput, VerificationFailed
from qgate.profile import Profile
from qgate.report.items_tree import ItemProof, check_proof, items_root
from qgate.report.model import Report
from qgate.report.preregistration import (
    PREREGISTRATION_NAME,
    PREREGISTRATION_TYPE,
    Preregistration,
    lock_of,
    plan_lock,
    servers_from,
)
from qgate.report.result_statement import RESULT_NAME, RESULT_TYPE, EvalResult, result_of
from qgate.report.verify.envelope import VerifyResult

__all__ = ["check_bindings", "check_item", "check_statements", "read_key"]

M = TypeVar("M", bound=BaseModel)

CLOCK_SLACK_S = 5.0
"""Rounding of the report's time (whole seconds) and of its stage timings."""


def check_bindings(report: Report, prof: Profile) -> list[str]:
    """The pre-registration lock and the items' root, re-derived; what was checked."""
    out = []
    ref = report.preregistration
    if ref is not None:
        lock = plan_lock(prof, report.profile_sha256, report.plan)
        if ref.lock_sha256 != lock:
            raise VerificationFailed(
                f"preregistration.lock_sha256: {ref.lock_sha256} stored, {lock} re-derived "
                "from the profile's criteria and the report's plan"
            )
        out.append("pre-registration lock re-derived from the profile's criteria and the plan")
    root = report.items_root
    if root is not None:
        again = items_root(report.quality.runs)
        if again != root:
            raise VerificationFailed(
                f"items_root: {root.sha256} over {root.leaves} items stored, {again.sha256} "
                f"over {again.leaves} re-derived"
            )
        out.append(f"items root re-derived over {root.leaves} item records")
    return out


def _read(path: Path, what: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise BadInput(f"cannot read {what} {path}: {exc.strerror}") from None


def read_key(path: Path) -> bytes:
    """A public key file's bytes; BadInput (exit 2) when it cannot be read."""
    return _read(path, "public key")


def check_statements(
    report_path: Path,
    data: bytes,
    result: VerifyResult[Report],
    pem: bytes,
    preregistration: Path | None = None,
    preregistration_pem: bytes | None = None,
) -> None:
    """The statements beside the report (or `preregistration`, an auditor's copy, signed by
    `preregistration_pem`'s key, else the report's), into `result`'s lines."""
    report = result.report
    given = preregistration is not None
    path = preregistration or report_path.parent / PREREGISTRATION_NAME
    if report.preregistration is None:
        if given:
            raise VerificationFailed(f"the report binds to no pre-registration, {path} given")
        result.notes.append("not pre-registered: the run signed no plan before it started")
    elif path.is_file():
        result.checked.append(_check_preregistration(report, path, preregistration_pem or pem))
    else:
        result.notes.append(
            f"pre-registration {report.preregistration.statement_sha256[:12]}... bound but "
            f"not checked: no {PREREGISTRATION_NAME} beside the report (--preregistration FILE)"
        )
    beside = report_path.parent / RESULT_NAME
    if beside.is_file():
        result.checked.append(_check_result(report, data, beside, pem))


def _check_preregistration(report: Report, path: Path, pem: bytes) -> str:
    ref = report.preregistration
    assert ref is not None
    data = _read(path, "pre-registration")
    stated, keyid = _opened(data, pem, path, PREREGISTRATION_TYPE, Preregistration)
    problems = []
    if sha256_bytes(data) != ref.statement_sha256:
        problems.append(
            f"the report binds statement {ref.statement_sha256[:12]}..., {path.name} is "
            f"{sha256_bytes(data)[:12]}..."
        )
    lock = lock_of(
        stated.profile_sha256, stated.criteria, stated.suites, stated.scenarios, stated.power
    )
    if stated.lock_sha256 != lock:
        problems.append(
            f"its lock {stated.lock_sha256[:12]}... is not its content's {lock[:12]}..."
        )
    if stated.lock_sha256 != ref.lock_sha256:
        problems.append(
            f"it registers lock {stated.lock_sha256[:12]}..., the report was judged by "
            f"{ref.lock_sha256[:12]}..."
        )
    if stated.profile_sha256 != report.profile_sha256:
        problems.append("it registers another profile file than the report's")
    if (stated.signed_at, keyid) != (ref.signed_at, ref.keyid):
        problems.append("its time or key differ from the report's binding")
    start = servers_from(report.created_at, report.stage_timings)
    signed = datetime.fromisoformat(stated.signed_at)
    if signed > start + timedelta(seconds=CLOCK_SLACK_S):
        problems.append(
            f"signed at {stated.signed_at}, after the run's servers could start "
            f"({start.isoformat()})"
        )
    if problems:
        raise VerificationFailed(f"pre-registration {path}: " + "; ".join(problems))
    return (
        f"pre-registration {path.name}: signature by key {keyid[:12]}..., signed "
        f"{stated.signed_at} before the servers started, {len(stated.criteria)} criteria and "
        "the plan are the report's"
    )


def _opened(data: bytes, pem: bytes, path: Path, kind: str, model: type[M]) -> tuple[M, str]:
    """The statement's predicate and signing keyid, its signature and type checked."""
    envelope = read_envelope(data, str(path))
    if envelope["payloadType"] != PAYLOAD_TYPE:
        raise VerificationFailed(f"{path}: payload type {envelope['payloadType']!r}")
    payload, keyid = check_signature(envelope, pem)
    try:
        statement = json.loads(payload)
    except ValueError:
        raise VerificationFailed(f"{path}: payload is not JSON") from None
    if statement.get("_type") != STATEMENT_TYPE or statement.get("predicateType") != kind:
        raise VerificationFailed(f"{path}: not an in-toto Statement of {kind}")
    try:
        return model.model_validate(statement.get("predicate")), keyid
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise VerificationFailed(f"{path}: predicate.{where}: {first['msg']}") from None


def _check_result(report: Report, data: bytes, path: Path, pem: bytes) -> str:
    raw = _read(path, "result statement")
    stated, _ = _opened(raw, pem, path, RESULT_TYPE, EvalResult)
    if stated != result_of(report, data):
        raise VerificationFailed(
            f"{path}: the result statement does not say what the report says (verdicts, "
            "items root, binding, or the report's digest)"
        )
    return f"result statement {path.name}: the report's verdicts, items root and digest"


def check_item(proof_path: Path, result_path: Path, pem: bytes) -> ItemProof:
    """The item `proof_path` proves under the root of the signed result statement at
    `result_path`: the spot check of one item without the report's records."""
    stated, _ = _opened(
        _read(result_path, "result statement"), pem, result_path, RESULT_TYPE, EvalResult
    )
    try:
        proof = ItemProof.model_validate_json(_read(proof_path, "proof"))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise BadInput(f"{proof_path}: {where}: {first['msg']}") from None
    if stated.items_root is None:
        raise VerificationFailed(f"{result_path}: the result statement holds no items root")
    if problem := check_proof(proof, stated.items_root):
        raise VerificationFailed(f"{proof_path}: {problem}")
    return proof
