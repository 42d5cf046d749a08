"""The noise floor in a signed report: verify re-derives the flip allowance it set from the
reference's two asks, and rejects a report whose floor records were edited."""

from __future__ import annotations

import copy
from collections.abc import Callable

import pytest
from helpers.report_synthetic import PROFILE, build_report, make_signer
from helpers.resign import rederived

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


def floor_report(flipped: int = 0) -> Report:
    """The synthetic report of a profile with `quality.noise_floor`: the reference asked its
    8 math items again and answered them as before (0 of 8: upper bound 31%, 3 flips), but
    the first `flipped` wrongly, and scored its 2 divergence continuations again."""
    profile_json = copy.deepcopy(PROFILE)
    profile_json["quality"]["noise_floor"] = {}
    report = build_report(fns=default_recompute(), profile_json=profile_json)
    profile = Profile.model_validate(report.profile)
    ref = next(r for r in report.quality.runs if r.role == "reference")
    again = ref.model_copy(update={"cached": False}, deep=True)
    for item in again.items[:flipped]:
        wrong = str(int(item.expected) + 1)
        item.output, item.answer, item.correct = f"The answer is {wrong}", wrong, False
    assert report.quality.divergence is not None
    scored = report.quality.divergence.model_copy(deep=True)  # its arithmetic holds as stored
    floor = FloorRecords(
        concurrency=8, second_concurrency=2, confidence=0.95, runs=[again], divergence=scored
    )
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


def _insider(report: Report, edit: Callable[[FloorRecords], None]) -> Report:
    """`edit` applied to the floor's records, every verdict derived again by the one judge."""
    assert report.quality.noise_floor is not None
    edit(report.quality.noise_floor)
    return rederived(report, quality=True)


def _flipped_item_deleted(floor: FloorRecords) -> None:
    floor.runs[0].items = floor.runs[0].items[1:]  # floor_report(flipped=1) flipped the first


def test_deleting_the_items_the_reference_flipped_moves_the_allowance() -> None:
    """What the edit buys: 1 of 8 flipped allows 4 flips, 0 of 7 only 3 (and 0 of 8 would
    allow 3 too): the judge derives the narrower limit from what is left."""
    before = floor_report(flipped=1)
    flips = next(v for v in before.quality.verdicts if v.gate == "math.short.max_flips")
    assert flips.limit == 4
    after = _insider(floor_report(flipped=1), _flipped_item_deleted)
    flips = next(v for v in after.quality.verdicts if v.gate == "math.short.max_flips")
    assert flips.limit == 3


def _floor_deleted(report: Report) -> Report:
    report.quality.noise_floor = None
    return rederived(report, quality=True)


def _divergence_deleted(floor: FloorRecords) -> None:
    floor.divergence = None


def _confidence_lowered(floor: FloorRecords) -> None:
    floor.confidence = 0.6  # a lower bound: fewer flips allowed, or more, as wanted


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda r: _insider(r, _flipped_item_deleted),
            "quality.noise_floor.runs: math.short: 7 items stored, 8 planned (every item of "
            "the reference's first ask, asked again once; e.g. arith-0001 missing)",
        ),
        (
            _floor_deleted,
            "quality.noise_floor: none stored; the profile asks the reference's 1 math and "
            "recall results again",
        ),
        (
            lambda r: _insider(r, _divergence_deleted),
            "quality.noise_floor.divergence: 0 continuations stored, 2 planned",
        ),
        (
            lambda r: _insider(r, _confidence_lowered),
            "quality.noise_floor.confidence: 0.6 stored, 0.95 re-derived from the profile",
        ),
    ],
    ids=["flipped item deleted", "floor deleted", "divergence deleted", "confidence lowered"],
)
def test_a_floor_short_of_the_plan_is_refused(
    edit: Callable[[Report], Report], message: str
) -> None:
    """Issue 54 item 2: the floor's records held to the plan, not to themselves. Each edit
    with every verdict derived again by the judge and the report signed afresh is refused,
    naming the field, what is stored and what the profile plans."""
    report = edit(floor_report(flipped=1))
    with pytest.raises(VerificationFailed) as info:
        verify(report)
    assert info.value.message.startswith(message), info.value.message
