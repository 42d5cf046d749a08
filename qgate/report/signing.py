"""The report as an in-toto Statement v1 in a signed DSSE envelope (qgate/attest/statement.py).

Its subjects are the profile file and every checkpoint file; its predicate is the report.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, TypeVar

from qgate.attest.keys import LoadedSigner
from qgate.attest.statement import (
    CHECKPOINT_PREFIX,
    STATEMENT_TYPE,
    Subject,
    profile_subject,
    sign_statement,
)
from qgate.report.model import PREDICATE_TYPE, Report, SignerInfo
from qgate.report.multi_model import MULTI_PREDICATE_TYPE, MultiReport
from qgate.runtime.fingerprint import Fingerprint

R = TypeVar("R", Report, MultiReport)


def subjects_for(
    profile_path: str | Path, fingerprint: Fingerprint | None, profile_sha256: str | None = None
) -> list[Subject]:
    """The profile file (`profile_sha256`: the digest of the bytes the run loaded) plus every
    checkpoint file digested in the fingerprint."""
    out = [profile_subject(profile_path, profile_sha256)]
    if fingerprint is not None:
        out += [
            Subject(name=CHECKPOINT_PREFIX + d.path, sha256=d.sha256)
            for d in sorted(fingerprint.checkpoint, key=lambda d: d.path)
        ]
    return out


def build_statement(report: Report | MultiReport, subjects: Iterable[Subject]) -> dict[str, Any]:
    """The in-toto Statement v1 dict whose predicate is the report (single or multi)."""
    kind = MULTI_PREDICATE_TYPE if isinstance(report, MultiReport) else PREDICATE_TYPE
    return {
        "_type": STATEMENT_TYPE,
        "subject": [s.to_statement() for s in subjects],
        "predicateType": kind,
        "predicate": report.model_dump(mode="json"),
    }


def with_signer(report: R, loaded: LoadedSigner) -> R:
    """The report with its `signer` field set to describe `loaded` (before signing)."""
    key = loaded.signer.public_key
    info = SignerInfo(
        keyid=key.keyid, scheme=key.scheme, source=loaded.source, public_key_pem=loaded.public_pem
    )
    return report.model_copy(update={"signer": info})


def sign_report(report: R, subjects: Iterable[Subject], loaded: LoadedSigner) -> bytes:
    """Set the signer info, wrap the report in a Statement and sign it: envelope JSON bytes.

    The caller redacts first (`qgate.report.redact`); the one-stop
    `qgate.report.writer.write_report` does both.
    """
    return sign_statement(build_statement(with_signer(report, loaded), subjects), loaded)
