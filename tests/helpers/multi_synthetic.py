"""Synthetic multi-candidate reports from the synthetic single reports of report_synthetic."""

from __future__ import annotations

import copy
from typing import Any

from helpers.report_synthetic import PROFILE, build_report

from qgate.attest.keys import LoadedSigner
from qgate.attest.statement import Subject, sign_statement
from qgate.profile import Profile
from qgate.profile.multi import expand_json
from qgate.report.assemble import build_multi_report
from qgate.report.multi_model import CandidateEntry, MultiReport
from qgate.report.signing import build_statement as multi_statement
from qgate.report.signing import with_signer as with_multi_signer

MULTI_PROFILE: dict[str, Any] = {
    **{k: v for k, v in PROFILE.items() if k != "candidate"},
    "candidates": {
        "fp8kv": {**PROFILE["candidate"], "required": True, "description": "FP8 KV cache"},
        "policy": {"args": {"max_num_seqs": 2}, "required": False},
    },
}


def multi_json() -> dict[str, Any]:
    """The multi profile's JSON form as a run embeds it (defaults filled in)."""
    from qgate.profile.multi import multi_from_json

    return multi_from_json(copy.deepcopy(MULTI_PROFILE)).to_json()


FAILING = frozenset({0, 1, 2, 4, 5, 6})
"""Candidate misses that fail the math gate (7/8 on the reference, 2/8 here)."""


def entry(
    name: str, required: bool, cand_wrong: frozenset[int] = frozenset({1}), error: str | None = None
) -> CandidateEntry:
    if error is not None:
        return CandidateEntry(name=name, required=required, error=error)
    status = "skipped: gates failed" if cand_wrong == FAILING else "ran"
    sub = expand_json(multi_json())[name]
    rep = build_report(cand_wrong=cand_wrong, perf_status=status, profile_json=sub)
    rep.profile = Profile.model_validate(sub).model_dump(mode="json")
    return CandidateEntry(name=name, required=required, report=rep)


def build_multi(
    fp8_wrong: frozenset[int] = frozenset({1}),
    policy_wrong: frozenset[int] = frozenset({1}),
    policy_error: str | None = None,
) -> MultiReport:
    """Two candidates: fp8kv (required) and policy (optional); `*_wrong`: candidate misses."""
    entries = [entry("fp8kv", True, fp8_wrong), entry("policy", False, policy_wrong, policy_error)]
    first = entries[0].report
    assert first is not None
    return build_multi_report(
        profile=multi_json(),
        profile_sha256=first.profile_sha256,
        fingerprint=first.fingerprint,
        candidates=entries,
        stage_timings={"load": 0.1, "reference_quality": 3.0},
    )


def subjects(report: MultiReport) -> list[Subject]:
    return [Subject(name="profile/multi.yaml", sha256=report.profile_sha256)]


def sign_multi(report: MultiReport, signer: LoadedSigner) -> bytes:
    signed = with_multi_signer(report, signer)
    return sign_statement(multi_statement(signed, subjects(report)), signer)
