"""`qgate verify`: check the envelope, the subjects, and re-derive every verdict.

Order: readable JSON (else BadInput, exit 2) -> payload type -> signature over
the DSSE PAE -> Statement -> report schema -> subjects -> profile (with
`--profile`: the embedded profile must equal FILE loaded as `run` loads it,
and FILE's limits gate; see profile.py) -> checkpoint files -> each
item's correctness and each divergence value re-derived from the raw
responses and logprobs (rederive.py) -> reference provenance
(provenance.py) -> the bootstrap's size and seed (before the draw) -> every
gate verdict and perf figure recomputed with the same functions `run` used
(the perf status right after the quality verdicts it follows from, before
anything that reads it) -> overall verdict. The first
failure raises VerificationFailed (exit 1); an environment that cannot
import what verification needs raises InfrastructureError (exit 3). The
recomputation itself lives in recompute.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from qgate.core.plan import Plan
from qgate.errors import VerificationFailed
from qgate.profile import Profile
from qgate.quality.calibrate import check_stored, model_label, model_problem, stored_records
from qgate.quality.sizing import sized_as
from qgate.report.model import PREDICATE_TYPE, Report
from qgate.report.verify.attribution import check_attribution
from qgate.report.verify.cache_check import check_cache, check_life_salts
from qgate.report.verify.cluster import check_cluster
from qgate.report.verify.cross_check import check_cross_planned
from qgate.report.verify.derivation import check_derivations, signer_derivations
from qgate.report.verify.envelope import (
    VerifyResult,
    check_model_dir,
    check_profile_file,
    cyclic_gc_paused,
    fail,
    open_payload,
    parse_predicate,
    read_inputs,
    verified_payload,
)
from qgate.report.verify.floor_plan import check_floor_planned
from qgate.report.verify.item_plan import check_items_planned
from qgate.report.verify.lives import check_lives
from qgate.report.verify.machine import as_run, check_machine
from qgate.report.verify.paired_items import check_paired_items
from qgate.report.verify.pass_plan import check_passes_planned
from qgate.report.verify.perf_design import check_perf_design
from qgate.report.verify.profile import match_profile
from qgate.report.verify.provenance import check_provenance
from qgate.report.verify.recompute import (
    Recompute,
    check_bootstrap,
    check_perf_status,
    check_status_and_verdict,
    default_recompute,
    judged_of,
    recompute_envelope,
    recompute_perf,
    recompute_perf_gates,
    recompute_quality,
    recompute_warnings,
)
from qgate.report.verify.record_kinds import METADATA_LINE, raw_lines
from qgate.report.verify.rederive import (
    Rederived,
    check_questions,
    rederive_correctness,
    rederive_divergence,
)
from qgate.report.verify.reuse import check_passes
from qgate.report.verify.spec_tokens import check_spec_generated
from qgate.report.verify.statements import check_bindings

__all__ = [
    "Recompute",
    "VerifyResult",
    "check_contents",
    "check_model_dir",
    "check_profile_file",
    "check_status_and_verdict",
    "cyclic_gc_paused",
    "default_recompute",
    "parse_statement",
    "recompute_perf",
    "recompute_perf_gates",
    "recompute_quality",
    "signed_only",
    "verify_bytes",
    "verify_file",
    "verify_payload",
]


def parse_statement(payload: bytes) -> tuple[dict[str, Any], Report]:
    """The Statement dict and its validated report predicate."""
    return parse_predicate(payload, PREDICATE_TYPE, Report)


def verify_bytes(
    data: bytes,
    pubkey_pem: str | bytes,
    profile: Path | None = None,
    model_dir: Path | None = None,
    recompute: Recompute | None = None,
    origin: str = "report",
) -> VerifyResult[Report]:
    """Verify an envelope end to end; raise BadInput or VerificationFailed on the first problem."""
    with cyclic_gc_paused():
        payload, keyid = verified_payload(data, pubkey_pem, origin)
        return verify_payload(payload, keyid, profile, model_dir, recompute)


def verify_payload(
    payload: bytes,
    keyid: str,
    profile: Path | None = None,
    model_dir: Path | None = None,
    recompute: Recompute | None = None,
) -> VerifyResult[Report]:
    """verify_bytes past the envelope, for a caller that opened it already (the single or
    multi dispatch, so that a large payload is decoded once): `payload` and `keyid` are what
    envelope.verified_payload returned, the signature checked; never a payload read otherwise."""
    with cyclic_gc_paused():
        opened = open_payload(payload, keyid, PREDICATE_TYPE, Report)
        result = VerifyResult.of(opened)
        report = result.report
        try:
            prof = Profile.model_validate(report.profile)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise fail(f"embedded profile does not validate: {where}: {first['msg']}") from None
        if profile is not None:
            matched = match_profile(report.profile, profile)
            prof = matched.profile
            result.notes += matched.notes
            check_profile_file(opened.statement, report.profile_sha256, profile)
        result.limits_from(profile)
        result.check_model(model_dir)
        check_contents(report, prof, result.keyid, result, recompute)
        return result


def check_contents(
    report: Report,
    prof: Profile,
    keyid: str,
    result: VerifyResult[Report],
    recompute: Recompute | None,
    plan: Plan | None = None,
) -> None:
    """Everything but the envelope: records re-derived, every verdict and figure recomputed.

    Also what a multi report's verification runs on each candidate's embedded report (`plan`:
    the multi report's, which the candidate's report does not hold).
    """
    stored = report.quality.calibration
    problems = check_stored(stored, prof.quality.math, report.quality.runs)
    if stored is not None:
        digest = report.fingerprint.checkpoint_sha256 if report.fingerprint else None
        problem = model_problem(stored, model_label(prof.model), digest)
        problems += [problem] if problem else []
    if problems:
        raise VerificationFailed("; ".join(problems))
    if stored is not None:
        result.checked.append(f"calibration re-derived: levels {stored.chosen}")
    # the math items and sizes follow from the report's calibration records, not the local file
    # and `show` sizes them by the bound of the derivation the report was signed with
    with stored_records(stored), sized_as(signer_derivations(report).quality):
        _checked_contents(report, prof, keyid, result, recompute, plan)


def _checked_contents(
    report: Report,
    prof: Profile,
    keyid: str,
    result: VerifyResult[Report],
    recompute: Recompute | None,
    plan: Plan | None,
) -> None:
    applied = check_derivations(report)
    result.checked.append(
        f"derivations quality {applied.quality}, perf {applied.perf} applied ({applied.why})"
    )
    _rederive(report, prof, keyid, result)
    result.checked += check_bindings(report, prof)
    if line := check_paired_items(report.quality.runs):
        result.checked.append(line)
    if line := check_items_planned(report, prof):
        result.checked.append(line)
    if line := check_spec_generated(report, prof):
        result.checked.append(line)
    result.checked += check_machine(report, prof, result.signed_only)
    if cluster := check_cluster(report):
        result.checked.append(cluster)
    result.signed_only += signed_only(report)
    fns = recompute or default_recompute()
    ran = as_run(report, prof)  # the contradicted changes' gates, as run judged them
    check_bootstrap(report.perf, prof)  # before the draw: a report does not size verify's work
    judged = judged_of(report, prof, fns, judged_with=ran)  # the one judge, as run called it
    recompute_quality(report, ran, fns, judged)
    result.checked.append(f"{len(report.quality.verdicts)} quality verdicts recomputed")
    check_perf_status(report)  # before the rounds and speed gates that read it
    warnings = recompute_warnings(report, prof, judged)  # from the declared profile
    result.checked.append(f"{warnings} warnings re-derived from the profile and the records")
    if line := check_attribution(report, ran, fns):
        result.checked.append(line)
    if line := check_perf_design(report, prof, plan):
        result.checked.append(line)
    if line := check_cache(report, prof):
        result.checked.append(line)
    if line := check_life_salts(report, prof):
        result.checked.append(line)
    if line := check_lives(report, prof, judged):
        result.checked.append(line)
    scenarios = recompute_perf(report, prof, fns, judged)
    result.checked.append(f"{scenarios} perf scenarios recomputed")
    gates = recompute_perf_gates(report, prof, judged)
    result.checked.append(f"{gates} perf gates recomputed")
    if pooled := recompute_envelope(report, prof, judged):
        result.checked.append(f"{pooled} pooled envelope gate recomputed from every probe record")
    check_status_and_verdict(report, judged)
    result.checked.append(f"overall verdict {report.verdict} follows")


def signed_only(report: Report) -> list[str]:
    """The parts of a single report that rest on its signature: every raw record kind it
    holds (record_kinds.RAW; every figure derived from them is recomputed), which qgate
    signed, and the run's metadata."""
    return [
        *raw_lines(report),
        "fingerprint.qgate_revision: which qgate signed, and so which derivations' checks "
        "apply (a revision verify lists as an older signer lowers them to that revision's, for "
        "records that revision could have made)",
        METADATA_LINE,
    ]


def _rederive(report: Report, prof: Profile, keyid: str, result: VerifyResult[Report]) -> None:
    """Correctness, divergence and reference provenance from the raw records."""
    derivation = report.quality.derivation  # the signer's: check_derivations held it so
    done = Rederived(profile_given=result.profile_given, derivation=derivation)
    rederive_correctness(list(report.quality.runs), prof, done)
    result.checked.append(f"{done.items} item answers and correctness re-derived from responses")
    check_questions(list(report.quality.runs), prof, done)
    if report.quality.passes:
        n = check_passes(report, prof, done)
        result.checked.append(f"{n} reuse-pass answers re-derived from their responses")
    if line := check_passes_planned(report, prof):
        result.checked.append(line)
    if done.data_checked:
        result.checked.append(f"{done.data_checked} math items match the math set the run used")
    if done.recall_checked:
        result.checked.append(
            f"{done.recall_checked} recall items (context ladder included): ids, depths and "
            "planted codes re-derived"
        )
    if done.ladder_logprobs:
        result.checked.append(
            f"{done.ladder_logprobs} ladder answers' top-k logprobs checked (one position per "
            "generated token, normalised, at most top_k ids); bucket divergence computed from them"
        )
    if (floor := report.quality.noise_floor) is not None:
        again = Rederived(profile_given=result.profile_given, derivation=derivation)
        rederive_correctness(list(floor.runs), prof, again)
        if floor.divergence is not None:
            rederive_divergence(floor.divergence, again, required=True)
        result.checked.append(
            f"noise floor: {again.items} second answers and {again.positions} divergence "
            "positions of the reference re-derived from its responses and logprobs"
        )
    if line := check_floor_planned(report, prof):
        result.checked.append(line)
    if report.quality.divergence is not None:
        required = report.schema_version != "1"
        rederive_divergence(report.quality.divergence, done, required=required)
        planned = check_cross_planned(report.quality.divergence, prof, report.quality.derivation)
        if planned:
            result.checked.append(planned)
        if done.positions:
            result.checked.append(f"{done.positions} divergence positions re-derived from logprobs")
    if done.not_rederived:
        result.notes.append("not checked: " + "; ".join(done.not_rederived))
    line = check_provenance(report, keyid, result.notes)
    if line:
        result.checked.append(line)


def verify_file(
    path: Path,
    pubkey: Path,
    profile: Path | None = None,
    model_dir: Path | None = None,
    recompute: Recompute | None = None,
) -> VerifyResult[Report]:
    """verify_bytes for files on disk."""
    data, pem = read_inputs(path, pubkey)
    return verify_bytes(data, pem, profile, model_dir, recompute, origin=str(path))
