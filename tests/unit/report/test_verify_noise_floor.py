"""The noise floor in a signed report: verify re-derives the flip allowance it set from the
reference's two asks, and rejects a report whose floor records were edited."""

from __future__ import annotations

import copy

import pytest
from helpers.report_synthetic import PROFILE, build_report, make_signer

from qgate.attest.statement import Subject
from qgate.errors import VerificationFailed
from qgate.gates.quality import evaluate_quality
from qgate.profile import Profile
from qgate.quality.noise_floor import FloorRecords, floor_summary
from qgate.report.model import Report
from qgate.report.render.md import render_markdown
from qgate.report.signing import sign_report
from qgate.report.verdict import overall
from qgate.report.verify.single import default_recompute, verify_bytes

SIGNER = make_signer("ecdsa")


def verify(report: Report) -> None:
    subjects = [Subject(name="profile/p.yaml", sha256=report.profile_sha256)]
    envelope = sign_report(report, subjects, SIGNER)
    verify_bytes(envelope, SIGNER.public_pem, recompute=default_recompute())


def floor_report() -> Report:
    """The synthetic report of a profile with `quality.noise_floor`: the reference asked its
    8 math items again and answered them as before (0 of 8: upper bound 31%, 3 flips)."""
    profile_json = copy.deepcopy(PROFILE)
    profile_json["quality"]["noise_floor"] = {}
    report = build_report(fns=default_recompute(), profile_json=profile_json)
    profile = Profile.model_validate(report.profile)
    ref = next(r for r in report.quality.runs if r.role == "reference")
    again = ref.model_copy(update={"cached": False}, deep=True)
    floor = FloorRecords(concurrency=8, second_concurrency=2, confidence=0.95, runs=[again])
    report.quality.noise_floor = floor
    report.quality.verdicts = evaluate_quality(
        profile.quality,
        list(report.quality.runs),
        report.quality.divergence,
        floor_summary(floor, report.quality.runs),
    )
    report.verdict = overall(report.all_verdicts(), report.perf.status)
    return report


def test_the_derived_allowance_verifies() -> None:
    report = floor_report()
    flips = next(v for v in report.quality.verdicts if v.gate == "math.short.max_flips")
    assert flips.limit == 3 and flips.passed and "limit from the noise floor" in flips.reason
    verify(report)
    assert "disagreed with itself on 0 of 8" in render_markdown(report)


def test_an_edited_floor_is_rejected() -> None:
    report = floor_report()
    assert report.quality.noise_floor is not None
    item = report.quality.noise_floor.runs[0].items[0]
    wrong = str(int(item.expected) + 1)  # a consistent record: 1 of 8 changed its mind, so
    item.output, item.answer, item.correct = f"The answer is {wrong}", wrong, False
    # the allowance would be 4, not the stored 3
    with pytest.raises(VerificationFailed, match="math.short.max_flips"):
        verify(report)


def test_a_floor_answer_graded_against_its_text_is_rejected() -> None:
    report = floor_report()
    assert report.quality.noise_floor is not None
    report.quality.noise_floor.runs[0].items[0].correct = False  # its text still says right
    with pytest.raises(VerificationFailed, match="stored correct=False"):
        verify(report)


def test_the_console_line_names_the_floor_and_what_it_set() -> None:
    from qgate.report.render.floor_view import floor_line

    line = floor_line(floor_report())
    assert line is not None and line.startswith("the reference disagreed with itself on 0 of 8")
    assert "set max_flips: math.short.max_flips 3" in line
    assert floor_line(build_report()) is None
