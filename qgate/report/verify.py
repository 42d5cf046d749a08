"""`qgate verify`: check the envelope, the subjects, and re-derive every verdict.

Order: readable JSON (else BadInput, exit 2) -> payload type -> signature over
the DSSE PAE -> Statement -> report schema -> subjects -> profile (with
`--profile`: the embedded profile must equal FILE loaded as `run` loads it,
and FILE's limits gate; see verify_profile.py) -> checkpoint files -> each
item's correctness and each divergence value re-derived from the raw
responses and logprobs (rederive.py) -> reference provenance
(verify_provenance.py) -> every gate verdict and perf figure recomputed with
the same functions `run` used -> perf status and overall verdict. The first
failure raises VerificationFailed (exit 1); an environment that cannot
import what verification needs raises InfrastructureError (exit 3).
"""

from __future__ import annotations

import gc
import json
import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pydantic_core
from pydantic import ValidationError

from qgate.errors import BadInput, InfrastructureError, VerificationFailed
from qgate.files import sha256_file
from qgate.perf.gates import report_gates
from qgate.perf.records import ScenarioRun
from qgate.profile import Profile
from qgate.profile_perf import is_preview
from qgate.quality.records import DivergenceRun, SuiteRun, Verdict
from qgate.report.dsse import check_signature, read_envelope
from qgate.report.model import PERF_DERIVATION, PREDICATE_TYPE, Report
from qgate.report.signing import CHECKPOINT_PREFIX, PAYLOAD_TYPE, PROFILE_PREFIX, STATEMENT_TYPE
from qgate.report.verdict import overall

EvaluateQuality = Callable[[Any, list[SuiteRun], DivergenceRun | None], list[Verdict]]
Summarize = Callable[[ScenarioRun, Any], Any]
Compare = Callable[..., Any]
# scenario_verdicts(profile.perf, candidate_run): the PerfSpec holds max_error_rate
ScenarioVerdicts = Callable[[Any, ScenarioRun], list[Verdict]]


@dataclass(frozen=True)
class Recompute:
    """The pure functions `run` used; verify calls the very same ones."""

    evaluate_quality: EvaluateQuality
    summarize: Summarize
    compare: Compare
    scenario_verdicts: ScenarioVerdicts


def default_recompute() -> Recompute:
    """The team's gate and perf functions, imported on demand."""
    try:
        from qgate.perf.checks import scenario_verdicts
        from qgate.perf.compare import compare
        from qgate.perf.metrics import summarize
        from qgate.quality.gates import evaluate_quality
    except ImportError as exc:
        # the environment, not the report: exit 3, never 1
        raise InfrastructureError(f"cannot recompute verdicts: {exc}") from None
    return Recompute(evaluate_quality, summarize, compare, scenario_verdicts)


@dataclass
class VerifyResult:
    """What verification established, for the CLI to print."""

    report: Report
    keyid: str
    subjects: list[dict[str, Any]]
    checked: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _fail(message: str) -> VerificationFailed:
    return VerificationFailed(message)


def parse_statement(payload: bytes) -> tuple[dict[str, Any], Report]:
    """The Statement dict and its validated report predicate."""
    try:
        # pydantic's Rust JSON parser: about twice as fast as json.loads on 10 MB
        statement = pydantic_core.from_json(payload)
    except ValueError as exc:
        raise _fail(f"payload is not JSON ({exc})") from None
    if not isinstance(statement, dict) or statement.get("_type") != STATEMENT_TYPE:
        raise _fail(f"payload is not an in-toto Statement ({STATEMENT_TYPE})")
    if statement.get("predicateType") != PREDICATE_TYPE:
        raise _fail(f"unexpected predicateType {statement.get('predicateType')!r}")
    subjects = statement.get("subject")
    if not isinstance(subjects, list) or not subjects:
        raise _fail("Statement has no subjects")
    try:
        report = Report.model_validate(statement.get("predicate"))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise _fail(f"report schema: {where}: {first['msg']}") from None
    return statement, report


def _subject_digests(subjects: list[Any], prefix: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for s in subjects:
        name = s.get("name", "") if isinstance(s, dict) else ""
        digest = s.get("digest", {}).get("sha256") if isinstance(s, dict) else None
        if name.startswith(prefix) and isinstance(digest, str):
            out[name[len(prefix) :]] = digest
    return out


def check_profile_file(statement: dict[str, Any], report: Report, profile: Path) -> None:
    """The given profile file is a subject of the Statement and the report's profile_sha256."""
    try:
        digest = sha256_file(profile)
    except OSError as exc:
        raise BadInput(f"cannot read profile {profile}: {exc.strerror}") from None
    if digest not in _subject_digests(statement["subject"], PROFILE_PREFIX).values():
        raise _fail(f"profile {profile} does not match the report's profile subject")
    if digest != report.profile_sha256:
        raise _fail(f"profile {profile} does not match the report's profile_sha256")


def check_model_dir(statement: dict[str, Any], model_dir: Path) -> int:
    """Every checkpoint file matches its subject and no subject is missing; returns the count."""
    expected = _subject_digests(statement["subject"], CHECKPOINT_PREFIX)
    if not model_dir.is_dir():
        raise BadInput(f"--model {model_dir}: not a folder")
    found = {
        p.relative_to(model_dir).as_posix(): p for p in sorted(model_dir.rglob("*")) if p.is_file()
    }
    for name, digest in sorted(expected.items()):
        path = found.get(name)
        if path is None:
            raise _fail(f"checkpoint file {name} named in the report is missing from {model_dir}")
        if sha256_file(path) != digest:
            raise _fail(f"checkpoint file {name} does not match its sha256 in the report")
    extra = sorted(set(found) - set(expected))
    if extra:
        raise _fail(f"checkpoint file {extra[0]} is not among the report's subjects")
    return len(expected)


def _dump(value: Any) -> Any:
    # the same JSON form the signer wrote (NaN/inf as null), so equal data compares equal
    return json.loads(pydantic_core.to_json(value, inf_nan_mode="null"))


# Recomputed floats may differ from the stored ones in the last bits when the same formula is
# evaluated in another order (a numerically equivalent refactor, another numpy); any edit of a
# figure moves it by far more than this.
_REL_TOL = 1e-9
_ABS_TOL = 1e-12


def _same(stored: Any, recomputed: Any) -> bool:
    """JSON values equal, floats up to a relative 1e-9 (booleans, strings, ints exactly)."""
    if isinstance(stored, bool) or isinstance(recomputed, bool):
        return stored is recomputed
    if isinstance(stored, float) or isinstance(recomputed, float):
        if not isinstance(stored, int | float) or not isinstance(recomputed, int | float):
            return False
        return math.isclose(stored, recomputed, rel_tol=_REL_TOL, abs_tol=_ABS_TOL)
    if isinstance(stored, dict) and isinstance(recomputed, dict):
        return stored.keys() == recomputed.keys() and all(
            _same(v, recomputed[k]) for k, v in stored.items()
        )
    if isinstance(stored, list) and isinstance(recomputed, list):
        return len(stored) == len(recomputed) and all(
            _same(a, b) for a, b in zip(stored, recomputed, strict=True)
        )
    return bool(stored == recomputed)


def _covers(stored: Any, recomputed: Any) -> bool:
    """Every figure a report of an older derivation stores equals its recomputation.

    Newer qgate derives more figures from the same records (more keys, more
    comparison rows, intervals on throughput ratios); those the older report
    lacks are not held against it. Comparison rows are matched by metric.
    """
    if isinstance(stored, dict) and isinstance(recomputed, dict):
        if stored.get("resamples") == 0 and stored.get("ci_low") is stored.get("ci_high") is None:
            # a ratio stored without an interval (derivation 1 gave throughput none)
            ignored = ("ci_low", "ci_high", "resamples", "seed")
            stored = {k: v for k, v in stored.items() if k not in ignored}
        return all(k in recomputed and _covers(v, recomputed[k]) for k, v in stored.items())
    if isinstance(stored, list) and isinstance(recomputed, list):
        if all(isinstance(x, dict) and "metric" in x for x in stored + recomputed):
            by_metric = {x["metric"]: x for x in recomputed}
            return len(by_metric) == len(recomputed) and all(
                x["metric"] in by_metric and _covers(x, by_metric[x["metric"]]) for x in stored
            )
        return len(stored) == len(recomputed) and all(
            _covers(a, b) for a, b in zip(stored, recomputed, strict=True)
        )
    return _same(stored, recomputed)


def _first_verdict_difference(stored: Sequence[Verdict], recomputed: Sequence[Verdict]) -> str:
    by_gate = {v.gate: v for v in recomputed}
    for v in stored:
        r = by_gate.get(v.gate)
        if r is None:
            return f"gate {v.gate} is not produced by the profile's policy"
        if r != v:
            return (
                f"gate {v.gate}: stored passed={v.passed} observed={v.observed} but "
                f"records give passed={r.passed} observed={r.observed}"
            )
    missing = [r.gate for r in recomputed if r.gate not in {v.gate for v in stored}]
    if missing:
        return f"gate {missing[0]} is missing from the report"
    return "gate verdicts are out of order"


def recompute_quality(report: Report, profile: Profile, fns: Recompute) -> None:
    """The stored quality verdicts equal evaluate_quality over the stored records."""
    from qgate.runtime.scales import kv_scale_verdicts

    recomputed = list(
        fns.evaluate_quality(profile.quality, list(report.quality.runs), report.quality.divergence)
    )
    recomputed += kv_scale_verdicts(profile.engine.uncalibrated_kv_scales, report.effective_configs)
    if not _same(_dump(report.quality.verdicts), _dump(recomputed)):
        raise _fail(_first_verdict_difference(report.quality.verdicts, recomputed))


def _scenario_spec(profile: Profile, name: str) -> None:
    if profile.perf is None:
        raise _fail(f"perf scenario {name} but the profile has no perf section")
    base = name.split("@", 1)[0]
    for spec in profile.perf.scenarios:
        if spec.name == base:
            return
    raise _fail(f"perf scenario {name} is not in the profile")


def recompute_perf(report: Report, profile: Profile, fns: Recompute) -> int:
    """Every stored perf summary, comparison and check equals its recomputation."""
    perf = report.perf
    runs = {(r.scenario, r.role): r for r in perf.runs}
    if len(runs) != len(perf.runs):
        raise _fail("perf: two runs share a scenario name and role")
    results = {r.scenario: r for r in perf.results}
    run_names = {s for s, _ in runs}
    if set(results) != run_names:
        odd = sorted(set(results) ^ run_names)[0]
        raise _fail(f"perf: scenario {odd} has records without results or results without records")
    perf_spec = profile.perf
    slo = perf_spec.slo if perf_spec else None
    if perf.derivation > PERF_DERIVATION:
        raise _fail(f"perf figures of derivation {perf.derivation}: made by a newer qgate "
                    f"(this one derives version {PERF_DERIVATION}); verify it with that one")
    same = _same if perf.derivation == PERF_DERIVATION else _covers
    for name, result in results.items():
        _scenario_spec(profile, name)
        ref, cand = runs.get((name, "reference")), runs.get((name, "candidate"))
        pairs = (("reference", ref, result.reference), ("candidate", cand, result.candidate))
        for role, run, stored in pairs:
            got = _dump(fns.summarize(run, slo)) if run is not None else None
            if not same(stored, got):
                raise _fail(f"perf {name}: {role} summary does not follow from its request records")
        if ref is not None and cand is not None:
            got_cmp = _dump(
                fns.compare(ref, cand, resamples=perf.bootstrap_resamples, seed=perf.bootstrap_seed)
            )
        else:
            got_cmp = []
        if not same(result.comparisons, got_cmp):
            raise _fail(f"perf {name}: comparisons do not follow from the request records")
        got_verdicts = list(fns.scenario_verdicts(perf_spec, cand)) if cand is not None else []
        if not _same(_dump(result.verdicts), _dump(got_verdicts)):
            raise _fail(f"perf {name}: " + _first_verdict_difference(result.verdicts, got_verdicts))
    return len(results)


def check_status_and_verdict(report: Report, preview: bool = False) -> None:
    """Perf status agrees with the quality gates; the overall verdict follows from both."""
    quality_ok = all(v.passed for v in report.quality.verdicts)
    status = report.perf.status
    if status == "ran" and not quality_ok:
        raise _fail("perf status 'ran' although a quality gate failed (should be 'ungated')")
    if status == "skipped: gates failed" and quality_ok:
        raise _fail("perf status 'skipped: gates failed' although every quality gate passed")
    if status.startswith("skipped") and (report.perf.runs or report.perf.results):
        raise _fail(f"perf status {status!r} but the report holds perf records")
    expected = overall(report.all_verdicts(), status, preview)
    if report.verdict != expected:
        raise _fail(f"overall verdict {report.verdict} does not follow from the gates ({expected})")


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
            gc.enable()


def verify_bytes(
    data: bytes,
    pubkey_pem: str | bytes,
    profile: Path | None = None,
    model_dir: Path | None = None,
    recompute: Recompute | None = None,
    origin: str = "report",
) -> VerifyResult:
    """Verify an envelope end to end; raise BadInput or VerificationFailed on the first problem."""
    with cyclic_gc_paused():
        return _verify(data, pubkey_pem, profile, model_dir, recompute, origin)


def _verify(
    data: bytes,
    pubkey_pem: str | bytes,
    profile: Path | None,
    model_dir: Path | None,
    recompute: Recompute | None,
    origin: str,
) -> VerifyResult:
    envelope = read_envelope(data, origin)
    if envelope["payloadType"] != PAYLOAD_TYPE:
        raise _fail(f"unknown payload type {envelope['payloadType']!r} (want {PAYLOAD_TYPE})")
    payload, keyid = check_signature(envelope, pubkey_pem)
    statement, report = parse_statement(payload)
    profile_digests = list(_subject_digests(statement["subject"], PROFILE_PREFIX).values())
    if profile_digests != [report.profile_sha256]:
        raise _fail("the Statement's profile subject does not match the report's profile_sha256")
    result = VerifyResult(report=report, keyid=keyid, subjects=statement["subject"])
    result.checked.append(f"signature by key {keyid}")
    if report.signer is not None:
        if report.signer.keyid != keyid:
            raise _fail("the report names a different signing key than the one that verified it")
        if report.signer.source == "local-dev":
            result.notes.append("signed with a local development key, not a managed one")
    try:
        prof = Profile.model_validate(report.profile)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise _fail(f"embedded profile does not validate: {where}: {first['msg']}") from None
    if profile is not None:
        from qgate.report.verify_profile import match_profile

        matched = match_profile(report.profile, profile)
        prof = matched.profile
        result.notes += matched.notes
        check_profile_file(statement, report, profile)
        result.checked.append(f"embedded profile equals {profile.name}; gates use its limits")
    else:
        result.notes.append(
            "limits taken from the report's own embedded profile "
            "(pass --profile FILE to gate against a profile you trust)"
        )
    if model_dir is not None:
        count = check_model_dir(statement, model_dir)
        result.checked.append(f"{count} checkpoint files match their subjects")
    _rederive(report, prof, keyid, result)
    fns = recompute or default_recompute()
    recompute_quality(report, prof, fns)
    result.checked.append(f"{len(report.quality.verdicts)} quality verdicts recomputed")
    scenarios = recompute_perf(report, prof, fns)
    result.checked.append(f"{scenarios} perf scenarios recomputed")
    gates = report_gates(prof.perf, report.perf.status, report.perf.results)
    if not _same(_dump(report.perf.gates), _dump(gates)):
        raise _fail("perf gates: " + _first_verdict_difference(report.perf.gates, gates))
    result.checked.append(f"{len(gates)} perf gates recomputed")
    check_status_and_verdict(report, is_preview(prof))
    result.checked.append(f"overall verdict {report.verdict} follows")
    return result


def _rederive(report: Report, prof: Profile, keyid: str, result: VerifyResult) -> None:
    """Correctness, divergence and reference provenance from the raw records."""
    from qgate.report.rederive import (
        Rederived,
        check_questions,
        rederive_correctness,
        rederive_divergence,
    )
    from qgate.report.verify_provenance import check_provenance

    done = Rederived()
    rederive_correctness(list(report.quality.runs), prof, done)
    result.checked.append(f"{done.items} item answers and correctness re-derived from responses")
    check_questions(list(report.quality.runs), prof, done)
    if done.data_checked:
        result.checked.append(f"{done.data_checked} math items match the math set the run used")
    if report.quality.divergence is not None:
        required = report.schema_version != "1"
        rederive_divergence(report.quality.divergence, done, required=required)
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
) -> VerifyResult:
    """verify_bytes for files on disk (what `qgate verify` calls)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise BadInput(f"cannot read {path}: {exc.strerror}") from None
    try:
        pem = pubkey.read_bytes()
    except OSError as exc:
        raise BadInput(f"cannot read public key {pubkey}: {exc.strerror}") from None
    return verify_bytes(data, pem, profile, model_dir, recompute, origin=str(path))
