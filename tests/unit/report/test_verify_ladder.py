"""The context ladder in a signed report: each bucket gated on its own, the cliff named in the
views, and verify re-deriving every bucket's gates and items from the records."""

from __future__ import annotations

import copy
import hashlib

import pytest
from helpers.report_synthetic import PROFILE, build_report, make_signer

from qgate.attest.statement import Subject
from qgate.errors import VerificationFailed
from qgate.gates.quality import evaluate_quality
from qgate.profile import Profile
from qgate.profile.context_ladder import buckets, item_id, targets
from qgate.quality.data_context_ladder import ladder_codes
from qgate.quality.extract import extract_symbol
from qgate.quality.records import GeneratedLogprobs, ItemRecord, SuiteRun
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


def _profile_json(**ladder: object) -> dict[str, object]:
    data = copy.deepcopy(PROFILE)
    data["quality"]["context_ladder"] = {**LADDER, **ladder}  # type: ignore[index]
    return data


SAME = [[-0.4, -1.6, -3.0], [-0.1, -3.0, -4.0]]
DRIFTED = [[-0.8, -0.9, -2.5], [-0.3, -1.8, -3.5]]


def _generated(drift: bool) -> GeneratedLogprobs:
    """Two generated positions, the generated token first among three ids; `drift`: the
    candidate's distributions moved (same top-1 tokens)."""
    return GeneratedLogprobs(
        prompt_ids_sha256="a" * 64,
        token_ids=[10, 11],
        top_ids=[[10, 20, 30], [11, 21, 31]],
        top_logprobs=copy.deepcopy(DRIFTED if drift else SAME),
    )


def _items(
    role: str, centre: int, lost: int, blind: bool = False, drift: bool = False
) -> list[ItemRecord]:
    """Bucket `centre`'s items; both sides recall every code, except the candidate's last
    `lost` items (the longest of the bucket), where it answers a rotated code; `blind`: both
    sides answer every item wrong; `drift`: the candidate's logprobs moved."""
    spec = Profile.model_validate(_profile_json()).quality.context_ladder
    assert spec is not None
    bucket = next(b for b in buckets(spec.start, spec.up_to) if b.centre == centre)
    codes = ladder_codes(spec, centre, spec.per_bucket)
    out = []
    for i, target in enumerate(targets(bucket, spec.per_bucket, 8032)):
        depth, code = codes[i]
        wrong = blind or (role == "candidate" and i >= spec.per_bucket - lost)
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
                generated=_generated(drift and role == "candidate"),
            )
        )
    return out


def ladder_report(
    lost: dict[int, int],
    blind: frozenset[int] = frozenset(),
    drift: frozenset[int] = frozenset(),
    **ladder: object,
) -> Report:
    """The synthetic report with a context ladder: the candidate loses `lost[centre]` items;
    in the buckets `blind`, both sides answer every item wrong; in `drift`, the candidate's
    logprobs move; `ladder`: further profile keys."""
    # a failed quality gate stops the perf stage
    failed = any(lost.values()) or (drift and ladder.get("max_mean_kld"))
    status = "skipped: gates failed" if failed else "ran"
    report = build_report(
        fns=default_recompute(), profile_json=_profile_json(**ladder), perf_status=status
    )
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
                        "logprobs_top_k": spec.top_k,
                    },
                    items=_items(
                        role,
                        b.centre,
                        lost.get(b.centre, 0),
                        blind=b.centre in blind,
                        drift=b.centre in drift,
                    ),
                    cached=role == "reference",  # as the synthetic reference's math.short
                )
            )
    q = report.quality
    q.verdicts = evaluate_quality(profile.quality, q.runs, q.divergence)
    report.verdict = overall(report.all_verdicts(), report.perf.status)
    return report


def verify(report: Report) -> list[str]:
    """What verify says it checked (it raises when the report does not verify)."""
    subjects = [Subject(name="profile/p.yaml", sha256=report.profile_sha256)]
    envelope = sign_report(report, subjects, SIGNER)
    return verify_bytes(envelope, SIGNER.public_pem, recompute=default_recompute()).checked


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


def test_a_shorter_bucket_the_reference_got_nothing_right_in_is_not_called_passing() -> None:
    report = ladder_report({4096: 2}, blind=frozenset({2048}))
    assert _bucket_results(report)["context.2048"] is True  # vacuously: 0 of 0 to lose
    line = cliff_line(report)
    assert line is not None
    assert "shorter buckets pass: 1024;" in line
    assert "2048: nothing to lose (the reference answered no item right there)" in line


def test_no_cliff_when_every_bucket_passes() -> None:
    report = ladder_report({})
    assert all(_bucket_results(report).values())
    assert cliff_line(report) is None
    assert "No cliff: every bucket's gates passed." in render_markdown(report)


def test_verify_accepts_the_ladder_and_rederives_each_bucket_gate() -> None:
    for lost in ({4096: 2, 8192: 4}, {}):
        checked = verify(ladder_report(lost))
        assert any("recall items (context ladder included)" in c for c in checked), checked


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


def _without_lost(report: Report, suite: str, roles: tuple[str, ...]) -> Report:
    """The edit of issue 54 ("a cliff hidden"): the bucket's lost items deleted from `roles`'
    runs, and the verdicts and the overall verdict derived again."""
    lost = {
        i.id
        for r in report.quality.runs
        if r.suite == suite and r.role == "candidate"
        for i in r.items
        if not i.correct
    }
    assert lost
    for run in report.quality.runs:
        if run.suite == suite and run.role in roles:
            run.items = [i for i in run.items if i.id not in lost]
    q = report.quality
    profile = Profile.model_validate(report.profile)
    q.verdicts = evaluate_quality(profile.quality, q.runs, q.divergence)
    report.verdict = overall(report.all_verdicts(), report.perf.status)
    return report


def test_verify_rejects_a_cliff_hidden_by_deleting_its_lost_items_from_the_candidate() -> None:
    report = _without_lost(ladder_report({4096: 2}), "context.4096", ("candidate",))
    with pytest.raises(
        VerificationFailed, match=r"context\.4096 \(candidate\): 2 items stored, 4 planned"
    ):
        verify(report)


def test_verify_rejects_a_cliff_hidden_by_deleting_its_lost_items_from_both_sides() -> None:
    report = _without_lost(ladder_report({4096: 2}), "context.4096", ("reference", "candidate"))
    assert cliff_line(report) is None  # the cliff hidden, every verdict derived again
    with pytest.raises(VerificationFailed, match=r"context\.4096 \(reference\): 2 items stored, 4"):
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


def test_a_bucket_divergence_limit_is_gated_joins_the_cliff_and_verify_rederives_it() -> None:
    report = ladder_report({}, drift=frozenset({4096, 8192}), top_k=3, max_mean_kld=0.05)
    kld = {v.suite: v for v in report.quality.verdicts if v.gate.startswith("context.")}
    kld = {s: v for s, v in kld.items() if v.gate.endswith(".max_mean_kld")}
    assert sorted(kld) == ["context.1024", "context.2048", "context.4096", "context.8192"]
    assert kld["context.1024"].passed and kld["context.1024"].observed == 0.0
    assert not kld["context.4096"].passed and kld["context.4096"].n == 8  # 4 items, 2 each
    line = cliff_line(report)
    assert line is not None
    assert "at context.4096 " in line and "context.4096.max_mean_kld failed" in line
    md = render_markdown(report)
    assert "| Mean KL | Max KL | Top-1 agree | Positions |" in md
    assert "up to and including the first where they part" in md
    row = next(ln for ln in md.splitlines() if ln.startswith("| 4096 "))
    assert "100.0%" in row and "8 (4 items)" in row and "FAIL" in row
    checked = verify(report)
    assert "32 ladder answers' top-k logprobs checked" in " ".join(checked)


def test_verify_refuses_an_edited_logprob() -> None:
    report = ladder_report({}, top_k=3, max_mean_kld=0.05)
    verify(report)
    run = next(
        r for r in report.quality.runs if r.suite == "context.2048" and r.role == "candidate"
    )
    g = run.items[0].generated
    assert g is not None
    g.top_logprobs[0][1] = -2.5  # the second token less likely: the stored KL no longer follows
    with pytest.raises(VerificationFailed, match=r"context\.2048\.max_mean_kld"):
        verify(report)


def test_verify_refuses_logits_stored_as_logprobs() -> None:
    report = ladder_report({})
    run = next(r for r in report.quality.runs if r.suite == "context.1024")
    g = run.items[1].generated
    assert g is not None
    g.top_logprobs[1] = [-0.01, -0.02, -0.03]
    with pytest.raises(VerificationFailed, match=r"context\.1024 .*generated: .*sum above 1"):
        verify(report)


def test_a_report_without_logprobs_shows_no_divergence_columns() -> None:
    report = ladder_report({})
    for run in report.quality.runs:
        run.params.pop("logprobs_top_k", None)
        run.items = [i.model_copy(update={"generated": None}) for i in run.items]
    md = render_markdown(report)
    assert "## Context-length ladder" in md and "| Mean KL | Max KL |" not in md
    verify(report)
