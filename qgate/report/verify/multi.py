"""`qgate verify` of a multi-candidate report, and the dispatch on the predicate type.

A multi report is checked like a single one, once for the envelope and
once per candidate for the rest: signature -> Statement and schema ->
profile subject -> the embedded multi profile (with `--profile FILE`: it must
equal FILE loaded as `run` loads it, and FILE's limits gate) -> checkpoint
files -> candidate names, order and `required` as the profile says -> each
candidate's embedded report is the profile's expansion for that candidate
and passes every check of a single report but the envelope
(verify.check_contents) -> the side-by-side table and the overall verdict
re-derived. The first failure raises VerificationFailed (exit 1).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from qgate.errors import BadInput
from qgate.profile import Profile
from qgate.profile.detect import DropRule
from qgate.profile.load_multi import load_multi_file
from qgate.profile.multi import MultiProfile, expand_json, multi_from_json
from qgate.report.model import Report
from qgate.report.multi_model import MULTI_PREDICATE_TYPE, MultiReport
from qgate.report.multi_table import multi_verdict, table
from qgate.report.verify.compare_values import describe, dump, same_value
from qgate.report.verify.envelope import (
    OWN_LIMITS_NOTE,
    VerifyResult,
    check_profile_file,
    cyclic_gc_paused,
    fail,
    open_payload,
    parse_predicate,
    read_inputs,
    verified_payload,
)
from qgate.report.verify.profile import as_the_run_read_it, first_difference
from qgate.report.verify.single import Recompute, check_contents, verify_payload
from qgate.report.verify.statements import check_statements, read_key

__all__ = [
    "MultiVerifyResult",
    "is_multi_payload",
    "parse_multi_statement",
    "verify_any_file",
    "verify_multi_bytes",
    "verify_multi_payload",
]

_PREDICATE = re.compile(rb'"predicateType"\s*:\s*"([^"\\]*)"')


MultiVerifyResult = VerifyResult[MultiReport]
"""What verification of a multi report established (the single report's result type)."""


def is_multi_payload(payload: bytes) -> bool:
    """Does the Statement name the multi predicate type? (A guess; the parse decides.)"""
    match = _PREDICATE.search(payload)
    return match is not None and match.group(1).decode() == MULTI_PREDICATE_TYPE


def parse_multi_statement(payload: bytes) -> tuple[dict[str, Any], MultiReport]:
    """The Statement dict and its validated multi report predicate."""
    return parse_predicate(payload, MULTI_PREDICATE_TYPE, MultiReport)


def _normal(data: dict[str, Any]) -> dict[str, Any]:
    try:
        out: dict[str, Any] = Profile.model_validate(data).model_dump(mode="json")
    except ValidationError:
        return data
    return out


def _profile(
    report: MultiReport, statement: dict[str, Any], file: Path | None, result: MultiVerifyResult
) -> MultiProfile:
    """The multi profile whose limits gate: the embedded one, or FILE when it equals it."""
    try:
        embedded = multi_from_json(report.profile)
    except (ValidationError, ValueError) as exc:
        raise fail(f"embedded multi profile does not validate: {exc}") from None
    if file is None:
        result.limits_from(None)
        return embedded
    loaded, before = as_the_run_read_it(lambda rule: _match(embedded, file, rule), file)
    result.notes += before
    check_profile_file(statement, report.profile_sha256, file)
    result.limits_from(file)
    return loaded


def _match(embedded: MultiProfile, file: Path, rule: DropRule | None) -> MultiProfile:
    loaded = load_multi_file(file, check_files=False, rule=rule)
    diff = first_difference(embedded.to_json(), loaded.multi.to_json())
    if diff is not None:
        where, was, now = diff
        raise fail(
            f"the report's embedded profile differs from {file} at {where}: "
            f"report has {was!r:.60}, file has {now!r:.60}"
        )
    return loaded.multi


def _candidates(
    report: MultiReport,
    multi: MultiProfile,
    keyid: str,
    result: MultiVerifyResult,
    recompute: Recompute | None,
) -> None:
    names = [c.name for c in report.candidates]
    if names != [c.name for c in multi.candidates]:
        raise fail(f"candidates {names} are not the profile's {[c.name for c in multi.candidates]}")
    expanded = expand_json(report.profile)
    for entry, cand in zip(report.candidates, multi.candidates, strict=True):
        where = f"candidate {entry.name}"
        if entry.required != cand.required:
            raise fail(f"{where}: required={entry.required} but the profile says {cand.required}")
        if entry.report is None:
            if not entry.error:
                raise fail(f"{where}: neither a report nor the error that prevented one")
            result.notes.append(f"{where}: ERROR {entry.error}")
            continue
        if entry.error is not None:
            raise fail(f"{where}: has a report and an error")
        rep = entry.report
        diff = first_difference(_normal(rep.profile), _normal(expanded[entry.name]))
        if diff is not None:
            raise fail(f"{where}: its report's profile differs from the multi profile at {diff[0]}")
        if rep.profile_sha256 != report.profile_sha256 or rep.fingerprint != report.fingerprint:
            raise fail(f"{where}: its report names another profile file or machine")
        sub = VerifyResult[Report](
            report=rep, keyid=keyid, subjects=[], profile_given=result.profile_given
        )
        check_contents(rep, cand.profile, keyid, sub, recompute, report.plan)
        result.checked += [f"{entry.name}: {line}" for line in sub.checked]
        result.notes += [f"{entry.name}: {line}" for line in sub.notes if line != OWN_LIMITS_NOTE]
        # the same kinds of records in every candidate's report: each named once
        result.signed_only = list(dict.fromkeys(result.signed_only + sub.signed_only))


def _derived(report: MultiReport, result: MultiVerifyResult) -> None:
    rows = table(report.candidates)
    for stored, got in zip(report.table, rows, strict=False):
        if not same_value(dump(stored), dump(got)):
            raise fail(describe(f"table row {stored.candidate}", dump(stored), dump(got)))
    if len(report.table) != len(rows):
        raise fail("the table does not have one row per candidate")
    verdict, optional = multi_verdict(report.candidates)
    if report.verdict != verdict:
        raise fail(
            f"overall verdict {report.verdict} does not follow from the candidates ({verdict})"
        )
    if report.optional_failures != optional:
        raise fail("the list of failed optional candidates does not follow from the candidates")
    result.checked.append(f"table of {len(rows)} candidates and overall verdict {verdict} follow")


def verify_multi_bytes(
    data: bytes,
    pubkey_pem: str | bytes,
    profile: Path | None = None,
    model_dir: Path | None = None,
    recompute: Recompute | None = None,
    origin: str = "report",
) -> MultiVerifyResult:
    """Verify a multi report end to end; BadInput or VerificationFailed on the first problem."""
    with cyclic_gc_paused():
        payload, keyid = verified_payload(data, pubkey_pem, origin)
        return verify_multi_payload(payload, keyid, profile, model_dir, recompute)


def verify_multi_payload(
    payload: bytes,
    keyid: str,
    profile: Path | None = None,
    model_dir: Path | None = None,
    recompute: Recompute | None = None,
) -> MultiVerifyResult:
    """verify_multi_bytes past the envelope: `payload` and `keyid` as envelope.verified_payload
    returned them (single.verify_payload's counterpart)."""
    with cyclic_gc_paused():
        opened = open_payload(payload, keyid, MULTI_PREDICATE_TYPE, MultiReport)
        result = VerifyResult.of(opened)
        multi = _profile(result.report, opened.statement, profile, result)
        result.check_model(model_dir)
        _candidates(result.report, multi, result.keyid, result, recompute)
        _derived(result.report, result)
        result.signed_only.append("the multi report's plan, stage_timings, starts and provenance")
        return result


def verify_any_file(
    path: Path,
    pubkey: Path,
    profile: Path | None = None,
    model_dir: Path | None = None,
    recompute: Recompute | None = None,
    preregistration: Path | None = None,
    preregistration_pubkey: Path | None = None,
) -> VerifyResult[Report] | MultiVerifyResult:
    """Verify a single or a multi report, by its predicate type (what `qgate verify` calls);
    a single report's statements too: the pre-registration (`preregistration`, else the one
    beside it) and the result statement beside it.

    The envelope is read and its signature checked once, before the dispatch: a field-scale
    report's payload is tens of MB, and decoding it twice cost about a tenth of verify."""
    data, pem = read_inputs(path, pubkey)
    with cyclic_gc_paused():
        payload, keyid = verified_payload(data, pem, str(path))
        if is_multi_payload(payload):
            if preregistration is not None:
                raise BadInput("--preregistration: a multi report binds none")
            return verify_multi_payload(payload, keyid, profile, model_dir, recompute)
        result = verify_payload(payload, keyid, profile, model_dir, recompute)
    other = read_key(preregistration_pubkey) if preregistration_pubkey else None
    check_statements(path, data, result, pem, preregistration, other)
    return result
