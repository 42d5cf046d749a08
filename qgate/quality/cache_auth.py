"""Authentication of reference cache entries: sign an entry's payload, verify it, record it.

Kept apart from the cache itself so that `qgate verify` can check a report's
reference provenance without importing the quality stage's machinery.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal

from pydantic import Field

from qgate import __version__
from qgate.attest.dsse import check_signature, read_envelope
from qgate.attest.statement import PAYLOAD_TYPE, STATEMENT_TYPE, sign_statement
from qgate.core.files import sha256_bytes
from qgate.core.records import Record
from qgate.errors import BadInput, VerificationFailed

if TYPE_CHECKING:
    from qgate.attest.keys import LoadedSigner

# 2: signed entries. The format is part of the cache key, so older unsigned entries are never read.
CACHE_FORMAT = 2
PAYLOAD = "reference.json"
ENVELOPE = "reference.json.dsse"
ENTRY_PREDICATE_TYPE = "https://qgate.dev/reference-cache/v1"


class ReferenceProvenance(Record):
    """Where the reference's quality results came from: a signed cache entry or this run."""

    source: Literal["cache", "fresh"] = Field(
        description="'cache': read from a reference cache entry; 'fresh': computed by this run."
    )
    cache_key: str = Field(description="The reference cache key (sha256 hex).")
    entry_sha256: str = Field(description="sha256 of the cache entry's payload (reference.json).")
    signer_keyid: str = Field(description="Key id of the key that signed the cache entry.")
    signer_public_key_pem: str = Field(description="Public key (PEM) that verified the entry.")
    created_at: str = Field(description="UTC time the entry was made, ISO 8601.")
    envelope: str = Field(
        description="The entry's DSSE envelope (JSON), so verify can check the signature itself."
    )


class EntryStatement(Record):
    """What a verified cache entry envelope says."""

    keyid: str = Field(description="Key id of the trusted key that verified the envelope.")
    public_key_pem: str = Field(description="That key, PEM.")
    payload_sha256: str = Field(description="sha256 of the payload the Statement covers.")
    cache_key: str = Field(description="The cache key the signer stored the entry under.")
    created_at: str = Field(description="When the entry was made, ISO 8601 UTC.")


def entry_statement(envelope: bytes, trusted_pems: Iterable[str]) -> EntryStatement:
    """Verify a cache entry envelope with the trusted keys; VerificationFailed with the reason."""
    try:
        env = read_envelope(envelope, "cache entry envelope")
    except BadInput as exc:
        raise VerificationFailed(exc.message) from None
    if env["payloadType"] != PAYLOAD_TYPE:
        raise VerificationFailed(f"envelope payload type {env['payloadType']!r}")
    for pem in trusted_pems:
        try:
            body, keyid = check_signature(env, pem)
        except VerificationFailed:
            continue
        break
    else:
        raise VerificationFailed("not signed by a trusted key")
    try:
        statement = json.loads(body)
        subject = statement["subject"][0]
        predicate = statement["predicate"]
        if statement["_type"] != STATEMENT_TYPE or statement["predicateType"] != (
            ENTRY_PREDICATE_TYPE
        ):
            raise VerificationFailed("the envelope is not a reference cache Statement")
        if subject["name"] != PAYLOAD:
            raise VerificationFailed(f"the Statement's subject is {subject['name']!r}")
        return EntryStatement(
            keyid=keyid,
            public_key_pem=pem,
            payload_sha256=str(subject["digest"]["sha256"]),
            cache_key=str(predicate["cache_key"]),
            created_at=str(predicate["created_at"]),
        )
    except (ValueError, KeyError, IndexError, TypeError):
        raise VerificationFailed("the signed Statement is malformed") from None


def sign_entry(
    payload: bytes, key: str, signer: LoadedSigner, created_at: str | None = None
) -> bytes:
    """The DSSE envelope (one JSON line) that signs a cache entry's payload under `key`."""
    created = created_at or datetime.now(UTC).isoformat(timespec="seconds")
    statement = {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": PAYLOAD, "digest": {"sha256": sha256_bytes(payload)}}],
        "predicateType": ENTRY_PREDICATE_TYPE,
        "predicate": {
            "cache_key": key,
            "format": CACHE_FORMAT,
            "created_at": created,
            "qgate_version": __version__,
        },
    }
    return sign_statement(statement, signer)


def provenance_of(
    source: Literal["cache", "fresh"], envelope: bytes, public_pem: str
) -> ReferenceProvenance:
    """The report's provenance record of a verified entry envelope."""
    return record_provenance(source, entry_statement(envelope, [public_pem]), envelope)


def record_provenance(
    source: Literal["cache", "fresh"], st: EntryStatement, envelope: bytes
) -> ReferenceProvenance:
    return ReferenceProvenance(
        source=source,
        cache_key=st.cache_key,
        entry_sha256=st.payload_sha256,
        signer_keyid=st.keyid,
        signer_public_key_pem=st.public_key_pem,
        created_at=st.created_at,
        envelope=envelope.decode("utf-8").strip(),
    )
