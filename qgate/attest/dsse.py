"""DSSE primitives shared by `qgate verify` and the reference cache: read, PAE, check.

One envelope format for everything qgate signs (the report, reference cache
entries): a DSSE envelope whose payload is an in-toto Statement, signed by
the key `qgate.attest.keys.load_signer` picked. securesystemslib is imported
inside the functions so that `qgate --help` stays instant.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable
from typing import Any

import pydantic_core

from qgate.attest.keys import public_key_from_pem
from qgate.errors import BadInput, InfrastructureError, VerificationFailed


def _one_line(data: bytes) -> Any:
    """The JSON of a file that is one line (line breaks and blanks at its end aside), parsed
    from its bytes by pydantic's Rust parser, which checks the UTF-8 itself: a field-scale
    envelope is ~100 MB, and decoding, stripping and parsing it as a str takes four times as
    long. None where that fails or the file has more lines; read_envelope then reads it as
    before, and says why it is unreadable. What this parser accepts, json.loads accepts alike
    (it refuses more: lone surrogate escapes, a byte order mark)."""
    end = data.find(b"\n")
    if end != -1 and data[end:].strip(b" \t\r\n"):
        return None  # several lines: the first is the envelope
    try:
        return pydantic_core.from_json(data)
    except ValueError:
        return None


def read_envelope(data: bytes, origin: str = "report") -> dict[str, Any]:
    """Parse the envelope JSON; BadInput (exit 2) when it is not a readable envelope."""
    envelope = _one_line(data)
    if envelope is None:
        envelope = _read_lines(data, origin)
    if not isinstance(envelope, dict) or not {"payload", "payloadType", "signatures"} <= set(
        envelope
    ):
        raise BadInput(f"{origin}: not a DSSE envelope (needs payload, payloadType, signatures)")
    return envelope


def _read_lines(data: bytes, origin: str) -> Any:
    """The JSON of the file's first line, after UTF-8 decoding and stripping."""
    try:
        text = data.decode("utf-8").strip()
        if not text:
            raise BadInput(f"{origin}: empty file")
        envelope = json.loads(text.splitlines()[0]) if "\n" in text else json.loads(text)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadInput(
            f"{origin}: not a JSON DSSE envelope (truncated or corrupt?): {exc}"
        ) from None
    except RecursionError:
        raise BadInput(f"{origin}: not a DSSE envelope (JSON nested too deeply)") from None
    return envelope


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE pre-authentication encoding: what the signature is over."""
    t = payload_type.encode()
    return b"DSSEv1 %d %b %d %b" % (len(t), t, len(payload), payload)


def check_signature(envelope: dict[str, Any], pubkey_pem: str | bytes) -> tuple[bytes, str]:
    """Verify one signature over the PAE with the key; return (payload bytes, keyid).

    VerificationFailed (exit 1) when no signature verifies; InfrastructureError
    (exit 3) when securesystemslib cannot be imported.
    """
    try:
        from securesystemslib.exceptions import UnverifiedSignatureError, VerificationError
        from securesystemslib.signer import Signature  # type: ignore[attr-defined]  # re-exported without __all__
    except ImportError as exc:
        raise InfrastructureError(f"cannot check signatures: {exc}") from None

    key = public_key_from_pem(pubkey_pem)
    try:
        # b64decode(validate=True) without its ASCII copy of the str: the same strict decode
        payload = binascii.a2b_base64(envelope["payload"], strict_mode=True)
    except (binascii.Error, TypeError, ValueError):
        raise VerificationFailed("payload is not valid base64") from None
    signatures = envelope["signatures"]
    if not isinstance(signatures, list) or not signatures:
        raise VerificationFailed("envelope carries no signature")
    signed = pae(str(envelope["payloadType"]), payload)
    for entry in signatures:
        try:
            raw = base64.b64decode(entry["sig"], validate=True)
        except (binascii.Error, KeyError, TypeError, ValueError):
            continue
        # keyids are hints in DSSE; the key given by the verifier decides
        try:
            key.verify_signature(Signature(key.keyid, raw.hex()), signed)
        except (UnverifiedSignatureError, VerificationError):
            continue
        return payload, key.keyid
    raise VerificationFailed("signature does not verify with the given public key")


def check_any(envelope: dict[str, Any], trusted_pems: Iterable[str | bytes]) -> tuple[bytes, str]:
    """check_signature against each trusted key in turn; the first that verifies wins."""
    for pem in trusted_pems:
        try:
            return check_signature(envelope, pem)
        except VerificationFailed:
            continue
    raise VerificationFailed("signature does not verify with any trusted key")


def keyid_of(pubkey_pem: str | bytes) -> str:
    """The securesystemslib key id of a public key PEM (what reports name signers by)."""
    return str(public_key_from_pem(pubkey_pem).keyid)
