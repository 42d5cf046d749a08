"""The signed result statement beside the report: the verdicts, the items' Merkle root and the
pre-registration binding, small enough to hand over without the records.

An in-toto Statement (predicate type https://qgate.dev/eval-result/v1) whose subjects are the
profile file and the report's envelope, by sha256; its predicate follows the eval-result
shape of in-toto/attestation PR #575 where it fits (a verdict per gate with its observed value
and limit, a per-item RFC 6962 root, the pre-registration binding). An auditor checks one
item against it with the item's proof (`qgate proof`, `qgate check-proof`); `qgate verify`
checks that it says what the report says.
"""

from __future__ import annotations

from pydantic import Field

from qgate.attest.keys import LoadedSigner
from qgate.attest.statement import STATEMENT_TYPE, Subject, profile_subject, sign_statement
from qgate.core.files import sha256_bytes
from qgate.core.records import Record
from qgate.core.verdict import verdict_word
from qgate.report.items_tree import ItemsRoot
from qgate.report.model import Report
from qgate.report.preregistration import PreregistrationRef

__all__ = ["REPORT_SUBJECT", "RESULT_NAME", "RESULT_TYPE", "EvalResult", "result_of", "sign_result"]

RESULT_TYPE = "https://qgate.dev/eval-result/v1"
RESULT_NAME = "result.intoto.jsonl"
REPORT_SUBJECT = "report/report.intoto.jsonl"


class GateResult(Record):
    """One gate's verdict as the report states it."""

    gate: str = Field(description="Gate id.")
    verdict: str = Field(description="PASS, FAIL or INCONCLUSIVE.")
    observed: float | None = Field(description="Observed value.")
    limit: float | None = Field(description="The limit.")


class EvalResult(Record):
    """The result statement's predicate."""

    profile_sha256: str = Field(description="sha256 of the profile file.")
    report_sha256: str = Field(description="sha256 of the signed report's envelope file.")
    verdict: str = Field(description="The report's overall verdict.")
    gates: list[GateResult] = Field(description="Every gate's verdict, in the report's order.")
    items_root: ItemsRoot | None = Field(description="The report's per-item root.")
    preregistration: PreregistrationRef | None = Field(
        description="The report's binding to the statement signed before the run."
    )


def result_of(report: Report, envelope: bytes) -> EvalResult:
    """The result statement's predicate for `report`, signed as `envelope`."""
    return EvalResult(
        profile_sha256=report.profile_sha256,
        report_sha256=sha256_bytes(envelope),
        verdict=str(report.verdict),
        gates=[
            GateResult(gate=v.gate, verdict=verdict_word(v), observed=v.observed, limit=v.limit)
            for v in report.all_verdicts()
        ],
        items_root=report.items_root,
        preregistration=report.preregistration,
    )


def sign_result(
    result: EvalResult, profile_name: str, envelope: bytes, loaded: LoadedSigner
) -> bytes:
    """The DSSE envelope of the result statement."""
    subjects = [
        profile_subject(profile_name, result.profile_sha256),
        Subject(name=REPORT_SUBJECT, sha256=sha256_bytes(envelope)),
    ]
    statement = {
        "_type": STATEMENT_TYPE,
        "subject": [s.to_statement() for s in subjects],
        "predicateType": RESULT_TYPE,
        "predicate": result.model_dump(mode="json"),
    }
    return sign_statement(statement, loaded)
