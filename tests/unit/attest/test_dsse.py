from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from qgate.attest.dsse import check_signature, read_envelope
from qgate.attest.keys import LoadedSigner, generate_private_pem, public_pem_of, signer_from_pem
from qgate.attest.statement import sign_statement
from qgate.errors import BadInput, VerificationFailed

ENVELOPE = {"payload": "e30=", "payloadType": "application/vnd.in-toto+json", "signatures": []}
LINE = json.dumps(ENVELOPE).encode()


def _as_before(data: bytes, origin: str = "report") -> dict[str, Any]:
    """read_envelope as it read every file before its one-line fast path."""
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
    if not isinstance(envelope, dict) or not {"payload", "payloadType", "signatures"} <= set(
        envelope
    ):
        raise BadInput(f"{origin}: not a DSSE envelope (needs payload, payloadType, signatures)")
    return envelope


def _outcome(read: Any, data: bytes) -> str:
    try:
        return repr(read(data))  # NaN is not equal to itself, its repr is
    except BadInput as exc:
        return exc.message


@pytest.mark.parametrize(
    "data",
    [
        LINE,
        LINE + b"\n",
        LINE + b"\r\n\n  \n",
        b"  \t" + LINE + b"\n",
        b"\n\n" + LINE + b"\n",
        LINE + b"\n" + LINE[:20],  # a second line: only the first counts
        json.dumps(ENVELOPE, indent=2).encode(),  # several lines of one object: its first line
        LINE[:-1] + b', "x": NaN}',
        LINE[:-1] + b', "x": "\\ud800"}',  # a lone surrogate: json reads it, the fast path not
        b"\xef\xbb\xbf" + LINE,  # a byte order mark
        LINE[:-1] + b', "x": "\xff"}',  # not UTF-8
        "\u00a0".encode() + LINE,  # no JSON blank, but str.strip's
        LINE + "\u2028".encode(),
        LINE[: len(LINE) // 2],  # truncated
        LINE[: len(LINE) // 2] + b"\n",
        b"",
        b" \n\t",
        b"[1, 2]",
        b'{"payload": "e30="}',
        b"[" * 100_000 + b"]" * 100_000,
    ],
)
def test_an_envelope_reads_as_it_always_did(data: bytes) -> None:
    assert _outcome(read_envelope, data) == _outcome(_as_before, data)


@pytest.mark.parametrize(
    "payload",
    ["e30=", "e30", "e3 0=", "e30=\n", "e30==", "=e30", "e30=e30=", "é30=", 7, None, ["e30="]],
)
def test_the_payload_decodes_as_b64decode_validates(payload: Any) -> None:
    pem = generate_private_pem("ecdsa")
    signer = LoadedSigner(signer_from_pem(pem), public_pem_of(pem), "file")
    envelope = json.loads(sign_statement({}, signer))
    assert base64.b64decode(envelope["payload"]) == b"{}"
    try:
        ok = base64.b64decode(payload, validate=True) == b"{}"  # what check_signature used
        want = None if ok else "signature does not verify"
    except (TypeError, ValueError):  # binascii.Error included
        want = "payload is not valid base64"
    try:
        got = check_signature({**envelope, "payload": payload}, signer.public_pem)
    except VerificationFailed as exc:
        assert exc.message.startswith(str(want))
    else:
        assert want is None and got[0] == b"{}"
