"""The tamper matrix: `qgate verify` on a real (synthetic) report, each forgery with its exit code.

The report is built with the team's real gate and perf functions, written by
`write_report` (redacted, signed) and verified through the CLI, as an auditor
would. Each case edits it the way someone holding the signing key could,
re-signs where that key would help, and asserts the exit code and the one
line that names the reason.
"""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from helpers.report_synthetic import PROFILE, build_report, cache_provenance, make_signer

from qgate.attest.keys import LoadedSigner
from qgate.attest.statement import Subject, profile_subject
from qgate.cli.main import main
from qgate.profile import Profile
from qgate.report.items_tree import items_root
from qgate.report.model import Report
from qgate.report.signing import sign_report
from qgate.report.verdict import overall
from qgate.report.verify.single import default_recompute
from qgate.report.writer import write_report


@dataclass
class Case:
    """A signed report on disk, its key and profile, and how to forge another."""

    tmp: Path
    signer: LoadedSigner
    pubkey: Path
    profile: Path
    subjects: list[Subject]
    envelope: Path

    def report(self) -> Report:
        """The report as signed (redacted), to edit."""
        payload = base64.b64decode(json.loads(self.envelope.read_bytes())["payload"])
        return Report.model_validate(json.loads(payload)["predicate"])

    def resign(self, report: Report, signer: LoadedSigner | None = None, root: bool = True) -> Path:
        """`report` signed again; its items root made again from its records as an insider
        with qgate's own functions would (`root`), or left as it was."""
        if root and report.items_root is not None:
            report.items_root = items_root(report.quality.runs)
        out = self.tmp / "forged.intoto.jsonl"
        out.write_bytes(sign_report(report, self.subjects, signer or self.signer))
        return out

    def verify(self, path: Path, *extra: str) -> Result:
        return CliRunner().invoke(main, ["verify", str(path), "--pubkey", str(self.pubkey), *extra])


TEN = {**PROFILE, "quality": {**PROFILE["quality"], "math": {**PROFILE["quality"]["math"]}}}
TEN["quality"]["math"]["limit"] = 10
"""The synthetic profile asking the 10 items the case's report holds."""


@pytest.fixture
def case(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Case:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    profile = tmp_path / "profile.yaml"
    profile.write_text(json.dumps(TEN))  # JSON is YAML
    report = build_report(items=10, requests=3, fns=default_recompute(), profile_json=TEN)
    report.profile_sha256 = profile_subject(profile).sha256
    signer = make_signer("ecdsa")
    pubkey = tmp_path / "key.pub.pem"
    pubkey.write_text(signer.public_pem)
    run = tmp_path / "run"
    run.mkdir()
    subjects = [profile_subject(profile)]
    written = write_report(run, report, subjects, signer, html=False, step_summary=False)
    return Case(tmp_path, signer, pubkey, profile, subjects, written.envelope)


SIDES = ("reference", "candidate")


def _reverdict(report: Report, profile: dict[str, object] | None = None) -> Report:
    """What a forger does after editing records: recompute every verdict with qgate's own gates."""
    from qgate.gates.quality import evaluate_quality

    prof = Profile.model_validate(profile or report.profile)
    q = report.quality
    q.verdicts = evaluate_quality(prof.quality, q.runs, q.divergence)
    report.perf.status = "ran" if all(v.passed for v in q.verdicts) else "skipped: gates failed"
    if report.perf.status != "ran":
        report.perf.runs, report.perf.results = [], []
    report.verdict = overall(report.all_verdicts(), report.perf.status)
    return report


def _lose_items(report: Report, ids: range | list[int]) -> None:
    """Make the candidate answer items wrong, consistently (response, answer and flag)."""
    cand = next(r for r in report.quality.runs if r.role == "candidate")
    for n in ids:
        item = cand.items[n]
        item.output, item.answer, item.correct = "The answer is 999", "999", False


def test_untouched_report_verifies_with_and_without_profile(case: Case) -> None:
    res = case.verify(case.envelope)
    assert res.exit_code == 0, res.output
    assert "VERIFIED" in res.output
    assert "note limits taken from the report's own embedded profile" in res.output
    assert "20 item answers and correctness re-derived from responses" in res.output
    assert "8 divergence positions re-derived from logprobs" in res.output
    assert "reference provenance (cache, entry " in res.output
    res = case.verify(case.envelope, "--profile", str(case.profile))
    assert res.exit_code == 0, res.output
    assert "ok  embedded profile equals profile.yaml; gates use its limits" in res.output
    assert "limits taken from the report" not in res.output


def _flip_payload_byte(case: Case) -> Path:
    env = json.loads(case.envelope.read_bytes())
    body = bytearray(base64.b64decode(env["payload"]))
    body[len(body) // 2] ^= 0x01
    env["payload"] = base64.b64encode(bytes(body)).decode()
    out = case.tmp / "flipped.jsonl"
    out.write_text(json.dumps(env))
    return out


def _foreign_key(case: Case) -> Path:
    return case.resign(case.report(), make_signer("ecdsa"))


def _edited_record(case: Case) -> Path:
    report = case.report()
    request = report.perf.runs[1].requests[1]
    assert request.first_token_ns is not None
    request.first_token_ns += 3_000_000
    return case.resign(report)


def _edited_items(case: Case) -> Path:
    report = case.report()
    _lose_items(report, range(0, 6))  # consistent edit, stale verdicts
    return case.resign(report)


def _verdict_flipped(case: Case) -> Path:
    report = case.report()
    report.verdict = "FAIL"
    return case.resign(report)


def _gate_flipped(case: Case) -> Path:
    report = case.report()
    report.quality.verdicts[0].passed = False
    return case.resign(report)


def _forged_flags(case: Case) -> Path:
    # the candidate got 6 items wrong; the forger marks them correct and recomputes honestly
    report = case.report()
    _lose_items(report, range(0, 6))
    cand = next(r for r in report.quality.runs if r.role == "candidate")
    for item in cand.items[0:6]:
        item.correct = True
    return case.resign(_reverdict(report))


def _forged_answer(case: Case) -> Path:
    report = case.report()
    _lose_items(report, range(0, 6))
    cand = next(r for r in report.quality.runs if r.role == "candidate")
    cand.items[0].answer = "1000"  # the flag still agrees with the response
    return case.resign(_reverdict(report))


def _forged_kld(case: Case) -> Path:
    report = case.report()
    assert report.quality.divergence is not None
    report.quality.divergence.sequences[0].kld[1] = 0.0
    return case.resign(_reverdict(report))


def _stripped_logprobs(case: Case) -> Path:
    report = case.report()
    assert report.quality.divergence is not None
    report.quality.divergence.sequences[1].candidate_top_logprobs = None
    return case.resign(report)


def _provenance_fresh_claim(case: Case) -> Path:
    report = case.report()
    assert report.reference_provenance is not None
    report.reference_provenance.source = "fresh"
    return case.resign(report)


def _provenance_keyid(case: Case) -> Path:
    report = case.report()
    assert report.reference_provenance is not None
    report.reference_provenance.signer_keyid = case.signer.signer.public_key.keyid
    return case.resign(report)


def _provenance_fresh_without_stage(case: Case) -> Path:
    # a consistent 'fresh' claim in every way but the stage timings
    report = case.report()
    report.reference_provenance = cache_provenance(case.signer).model_copy(
        update={"source": "fresh"}
    )
    for run in report.quality.runs:
        run.cached = False
    report.stage_timings = {"load": 0.1, "candidate": 41.0}
    return case.resign(report)


def _fresh(
    case: Case, signer: LoadedSigner | None = None, stage: float | None = 45.0, when: str = ""
) -> Report:
    """The report with a 'fresh' provenance record, consistent unless told otherwise."""
    from qgate.quality.cache_auth import provenance_of, sign_entry

    signer = signer or case.signer
    envelope = sign_entry(b"{}", "c" * 64, signer, when or "2026-11-30T02:59:00+00:00")
    report = case.report()
    report.reference_provenance = provenance_of("fresh", envelope, signer.public_pem)
    for run in report.quality.runs:
        run.cached = False
    report.stage_timings = {"load": 0.1, "candidate": 41.0}
    if stage is not None:
        report.stage_timings["reference_quality"] = stage
    return report


def test_consistent_fresh_provenance_verifies(case: Case) -> None:
    res = case.verify(case.resign(_fresh(case)))
    assert res.exit_code == 0, res.output
    assert "ok  reference provenance (fresh, entry " in res.output
    assert "another key than the report's" not in res.output


def _provenance_fresh_foreign_key(case: Case) -> Path:
    return case.resign(_fresh(case, signer=make_signer("ed25519")))


def _provenance_fresh_short_stage(case: Case) -> Path:
    return case.resign(_fresh(case, stage=1.0))  # the reference suite alone took 1.5 s


def _provenance_fresh_after_report(case: Case) -> Path:
    return case.resign(_fresh(case, when="2026-11-30T03:05:00+00:00"))


def _provenance_removed(case: Case) -> Path:
    report = case.report()
    report.reference_provenance = None
    return case.resign(report)


def _stopped(case: Case, stop: str | None, lose: int, keep: int) -> Report:
    """The candidate loses its first `lose` items and keeps `keep` of 10, as a stopped run."""
    report = case.report()
    if stop is not None:
        report.profile["quality"]["stop"] = stop
    _lose_items(report, range(lose))
    cand = next(r for r in report.quality.runs if r.role == "candidate")
    cand.planned, cand.stopped, cand.items = len(cand.items), "settled", cand.items[:keep]
    return _reverdict(report)


def _stop_while_off(case: Case) -> Path:
    return case.resign(_stopped(case, None, lose=8, keep=8))


def _stop_not_settled(case: Case) -> Path:
    return case.resign(_stopped(case, "settled", lose=2, keep=4))


def _stopped_sides_outnumber_the_plan(case: Case) -> Path:
    """Both sides stopped at 3 of 4 planned items, but on different items: 5 in all (the
    profile plans 10: the planned count is re-derived before the stop is)."""
    report = case.report()
    report.profile["quality"]["stop"] = "verdict"
    ref, cand = (next(r for r in report.quality.runs if r.role == role) for role in SIDES)
    items = list(cand.items)
    ref.items = ref.items[:3]
    cand.items = [items[0], items[3], items[4]]
    for run in (ref, cand):
        run.planned, run.stopped = 4, "settled"
    return case.resign(_reverdict(report))


def test_an_item_edited_under_the_old_items_root_is_rejected(case: Case) -> None:
    report = case.report()
    assert report.items_root is not None and report.items_root.leaves == 20
    report.quality.runs[1].items[0].output += " 7"
    res = case.verify(case.resign(report, root=False))
    assert res.exit_code == 1
    assert "error: items_root: " in res.stderr and "over 20 items stored" in res.stderr


def test_a_stop_the_records_allow_verifies(case: Case) -> None:
    # 7 of the first 8 lost (the reference got item 3 wrong too): max_drop fails whatever
    # the last two do, so with `stop: verdict` the FAIL is settled and the stop allowed
    res = case.verify(case.resign(_stopped(case, "verdict", lose=8, keep=8)))
    assert res.exit_code == 0, res.output
    assert "(verdict FAIL)" in res.output


def _attributed(case: Case) -> Report:
    """The report with an attribution whose one trial (FP8 KV alone) loses 6 items: FAIL."""
    from qgate.gates.quality import evaluate_quality
    from qgate.profile.changes import changes_of
    from qgate.report.attribution import Attribution, Trial

    report = case.report()
    prof = Profile.model_validate(report.profile)
    cand = next(r for r in report.quality.runs if r.role == "candidate").model_copy(deep=True)
    for item in cand.items[:6]:
        item.output, item.answer, item.correct = "The answer is 999", "999", False
    ref = [r for r in report.quality.runs if r.role == "reference"]
    verdicts = evaluate_quality(prof.quality, ref + [cand], report.quality.divergence)
    trial = Trial(
        name="only-kv_cache_dtype",
        changes=["args.kv_cache_dtype"],
        verdict="FAIL",
        verdicts=verdicts,
        runs=[cand],
        divergence=report.quality.divergence,
    )
    # halves first: the first half (the KV cache change) fails, a single change is minimal
    report.attribution = Attribution(
        changes=changes_of(prof),
        trials=[trial],
        minimal=["args.kv_cache_dtype"],
        complete=True,
        lives=1,
        max_lives=8,
    )
    return report


def test_an_attribution_verifies_trial_by_trial(case: Case) -> None:
    res = case.verify(case.resign(_attributed(case)))
    assert res.exit_code == 0, res.output
    assert (
        "attribution: 1 trial recomputed, the search replayed; the changes re-derived "
        "from the profile" in res.output
    )


def test_an_attribution_of_an_older_search_is_named_as_such(case: Case) -> None:
    from qgate.errors import VerificationFailed
    from qgate.report.attribution import Attribution
    from qgate.report.verify.attribution import check_attribution
    from qgate.report.verify.single import default_recompute

    report = _attributed(case)
    assert report.attribution is not None
    old = report.attribution.model_dump(mode="json")
    del old["complete"]  # what a report of the singles-first search holds
    report.attribution = Attribution.model_validate(old)
    with pytest.raises(VerificationFailed, match="made by an older qgate"):
        check_attribution(report, Profile.model_validate(report.profile), default_recompute())


def _attribution_verdict_edited(case: Case) -> Path:
    report = _attributed(case)
    assert report.attribution is not None
    report.attribution.trials[0].verdict = "PASS"
    return case.resign(report)


def _attribution_minimal_edited(case: Case) -> Path:
    report = _attributed(case)
    assert report.attribution is not None
    report.attribution.minimal = [report.attribution.changes[1].name]
    return case.resign(report)


def _attribution_completeness_edited(case: Case) -> Path:
    report = _attributed(case)
    assert report.attribution is not None
    report.attribution.complete = False
    return case.resign(report)


def _truncated(case: Case) -> Path:
    out = case.tmp / "truncated.jsonl"
    out.write_bytes(case.envelope.read_bytes()[:700])
    return out


def _empty(case: Case) -> Path:
    out = case.tmp / "empty.jsonl"
    out.write_bytes(b"")
    return out


def _junk(case: Case) -> Path:
    out = case.tmp / "junk.jsonl"
    out.write_bytes(b"\x89PNG\r\n\x1a\n not a report")
    return out


MATRIX: dict[str, tuple[Callable[[Case], Path], int, str]] = {
    "flipped byte": (_flip_payload_byte, 1, "signature does not verify"),
    "foreign key": (_foreign_key, 1, "signature does not verify"),
    "edited request record re-signed": (_edited_record, 1, "perf short: candidate summary: "),
    "edited items re-signed": (
        _edited_items,
        1,
        "passed: True stored, False re-derived",
    ),
    "verdict flipped re-signed": (_verdict_flipped, 1, "overall verdict FAIL does not follow"),
    "gate flipped re-signed": (
        _gate_flipped,
        1,
        "gate math.short.max_drop: passed: False stored, True re-derived",
    ),
    "correctness flags forged re-signed": (
        _forged_flags,
        1,
        "math.short candidate item arith-0001: stored correct=True but its response gives "
        "answer '999' against expected '3' (correct=False)",
    ),
    "answers forged re-signed": (
        _forged_answer,
        1,
        "math.short candidate item arith-0001: stored answer '1000' but its response gives '999'",
    ),
    "kld forged re-signed": (_forged_kld, 1, "divergence sequence s0 position 1: stored kld=0.0"),
    "logprobs stripped re-signed": (
        _stripped_logprobs,
        1,
        "divergence sequence s1: per-position logprobs are missing",
    ),
    "provenance claims fresh": (
        _provenance_fresh_claim,
        1,
        "reference provenance says 'fresh' but reference suite math.short is marked cached",
    ),
    "provenance key id swapped": (
        _provenance_keyid,
        1,
        "reference provenance: signer_keyid",
    ),
    "fresh without a reference stage": (
        _provenance_fresh_without_stage,
        1,
        "reference provenance says 'fresh' but the stage timings show no reference_quality",
    ),
    "fresh entry signed by another key": (
        _provenance_fresh_foreign_key,
        1,
        "reference provenance says 'fresh' but the entry was signed by another key",
    ),
    "fresh stage shorter than its suites": (
        _provenance_fresh_short_stage,
        1,
        "the stage timings show 1.000 s for 1.500 s of reference suites",
    ),
    "fresh entry newer than the report": (
        _provenance_fresh_after_report,
        1,
        "reference provenance: the fresh entry is newer than the report",
    ),
    "provenance removed": (
        _provenance_removed,
        1,
        "the report does not record where its reference results came from",
    ),
    "early stop under quality.stop off": (
        _stop_while_off,
        1,
        "quality: math.short (candidate) records an early stop but the profile's quality.stop "
        "is off",
    ),
    "stopped sides outnumber the plan": (
        _stopped_sides_outnumber_the_plan,
        1,
        "quality.runs math.short (reference).planned: 4 stored, 10 re-derived from the profile",
    ),
    "early stop the records do not settle": (
        _stop_not_settled,
        1,
        "quality: math.short (candidate) stopped at 4 of 10 items, but its records do not "
        "settle math.short.max_drop",
    ),
    "attribution trial verdict edited": (
        _attribution_verdict_edited,
        1,
        "attribution: trial only-kv_cache_dtype: verdict PASS does not follow from its gates",
    ),
    "attribution conclusion edited": (
        _attribution_minimal_edited,
        1,
        "attribution: the smallest failing set does not follow from the trials (they give "
        "args.kv_cache_dtype)",
    ),
    "attribution completeness edited": (
        _attribution_completeness_edited,
        1,
        "attribution: complete False stored, the replayed search gives True (it ran to its end)",
    ),
    "truncated": (_truncated, 2, "not a JSON DSSE envelope (truncated or corrupt?)"),
    "empty": (_empty, 2, "empty file"),
    "junk": (_junk, 2, "not a JSON DSSE envelope"),
}


@pytest.mark.parametrize("name", list(MATRIX))
def test_tamper_matrix(case: Case, name: str) -> None:
    forge, code, message = MATRIX[name]
    res = case.verify(forge(case))
    assert res.exit_code == code, res.output
    assert "VERIFIED" not in res.output
    errors = [line for line in res.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and message in errors[0], res.stderr


def test_loosened_embedded_profile_is_rejected_with_the_trusted_profile(case: Case) -> None:
    # The candidate lost three more items (drop 0.3 > the 0.25 allowed). The forger loosens
    # max_drop in the embedded profile, recomputes every verdict with qgate's own gates
    # under the loose limit (a PASS) and re-signs.
    report = case.report()
    _lose_items(report, [0, 2, 4])
    assert _reverdict(report.model_copy(deep=True)).verdict == "FAIL"
    report.profile["quality"]["math"]["max_drop"] = 0.9
    forged = case.resign(_reverdict(report))
    assert case.report().verdict == "PASS" and report.verdict == "PASS"
    alone = case.verify(forged)
    assert alone.exit_code == 0, alone.output  # the report agrees with itself...
    assert "note limits taken from the report's own embedded profile" in alone.output
    res = case.verify(forged, "--profile", str(case.profile))  # ...but not with the profile
    assert res.exit_code == 1, res.output
    assert res.stderr.strip() == (
        f"error: the report's embedded profile differs from {case.profile} at "
        "quality.math.max_drop: report has 0.9, file has 0.25"
    )


def test_profile_missing_key_and_extra_list_entry_are_named(case: Case) -> None:
    report = case.report()
    extra = dict(report.profile["perf"]["scenarios"][0], name="long")
    report.profile["perf"]["scenarios"].append(extra)
    res = case.verify(case.resign(report), "--profile", str(case.profile))
    assert res.exit_code == 1
    assert "at perf.scenarios (length): report has 2, file has 1" in res.stderr


def test_redacted_values_match_the_profile_they_came_from(case: Case) -> None:
    text = case.envelope.read_text()
    assert "hf_secretvalue123" not in text  # redacted in the report, present in the file
    assert "hf_secretvalue123" in case.profile.read_text()
    res = case.verify(case.envelope, "--profile", str(case.profile))
    assert res.exit_code == 0, res.output
    # but a redacted marker matches only what it could have hidden
    from qgate.report.verify.profile import first_difference

    assert first_difference({"a": "x-***REDACTED***"}, {"a": "x-secret"}) is None
    assert first_difference({"a": "x-***REDACTED***"}, {"a": "y-secret"}) is not None
    assert first_difference({"a": "***REDACTED***"}, {"a": 0.9}) is not None


def test_profile_with_relative_paths_moved_to_another_folder(
    case: Case, monkeypatch: pytest.MonkeyPatch
) -> None:
    from qgate.profile.load import load_profile_file

    data = json.loads(json.dumps(PROFILE))
    data["quality"]["math"]["set"] = "sets/math.jsonl"
    run_folder = case.tmp / "on-the-runner"
    run_folder.mkdir()
    (run_folder / "p.yaml").write_text(json.dumps(data))
    loaded = load_profile_file(run_folder / "p.yaml", check_files=False)  # no set file here
    assert loaded.profile.quality.math is not None
    assert loaded.profile.quality.math.set == run_folder / "sets/math.jsonl"
    report = case.report()
    report.profile = loaded.profile.model_dump(mode="json")
    report.profile_sha256 = loaded.sha256
    subjects = [profile_subject(run_folder / "p.yaml")]
    signed = case.tmp / "moved.intoto.jsonl"
    signed.write_bytes(sign_report(report, subjects, case.signer))
    auditor = case.tmp / "auditor"
    auditor.mkdir()
    (auditor / "p.yaml").write_bytes((run_folder / "p.yaml").read_bytes())
    res = case.verify(signed, "--profile", str(auditor / "p.yaml"))
    assert res.exit_code == 0, res.output
    assert f"resolved against the run's folder {run_folder}" in res.output
    # a path that differs in more than its folder is a difference
    data["quality"]["math"]["set"] = "other/math.jsonl"
    (auditor / "q.yaml").write_text(json.dumps(data))
    res = case.verify(signed, "--profile", str(auditor / "q.yaml"))
    assert res.exit_code == 1
    assert "at quality.math.set" in res.stderr


def test_invalid_profile_file_is_bad_input(case: Case) -> None:
    bad = case.tmp / "bad.yaml"
    bad.write_text("name: x\nquality: {math: {max_drop: -1}}\n")
    res = case.verify(case.envelope, "--profile", str(bad))
    assert res.exit_code == 2
    assert "invalid profile" in res.stderr


def test_schema_1_report_is_still_readable(case: Case) -> None:
    # what qgate wrote before schema 2: no provenance, no divergence logprobs
    report = case.report()
    report.schema_version = "1"
    report.reference_provenance = None
    assert report.quality.divergence is not None
    for seq in report.quality.divergence.sequences:
        seq.reference_top_ids = seq.reference_top_logprobs = None
        seq.candidate_top_ids = seq.candidate_top_logprobs = None
    data = json.loads(report.model_dump_json())
    data.pop("reference_provenance")
    for seq in data["quality"]["divergence"]["sequences"]:
        for key in ("reference_top_ids", "reference_top_logprobs"):
            seq.pop(key)
        for key in ("candidate_top_ids", "candidate_top_logprobs"):
            seq.pop(key)
    res = case.verify(case.resign(Report.model_validate(data)))
    assert res.exit_code == 0, res.output
    assert "note schema 1 report: no reference provenance recorded" in res.output
    assert "divergence: 2 sequences predate stored logprobs" in res.output
    assert "20 item answers and correctness re-derived" in res.output
    # and forged flags are caught in old reports too
    cand = next(r for r in data["quality"]["runs"] if r["role"] == "candidate")
    cand["items"][0]["output"] = "The answer is 999"
    res = case.verify(case.resign(Report.model_validate(data)))
    assert res.exit_code == 1 and "item arith-0001" in res.stderr


def test_unknown_schema_version_is_named(case: Case) -> None:
    from qgate.attest.statement import sign_statement
    from qgate.report.signing import build_statement, with_signer

    statement = build_statement(with_signer(case.report(), case.signer), case.subjects)
    statement["predicate"]["schema_version"] = "3"
    forged = case.tmp / "v3.jsonl"
    forged.write_bytes(sign_statement(statement, case.signer))
    res = case.verify(forged)
    assert res.exit_code == 1
    assert "report schema: schema_version" in res.stderr


@pytest.mark.parametrize("module", ["qgate.gates.quality", "qgate.quality.extract"])
def test_import_failure_inside_verify_is_exit_3(
    case: Case, monkeypatch: pytest.MonkeyPatch, module: str
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # import raises ImportError
    res = case.verify(case.envelope)
    assert res.exit_code == 3, res.output
    assert "error: cannot re" in res.stderr


def test_missing_securesystemslib_is_exit_3(case: Case, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "securesystemslib.signer", None)
    res = case.verify(case.envelope)
    assert res.exit_code == 3, res.output
    assert "error: cannot check signatures" in res.stderr
