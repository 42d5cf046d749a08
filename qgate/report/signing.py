"""The report as an in-toto Statement v1 in a signed DSSE envelope.

The envelope is one line of JSON, so `report.intoto.jsonl` is both a DSSE
envelope and a valid in-toto JSON Lines bundle (what cosign reads).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pydantic_core
from pydantic import Field

from qgate.files import sha256_file
from qgate.models import Record
from qgate.report.keys import LoadedSigner
from qgate.report.model import PREDICATE_TYPE, Report, SignerInfo
from qgate.runtime.fingerprint import Fingerprint

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PAYLOAD_TYPE = "application/vnd.in-toto+json"
PROFILE_PREFIX = "profile/"
CHECKPOINT_PREFIX = "checkpoint/"


class Subject(Record):
    """One in-toto subject: a file the report is about, by sha256."""

    name: str = Field(description="'profile/<file name>' or 'checkpoint/<path in checkpoint>'.")
    sha256: str = Field(description="Hex sha256 of the file.")

    def to_statement(self) -> dict[str, Any]:
        return {"name": self.name, "digest": {"sha256": self.sha256}}


def profile_subject(profile_path: str | Path) -> Subject:
    """The subject for the profile file as given on the command line."""
    path = Path(profile_path)
    return Subject(name=PROFILE_PREFIX + path.name, sha256=sha256_file(path))


def checkpoint_subjects(
    checkpoint_dir: str | Path, digests: Mapping[str, str] | None = None
) -> list[Subject]:
    """Subjects for every file of a checkpoint folder (sorted relative POSIX paths).

    Pass `digests` (relative path -> sha256, e.g. from the fingerprint) to avoid
    hashing multi-GB weights twice.
    """
    if digests is not None:
        return [Subject(name=CHECKPOINT_PREFIX + k, sha256=v) for k, v in sorted(digests.items())]
    root = Path(checkpoint_dir)
    return [
        Subject(name=CHECKPOINT_PREFIX + p.relative_to(root).as_posix(), sha256=sha256_file(p))
        for p in sorted(root.rglob("*"))
        if p.is_file()
    ]


def subjects_for(profile_path: str | Path, fingerprint: Fingerprint | None) -> list[Subject]:
    """The profile file plus every checkpoint file digested in the fingerprint."""
    out = [profile_subject(profile_path)]
    if fingerprint is not None:
        out += [
            Subject(name=CHECKPOINT_PREFIX + d.path, sha256=d.sha256)
            for d in sorted(fingerprint.checkpoint, key=lambda d: d.path)
        ]
    return out


def build_statement(report: Report, subjects: Iterable[Subject]) -> dict[str, Any]:
    """The in-toto Statement v1 dict whose predicate is the report."""
    return {
        "_type": STATEMENT_TYPE,
        "subject": [s.to_statement() for s in subjects],
        "predicateType": PREDICATE_TYPE,
        "predicate": report.model_dump(mode="json"),
    }


def with_signer(report: Report, loaded: LoadedSigner) -> Report:
    """The report with its `signer` field set to describe `loaded` (before signing)."""
    key = loaded.signer.public_key
    info = SignerInfo(
        keyid=key.keyid, scheme=key.scheme, source=loaded.source, public_key_pem=loaded.public_pem
    )
    return report.model_copy(update={"signer": info})


def sign_statement(statement: Mapping[str, Any], loaded: LoadedSigner) -> bytes:
    """Sign a Statement dict; return the DSSE envelope as one line of JSON plus newline."""
    from securesystemslib.dsse import Envelope

    # NaN/inf become null: JSON has no such numbers and other verifiers reject them
    payload = pydantic_core.to_json(statement, inf_nan_mode="null")
    envelope = Envelope(payload=payload, payload_type=PAYLOAD_TYPE, signatures={})
    envelope.sign(loaded.signer)
    return json.dumps(envelope.to_dict(), separators=(",", ":")).encode() + b"\n"


def sign_report(report: Report, subjects: Iterable[Subject], loaded: LoadedSigner) -> bytes:
    """Set the signer info, wrap the report in a Statement and sign it: envelope JSON bytes.

    The caller redacts first (`qgate.report.redact.redact_report`); the
    one-stop `qgate.report.writer.write_report` does both.
    """
    return sign_statement(build_statement(with_signer(report, loaded), subjects), loaded)
