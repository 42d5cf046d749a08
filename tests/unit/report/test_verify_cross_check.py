"""verify holds the divergence cross-check's raw records to their own arithmetic, and a report
that carries them to quality derivation 5 (issue 55 item 4)."""

from __future__ import annotations

import pytest
from helpers.report_synthetic import build_report

from qgate.errors import VerificationFailed
from qgate.gates.cross_check import cross_summary
from qgate.profile import Profile
from qgate.quality.records import CrossSequence, DivergenceRun, DivergenceSequence
from qgate.report.verify.cross_check import check_cross_planned, check_cross_records
from qgate.report.verify.derivation import record_floor


def _seq(sid: str) -> DivergenceSequence:
    return DivergenceSequence(
        id=sid,
        prompt_sha256="0" * 64,
        token_ids=[5, 6],
        kld=[0.0, 0.0],
        top1_agree=[True, True],
        delta_p=[0.0, 0.0],
        candidate_top_ids=[[1, 5], [1, 6]],
        candidate_top_logprobs=[[-2.0, -0.2], [-1.5, -0.3]],
    )


def _cross(sid: str, **changes: object) -> CrossSequence:
    base: dict[str, object] = {
        "id": sid,
        "token_ids": [5, 6],
        "top_ids": [[1, 5], [1, 6]],
        "top_logprobs": [[-2.0, -0.2], [-1.5, -0.3]],
    }
    return CrossSequence.model_validate({**base, **changes})


def _run(cross: list[CrossSequence] | None) -> DivergenceRun:
    return DivergenceRun(
        data_sha256="0" * 64, top_k=2, tokens=2, sequences=[_seq("a"), _seq("b")], cross_check=cross
    )


def test_whole_records_and_a_missing_one_pass_the_shape_check() -> None:
    """The check refuses only records the run could not have made: a missing generation is
    left to the gate, which reads it as NOT TRUSTED."""
    for cross in ([_cross("a"), _cross("b")], [_cross("a")], None):
        assert check_cross_records(_run(cross)) is None  # raises on a malformed record
    assert cross_summary(_run([_cross("a")])).missing == ("b",)
    assert cross_summary(_run([_cross("a"), _cross("b")])).missing == ()


@pytest.mark.parametrize(
    ("cross", "message"),
    [
        ([_cross("z")], "cross-check z: not one of the scored sequences"),
        ([_cross("a"), _cross("a")], "cross-check a: not one of the scored sequences, or twice"),
        ([_cross("a", token_ids=[5])], "cross-check a: 1 tokens, 2 and 2 logprob positions, 2"),
        ([_cross("a", top_logprobs=[[-2.0], [-1.5, -0.3]])], "a position 0: 2 ids, 1 logprobs"),
        (
            [_cross("a", top_ids=[[1, 2, 3, 5], [1, 6]], top_logprobs=[[-1.0] * 4, [-1.5, -0.3]])],
            "a position 0: 4 ids, 4 logprobs (top_k 2)",
        ),
        ([_cross("a", top_logprobs=[[-2.0, 0.5], [-1.5, -0.3]])], "a logprob above 0 or NaN"),
        ([_cross("a", top_logprobs=[[-2.0, float("nan")], [-1.5, -0.3]])], "above 0 or NaN"),
    ],
)
def test_records_the_run_could_not_have_made_are_refused(
    cross: list[CrossSequence], message: str
) -> None:
    with pytest.raises(VerificationFailed, match=message.replace("(", r"\(").replace(")", r"\)")):
        check_cross_records(_run(cross))


def test_a_report_with_a_cross_check_needs_quality_derivation_5() -> None:
    report = build_report(requests=4)
    assert record_floor(report).quality < 5
    report.quality.divergence = _run([_cross("a"), _cross("b")])
    floor = record_floor(report)
    assert floor.quality == 5 and "quality.divergence.cross_check (quality 5)" in floor.why


NGRAM = '{"method":"ngram","num_speculative_tokens":3,"prompt_lookup_max":3}'


def _profile(speculates: bool) -> Profile:
    return Profile.model_validate(
        {
            "name": "t",
            "model": {"embedded": "smollm2"},
            "candidate": {"args": {"speculative_config": NGRAM} if speculates else {}},
            "quality": {"divergence": {"sequences": 2, "tokens": 2, "max_mean_kld": 1.0}},
        }
    )


def test_the_generations_are_held_to_the_plan() -> None:
    whole = _run([_cross("a"), _cross("b")])
    line = check_cross_planned(whole, _profile(True), 5)
    assert line is not None and line.startswith("2 divergence cross-check generations held")
    with pytest.raises(VerificationFailed, match=r"1 of 2 have no generation \(b\)"):
        check_cross_planned(_run([_cross("a")]), _profile(True), 5)  # one taken out
    with pytest.raises(VerificationFailed, match="2 of 2 have no generation"):
        check_cross_planned(_run(None), _profile(True), 5)
    with pytest.raises(VerificationFailed, match="the profile does not ask for"):
        check_cross_planned(whole, _profile(False), 5)
    assert check_cross_planned(_run(None), _profile(False), 5) is None
    assert check_cross_planned(_run(None), _profile(True), 4) is None  # before derivation 5
