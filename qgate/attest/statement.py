"""In-toto Statement v1 in a DSSE envelope: subjects by sha256, and the signing of a statement.

The envelope is one line of JSON, so a `.intoto.jsonl` file is both a DSSE
envelope and a valid in-toto JSON Lines bundle (what cosign reads). The report
(qgate/report/signing.py) and the reference cache (qgate/quality/cache_auth.py)
sign their statements here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pydantic_core
from pydantic import Field
from securesystemslib.dsse import Envelope

from qgate.attest.keys import LoadedSigner
from qgate.core.files import sha256_file
from qgate.core.records import Record

__all__ = [
    "CHECKPOINT_PREFIX",
    "PAYLOAD_TYPE",
    "PROFILE_PREFIX",
    "STATEMENT_TYPE",
    "Subject",
    "checkpoint_subjects",
    "profile_subject",
    "sign_statement",
]

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


def profile_subject(profile_path: str | Path, sha256: str | None = None) -> Subject:
    """The subject for the profile file as given on the command line: `sha256` is the digest of
    the bytes the run loaded (a run signs what it ran, not the file as it is when the report is
    written: an edit during the run would otherwise be signed as the profile); None reads it."""
    path = Path(profile_path)
    return Subject(name=PROFILE_PREFIX + path.name, sha256=sha256 or sha256_file(path))


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


def sign_statement(statement: Mapping[str, Any], loaded: LoadedSigner) -> bytes:
    """Sign a Statement dict; return the DSSE envelope as one line of JSON plus newline."""
    # NaN/inf become null: JSON has no such numbers and other verifiers reject them
    payload = pydantic_core.to_json(statement, inf_nan_mode="null")
    envelope = Envelope(payload=payload, payload_type=PAYLOAD_TYPE, signatures={})
    envelope.sign(loaded.signer)
    return json.dumps(envelope.to_dict(), separators=(",", ":")).encode() + b"\n"
