"""The context ladder in a signed report: each bucket gated on its own, the cliff named in the
views, and verify re-deriving every bucket's gates and items from the records."""

from __future__ import annotations

import copy
import hashlib

import pytest
from helpers.report_synthetic import PROFILE, build_report, make_signer

from qgate.attest.statement import Subject
from qgate.errors import VerificationFailed
from qgate.profile import Profile
from qgate.profile.context_ladder import buckets, item_id, targets
from qgate.quality.data_context_ladder import ladder_codes
from qgate.quality.extract import extract_symbol
from qgate.quality.gates import evaluate_quality
from qgate.quality.records import ItemRecord, SuiteRun
from qgate.report.model import Report
from qgate.report.render.ladder_view import cliff_line
from qgate.report.render.md import render_markdown
from qgate.report.signing import sign_report
from qgate.report.verdict import overall
from qgate.report.verify.single import default_recompute, verify_bytes
from qgate.run.plan import describe, make_plan

SIGNER = make_signer("ecdsa")
ROTATE = str.maketrans("0123456789", "5678901234")
LADDER = {"up_to": 8192, "per_bucket": 4, "max_flips": 0, "significance": False}


def _profile_json() -> dict[str, object]:
    data = copy.deepcopy(PROFILE)
    data["quality"]["context_ladder"] = dict(LADDER)  # type: ignore[index]
    return data


def _items(role: str, centre: int, lost: int) -> list[ItemRecord]:
    """Bucket `centre`'s items; both sides recall every code, except the candidate's last
    `lost` items (the longest of the bucket), where it answers a rotated code."""
    spec = Profile.model_validate(_profile_json()).quality.context_ladder
    assert spec is not None
    bucket = next(b for b in buckets(spec.start, spec.up_to) if b.centre == centre)
    codes = ladder_codes(spec, centre, spec.per_bucket)
    out = []
    for i, target in enumerate(targets(bucket, spec.per_bucket, 8032)):
        depth, code = codes[i]
        wrong = role == "candidate" and i >= spec.per_bucket - lost
        said = code.translate(ROTATE) if wrong else code
        answer = extract_symbol(f"The access code is {said}.")
        out.append(
            ItemRecord(
                id=item_id(centre, i, target, depth),
                prompt_sha256=hashlib.sha256(f"{centre}{i}".encode()).hexdigest(),
                output=f"The access code is {said}.",
                answer=answer,
                expected=code,
                correct=answer == code,
            )
        )
    return out


def ladder_report(lost: dict[int, int]) -> Report:
    """The synthetic report with a context ladder: the candidate loses `lost[centre]` items."""
    # a failed quality gate stops the perf stage
    status = "skipped: gates failed" if any(lost.values()) else "ran"
    report = build_report(fns=default_recompute(), profile_json=_profile_json(), perf_status=status)
    profile = Profile.model_validate(report.profile)
    spec = profile.quality.context_ladder
    assert spec is not None
    for b in buckets(spec.start, spec.up_to):
        for role in ("reference", "candidate"):
            report.quality.runs.append(
                SuiteRun(
                    suite=b.suite,
                    role=role,  # type: ignore[arg-type]
                    data_sha256="0" * 64,
                    params={
                        "bucket_centre": b.centre,
                        "bucket_lo": b.lo,
                        "bucket_hi": b.hi - 1,
                        "haystack_tokens_min": b.lo,
                        "haystack_tokens_max": min(b.hi - 1, 8032),
                        "clip_reason": "clipped to 8032" if b.hi - 1 > 8032 else None,
                    },
                    items=_items(role, b.centre, lost.get(b.centre, 0) if role else 0),
                    cached=role == "reference",  # as the synthetic reference's math.short
                )
            )
    q = report.quality
    q.verdicts = evaluate_quality(profile.quality, q.runs, q.divergence)
    report.verdict = overall(report.all_verdicts(), report.perf.status)
    return report


def verify(report: Report) -> None:
    subjects = [Subject(name="profile/p.yaml", sha256=report.profile_sha256)]
    envelope = sign_report(report, subjects, SIGNER)
    verify_bytes(envelope, SIGNER.public_pem, recompute=default_recompute())


def _bucket_results(report: Report) -> dict[str, bool]:
    return {v.suite: v.passed for v in report.quality.verdicts if v.suite.startswith("context.")}


def test_each_bucket_is_gated_on_its_own_and_the_cliff_is_the_first_failing_one() -> None:
    report = ladder_report({4096: 2, 8192: 4})
    assert _bucket_results(report) == {
        "context.1024": True,
        "context.2048": True,
        "context.4096": False,
        "context.8192": False,
    }
    line = cliff_line(report)
    assert line is not None
    assert line.startswith("the candidate first departs from the reference at context.4096 ")
    assert "[2896, 5792] tokens" in line and "shorter buckets pass: 1024, 2048" in line
    md = render_markdown(report)
    assert "CLIFF: the candidate first departs from the reference at context.4096" in md
    assert "## Context-length ladder" in md
    # the per-bucket table: both accuracies and the gate, shortest first
    rows = [ln for ln in md.splitlines() if ln.startswith("| 1024 ") or ln.startswith("| 4096 ")]
    assert rows[0].count("(4/4)") == 2 and "PASS" in rows[0]
    assert "(4/4)" in rows[1] and "(2/4)" in rows[1] and "FAIL" in rows[1]


def test_no_cliff_when_every_bucket_passes() -> None:
    report = ladder_report({})
    assert all(_bucket_results(report).values())
    assert cliff_line(report) is None
    assert "No cliff: every bucket's gates passed." in render_markdown(report)


def test_verify_accepts_the_ladder_and_rederives_each_bucket_gate() -> None:
    verify(ladder_report({4096: 2, 8192: 4}))
    verify(ladder_report({}))


def test_verify_rejects_an_edited_bucket_verdict() -> None:
    report = ladder_report({4096: 2})
    for v in report.quality.verdicts:
        if v.suite == "context.4096":
            v.passed = True
    report.verdict = overall(report.all_verdicts(), report.perf.status)
    with pytest.raises(VerificationFailed, match=r"context\.4096"):
        verify(report)


def test_verify_rejects_a_forged_correct_flag_in_a_bucket() -> None:
    report = ladder_report({4096: 2})
    run = next(
        r for r in report.quality.runs if r.suite == "context.4096" and r.role == "candidate"
    )
    run.items[-1] = run.items[-1].model_copy(update={"correct": True})
    with pytest.raises(VerificationFailed, match=r"context\.4096 candidate item .*stored correct"):
        verify(report)


def test_verify_rejects_an_expected_code_the_seed_does_not_plant() -> None:
    report = ladder_report({})
    for run in report.quality.runs:
        if run.suite == "context.2048":
            first = run.items[0]
            run.items[0] = first.model_copy(
                update={"expected": "ZZ-0000", "answer": "ZZ-0000", "output": "ZZ-0000"}
            )
    with pytest.raises(VerificationFailed, match=r"context\.2048 reference item .*expected"):
        verify(report)


def test_verify_rejects_an_item_outside_its_bucket() -> None:
    report = ladder_report({})
    for run in report.quality.runs:
        if run.suite == "context.2048":
            run.items[0] = run.items[0].model_copy(update={"id": "context.2048.i0.t1200.d10"})
    with pytest.raises(VerificationFailed, match=r"outside the bucket \[1448, 2895\]"):
        verify(report)


def test_plan_lists_each_bucket_with_its_items_and_power() -> None:
    data = _profile_json()
    data["quality"]["context_ladder"]["significance"] = True  # type: ignore[index]
    profile = Profile.model_validate(data)
    plan = make_plan([("candidate", profile)], reference_cached=False, placement="cores 0-1")
    text = "\n".join(describe(plan))
    for centre, span in ((1024, "[724, 1447]"), (2048, "[1448, 2895]"), (8192, "[5793, 8192]")):
        assert f"quality context.{centre}: 4 items per side" in text
        assert span in text
        assert f"power context.{centre}: 4 items" in text
