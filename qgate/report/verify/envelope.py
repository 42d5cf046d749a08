"""The envelope half of `qgate verify`, shared by single and multi reports.

Readable DSSE JSON (else BadInput) -> payload type -> signature over the PAE
-> in-toto Statement of the expected predicate type -> predicate schema ->
the Statement's profile subject equals the predicate's profile_sha256 -> the
signer the predicate names is the key that verified it. What follows (the
profile, the records, every verdict) is each report kind's own.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Protocol, Self, TypeVar, cast

import pydantic_core
from pydantic import ConfigDict, ValidationError, create_model

from qgate.attest.dsse import check_signature, read_envelope
from qgate.attest.statement import CHECKPOINT_PREFIX, PAYLOAD_TYPE, PROFILE_PREFIX, STATEMENT_TYPE
from qgate.core.files import sha256_file
from qgate.errors import BadInput, VerificationFailed
from qgate.report.model import SignerInfo

__all__ = [
    "OWN_LIMITS_NOTE",
    "Opened",
    "VerifyResult",
    "check_model_dir",
    "check_profile_file",
    "fail",
    "open_payload",
    "open_signed",
    "parse_predicate",
    "read_inputs",
    "cyclic_gc_paused",
    "subject_digests",
    "verified_payload",
]

OWN_LIMITS_NOTE = (
    "limits taken from the report's own embedded profile "
    "(pass --profile FILE to gate against a profile you trust)"
)


class Signed(Protocol):
    """What every report predicate carries about its signer and profile."""

    signer: SignerInfo | None
    profile_sha256: str

    @classmethod
    def model_validate(cls, obj: Any) -> Self:
        """The predicate from its JSON form (a pydantic model's)."""
        ...


P = TypeVar("P", bound=Signed)


@dataclass
class Opened(Generic[P]):
    """A Statement whose signature verified, its predicate, and what was established."""

    statement: dict[str, Any]
    report: P
    keyid: str
    checked: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def fail(message: str) -> VerificationFailed:
    return VerificationFailed(message)


def parse_predicate(
    payload: bytes, predicate_type: str, validate: type[P] | Callable[[Any], P]
) -> tuple[dict[str, Any], P]:
    """The Statement dict and its predicate, validated by `validate`: the predicate's model, or
    a model's model_validate.

    Given the model, the payload is validated from its JSON in one pass, its predicate straight
    into the model (the Statement's `predicate` is then that model): building the dict of a
    field-scale payload first costs about a third more. Where that fails, the parse below, step
    by step, says why, in the words it always used."""
    if isinstance(validate, type):
        model = cast("type[P]", validate)
        at_once = _parsed_at_once(payload, model)
        if at_once is not None:
            _check_statement(at_once[0], predicate_type)
            return at_once
        check: Callable[[Any], P] = model.model_validate
    else:
        check = validate
    try:
        # pydantic's Rust JSON parser: about twice as fast as json.loads on 10 MB
        statement = pydantic_core.from_json(payload)
    except ValueError as exc:
        raise fail(f"payload is not JSON ({exc})") from None
    _check_statement(statement, predicate_type)
    try:
        report = check(statement.get("predicate"))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise fail(f"report schema: {where}: {first['msg']}") from None
    return statement, report


def _check_statement(statement: Any, predicate_type: str) -> None:
    """An in-toto Statement of `predicate_type` with subjects."""
    if not isinstance(statement, dict) or statement.get("_type") != STATEMENT_TYPE:
        raise fail(f"payload is not an in-toto Statement ({STATEMENT_TYPE})")
    if statement.get("predicateType") != predicate_type:
        raise fail(f"unexpected predicateType {statement.get('predicateType')!r}")
    subjects = statement.get("subject")
    if not isinstance(subjects, list) or not subjects:
        raise fail("Statement has no subjects")


@functools.cache
def _statement_of(model: type[Any]) -> type[Any]:
    """A Statement whose predicate is a `model`; its other keys are kept as parsed."""
    return create_model(
        f"{model.__name__}Statement", __config__=ConfigDict(extra="allow"), predicate=(model, ...)
    )


def _parsed_at_once(payload: bytes, model: type[P]) -> tuple[dict[str, Any], P] | None:
    """The Statement dict and its predicate from one JSON validation; None when it fails.

    JSON validation is pydantic's Python validation of the parsed JSON (the same parser as
    from_json, the same lax conversions, the last of repeated keys), in one pass."""
    try:
        statement = _statement_of(model).model_validate_json(payload)
    except ValueError:  # ValidationError included
        return None
    return {**(statement.model_extra or {}), "predicate": statement.predicate}, statement.predicate


def subject_digests(subjects: list[Any], prefix: str) -> dict[str, str]:
    """Subject name (without `prefix`) -> sha256, for the subjects whose name has the prefix."""
    out: dict[str, str] = {}
    for s in subjects:
        name = s.get("name", "") if isinstance(s, dict) else ""
        digest = s.get("digest", {}).get("sha256") if isinstance(s, dict) else None
        if isinstance(name, str) and name.startswith(prefix) and isinstance(digest, str):
            out[name[len(prefix) :]] = digest
    return out


def check_profile_file(statement: dict[str, Any], profile_sha256: str, profile: Path) -> None:
    """The given profile file is a subject of the Statement and the report's profile_sha256."""
    try:
        digest = sha256_file(profile)
    except OSError as exc:
        raise BadInput(f"cannot read profile {profile}: {exc.strerror}") from None
    if digest not in subject_digests(statement["subject"], PROFILE_PREFIX).values():
        raise fail(f"profile {profile} does not match the report's profile subject")
    if digest != profile_sha256:
        raise fail(f"profile {profile} does not match the report's profile_sha256")


def check_model_dir(statement: dict[str, Any], model_dir: Path) -> int:
    """Every checkpoint file matches its subject and no subject is missing; returns the count."""
    expected = subject_digests(statement["subject"], CHECKPOINT_PREFIX)
    if not model_dir.is_dir():
        raise BadInput(f"--model {model_dir}: not a folder")
    found = {
        p.relative_to(model_dir).as_posix(): p for p in sorted(model_dir.rglob("*")) if p.is_file()
    }
    for name, digest in sorted(expected.items()):
        path = found.get(name)
        if path is None:
            raise fail(f"checkpoint file {name} named in the report is missing from {model_dir}")
        if sha256_file(path) != digest:
            raise fail(f"checkpoint file {name} does not match its sha256 in the report")
    extra = sorted(set(found) - set(expected))
    if extra:
        raise fail(f"checkpoint file {extra[0]} is not among the report's subjects")
    return len(expected)


def read_inputs(path: Path, pubkey: Path) -> tuple[bytes, bytes]:
    """The report's and the public key's bytes; BadInput (exit 2) when one cannot be read."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise BadInput(f"cannot read {path}: {exc.strerror}") from None
    try:
        pem = pubkey.read_bytes()
    except OSError as exc:
        raise BadInput(f"cannot read public key {pubkey}: {exc.strerror}") from None
    return data, pem


def verified_payload(data: bytes, pubkey_pem: str | bytes, origin: str) -> tuple[bytes, str]:
    """The envelope's payload, once its type and signature check out, and the key's id;
    VerificationFailed (or BadInput) on the first problem."""
    envelope = read_envelope(data, origin)
    if envelope["payloadType"] != PAYLOAD_TYPE:
        raise fail(f"unknown payload type {envelope['payloadType']!r} (want {PAYLOAD_TYPE})")
    return check_signature(envelope, pubkey_pem)


def open_payload(
    payload: bytes, keyid: str, predicate_type: str, validate: type[P] | Callable[[Any], P]
) -> Opened[P]:
    """Check the Statement of a payload whose signature `keyid` verified (verified_payload)."""
    statement, report = parse_predicate(payload, predicate_type, validate)
    if list(subject_digests(statement["subject"], PROFILE_PREFIX).values()) != [
        report.profile_sha256
    ]:
        raise fail("the Statement's profile subject does not match the report's profile_sha256")
    opened = Opened(statement, report, keyid, checked=[f"signature by key {keyid}"])
    if report.signer is not None:
        if report.signer.keyid != keyid:
            raise fail("the report names a different signing key than the one that verified it")
        if report.signer.source == "local-dev":
            opened.notes.append("signed with a local development key, not a managed one")
    return opened


def open_signed(
    data: bytes,
    pubkey_pem: str | bytes,
    origin: str,
    predicate_type: str,
    validate: type[P] | Callable[[Any], P],
) -> Opened[P]:
    """Check the envelope and Statement; VerificationFailed (or BadInput) on the first problem."""
    payload, keyid = verified_payload(data, pubkey_pem, origin)
    return open_payload(payload, keyid, predicate_type, validate)


@dataclass
class VerifyResult(Generic[P]):
    """What verification of a single or a multi report established, for the CLI to print."""

    report: P
    keyid: str
    subjects: list[dict[str, Any]]
    checked: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    signed_only: list[str] = field(default_factory=list)
    """What the report states that verify cannot re-derive: it rests on the signature alone."""
    profile_given: bool = False
    """`--profile FILE` was given (set by `limits_from`)."""

    @classmethod
    def of(cls, opened: Opened[P]) -> VerifyResult[P]:
        """The result so far of a report whose envelope verified."""
        return cls(
            opened.report,
            opened.keyid,
            opened.statement["subject"],
            checked=list(opened.checked),
            notes=list(opened.notes),
        )

    def check_model(self, model_dir: Path | None) -> None:
        """With --model DIR: every checkpoint file matches its subject."""
        if model_dir is not None:
            count = check_model_dir({"subject": self.subjects}, model_dir)
            self.checked.append(f"{count} checkpoint files match their subjects")

    def limits_from(self, profile: Path | None) -> None:
        """Say whose limits gate: FILE's (checked equal to the embedded profile) or the report's."""
        if profile is None:
            self.notes.append(OWN_LIMITS_NOTE)
        else:
            self.profile_given = True
            self.checked.append(f"embedded profile equals {profile.name}; gates use its limits")


@contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for the duration (restored after).

    A large report is millions of small objects, built at once and kept to
    the end; the collections their allocation triggers walk all of them again
    and again (about a sixth of verifying 10,000 records) and free nothing.
    Reference counting still frees everything as usual.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            # What was allocated meanwhile joins the oldest generation as it is: left young,
            # the first allocation after enable() would walk all of it once more (~0.2 s of a
            # field-scale report), to free nothing.
            gc.freeze()
            gc.unfreeze()
            gc.enable()
