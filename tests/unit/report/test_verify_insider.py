"""Insider edits to what verify once took on the signature alone: calibration records, the math
set's digest with --profile, the bootstrap's resamples and seed, recall ids and depths (issue 43).
Each is rejected naming the field and both values."""

from __future__ import annotations

import pytest
from helpers.report_synthetic import FAKES, PROFILE, build_report

from qgate.errors import VerificationFailed
from qgate.profile import Calibration, Profile, RecallSuite
from qgate.quality import calibrate as cal
from qgate.quality.data_recall import planted
from qgate.quality.records import ItemRecord, SuiteRun
from qgate.report.verify.recompute import recompute_perf
from qgate.report.verify.rederive import Rederived, check_questions


def _calibration() -> cal.CalibrationResult:
    items = [
        cal.CalibrationItem(id=f"L{lv}-{k:04d}", reference=k <= acc, candidate=k <= acc)
        for lv, acc in ((3, 10), (8, 5))
        for k in range(1, 11)
    ]
    data = cal.CalibrationFile(
        calibration_version=cal.CALIBRATION_VERSION,
        source="prior",
        suite="math.short",
        model="smollm2",
        model_sha256="a" * 64,
        engine="vllm",
        engine_version="0.32.0",
        items=items,
    )
    digest = cal.sha256_bytes(cal.canonical_bytes(data))
    setting = Calibration(records="x.json")  # type: ignore[arg-type]
    return cal.calibrate(data, digest, setting, [3, 8])


def test_calibration_records_sha256_is_rederived() -> None:
    setting = Calibration(records="x.json")  # type: ignore[arg-type]
    stored = _calibration()
    assert cal.rederive(stored, setting) == []
    # an item flipped with the decision it implies kept: only the digest can tell
    edited = stored.model_copy(update={"items": [*stored.items[:-1]]})
    problems = cal.rederive(edited, setting)
    assert problems and problems[0].startswith(
        f"calibration.records_sha256: {stored.records_sha256} stored, "
    )
    # the model they measured is part of the records: another model's digest is another file
    other = stored.model_copy(update={"model_sha256": "b" * 64})
    assert cal.rederive(other, setting)[0].startswith("calibration.records_sha256")
    problem = cal.model_problem(stored, "llama", "c" * 64)
    assert problem is not None and "smollm2" in problem and "llama" in problem


def test_a_changed_math_set_digest_with_the_profile_is_rejected() -> None:
    report = build_report(items=4, requests=2)
    prof = Profile.model_validate(report.profile)
    run = next(r for r in report.quality.runs if r.role == "candidate")
    real = run.data_sha256
    run.data_sha256 = "f" * 64
    lenient = Rederived()
    check_questions(list(report.quality.runs), prof, lenient)
    assert any("differs from the run's" in n for n in lenient.not_rederived)
    with pytest.raises(VerificationFailed) as exc:
        check_questions(list(report.quality.runs), prof, Rederived(profile_given=True))
    assert f"math.short (candidate).data_sha256: {'f' * 64} stored, {real} re-derived" in str(
        exc.value
    )


def test_the_bootstrap_is_the_profiles() -> None:
    report = build_report(items=4, requests=3)
    prof = Profile.model_validate(report.profile)
    assert recompute_perf(report, prof, FAKES) == 1
    for field, value, want in (("bootstrap_resamples", 100, 200), ("bootstrap_seed", 7, 0)):
        edited = report.model_copy(deep=True)
        setattr(edited.perf, field, value)
        with pytest.raises(VerificationFailed, match=f"perf.{field}: {value} stored, {want} re-"):
            recompute_perf(edited, prof, FAKES)


def _recall_run(spec: RecallSuite, length: int, ids_codes: dict[str, str]) -> SuiteRun:
    items = [
        ItemRecord(id=i, prompt_sha256="0" * 64, output=c, answer=c, expected=c, correct=True)
        for i, c in ids_codes.items()
    ]
    return SuiteRun(suite=f"recall.{length}", role="reference", data_sha256="0" * 64, items=items)


def test_recall_ids_depths_and_codes_are_rederived() -> None:
    raw = {**PROFILE, "quality": {"recall": {"context_tokens": [512], "haystacks": 2}}}
    prof = Profile.model_validate(raw)
    spec = prof.quality.recall
    assert spec is not None
    codes = planted(spec.seed, 512, 2, list(spec.depths), spec.similar)
    assert len(codes) == 10 and "recall.512.h1.d4-90" in codes
    done = Rederived()
    check_questions([_recall_run(spec, 512, codes)], prof, done)
    assert done.recall_checked == 10
    first = next(iter(codes))
    moved = {first.replace(".d0-10", ".d0-20"): codes[first]}  # a depth the profile never asks
    with pytest.raises(VerificationFailed, match="names no haystack and depth"):
        check_questions([_recall_run(spec, 512, moved)], prof, Rederived())
    swapped = {first: "ZZ-0000"}
    with pytest.raises(VerificationFailed) as exc:
        check_questions([_recall_run(spec, 512, swapped)], prof, Rederived())
    assert f"{first}.expected: 'ZZ-0000' stored, {codes[first]!r} re-derived" in str(exc.value)
