"""The acceptance gate of a speculative candidate and the checks of its counters (issue 42
item 4): pure functions over counter snapshots, as `qgate run` and `qgate verify` call them."""

from __future__ import annotations

from typing import Any

import pytest

from qgate.gates.speculative import acceptance, evaluate_speculative, speculates
from qgate.profile import Profile
from qgate.quality.spec_counters import (
    ACCEPTED,
    DRAFT_TOKENS,
    DRAFTS,
    SpecSnapshot,
    parse_spec_counters,
    position_key,
)

NGRAM = '{"method":"ngram","num_speculative_tokens":3,"prompt_lookup_max":3}'


def _profile(
    speculative: dict[str, Any] | None = None, cand: bool = True, ref: bool = False
) -> Profile:
    data: dict[str, Any] = {
        "name": "t",
        "model": {"embedded": "smollm2"},
        "reference": {"args": {"speculative_config": NGRAM} if ref else {}},
        "candidate": {"args": {"speculative_config": NGRAM} if cand else {"dtype": "float32"}},
        "quality": {"math": {"max_drop": 0.1}},
    }
    if speculative is not None:
        data["quality"]["speculative"] = speculative
    return Profile.model_validate(data)


def _counts(drafts: float, tokens: float, accepted: float, per: list[float]) -> dict[str, float]:
    out = {DRAFTS: drafts, DRAFT_TOKENS: tokens, ACCEPTED: accepted}
    out.update({position_key(str(i)): v for i, v in enumerate(per)})
    return out


def _side(role: str, end: dict[str, float], start: dict[str, float] | None = None) -> list:
    start = start if start is not None else {k: 0.0 for k in end}
    return [
        SpecSnapshot(role=role, at="start", counters=start),  # type: ignore[arg-type]
        SpecSnapshot(role=role, at="after math", seconds=3.0, counters=end),  # type: ignore[arg-type]
    ]


def _gates(profile: Profile, snaps: list[SpecSnapshot]) -> dict[str, Any]:
    return {v.gate: v for v in evaluate_speculative(profile, snaps)}


NONE = [SpecSnapshot(role="reference", at="start"), SpecSnapshot(role="reference", at="after math")]


def test_acceptance_length_and_rate_come_from_the_deltas() -> None:
    snaps = _side("candidate", _counts(19, 57, 32, [14, 10, 8]), _counts(9, 27, 22, [9, 7, 6]))
    got = acceptance(snaps, "candidate")
    assert got is not None
    assert (got.drafts, got.draft_tokens, got.accepted) == (10, 30, 10)
    assert got.length == pytest.approx(2.0) and got.rate == pytest.approx(1 / 3)
    assert got.per_position == {'{position="0"}': 5, '{position="1"}': 3, '{position="2"}': 2}


def test_a_length_above_the_floor_passes_and_below_it_fails() -> None:
    snaps = NONE + _side("candidate", _counts(10, 30, 15, [8, 5, 2]))  # length 2.5
    ok = _gates(_profile({"min_acceptance_length": 2.4}), snaps)["speculative.acceptance_length"]
    assert ok.passed and ok.exercised and ok.observed == pytest.approx(2.5) and ok.limit == 2.4
    assert ok.n == 10 and ok.comparator == ">="
    low = _gates(_profile({"min_acceptance_length": 2.6}), snaps)["speculative.acceptance_length"]
    assert (
        not low.passed
        and low.exercised
        and "length 2.500 (" in low.reason
        and "< 2.600 (floor 2.6)" in low.reason
    )


def test_against_a_speculative_reference_the_limit_is_its_share_of_the_reference() -> None:
    ref = _side("reference", _counts(10, 30, 20, [9, 7, 4]))  # reference length 3.0
    cand = _side("candidate", _counts(10, 30, 18, [9, 6, 3]))  # 2.8, below 0.95 x 3.0 = 2.85
    v = _gates(_profile(ref=True), ref + cand)["speculative.acceptance_length"]
    assert not v.passed and v.limit == pytest.approx(2.85) and "0.95 x reference 3.000" in v.reason
    at_90 = _gates(_profile({"min_share_of_reference": 0.9}, ref=True), ref + cand)
    assert at_90["speculative.acceptance_length"].passed
    # a floor above the share holds instead
    high = _gates(
        _profile({"min_share_of_reference": 0.9, "min_acceptance_length": 2.9}, ref=True),
        ref + cand,
    )
    assert not high["speculative.acceptance_length"].passed
    assert high["speculative.acceptance_length"].limit == 2.9


def test_zero_drafts_is_not_exercised_never_a_pass() -> None:
    snaps = NONE + _side("candidate", _counts(0, 0, 0, [0, 0, 0]))
    v = _gates(_profile({"min_acceptance_length": 1.0}), snaps)["speculative.acceptance_length"]
    assert v.passed is False and v.exercised is False
    assert v.reason.startswith("NOT EXERCISED: 0 drafts over the quality suites")


def test_too_few_drafts_is_not_exercised() -> None:
    snaps = NONE + _side("candidate", _counts(3, 9, 9, [3, 3, 3]))
    v = _gates(_profile({"min_drafts": 4}), snaps)["speculative.acceptance_length"]
    assert v.passed is False and v.exercised is False and "at least 4 needed" in v.reason


def test_a_server_without_the_counters_is_not_exercised() -> None:
    snaps = NONE + [
        SpecSnapshot(role="candidate", at="start"),
        SpecSnapshot(role="candidate", at="after math"),
    ]
    v = _gates(_profile(), snaps)["speculative.acceptance_length"]
    assert v.passed is False and v.exercised is False and v.observed is None
    assert "no speculative-decoding counters" in v.reason


def test_without_a_floor_or_a_speculative_reference_only_that_it_ran_is_gated() -> None:
    snaps = NONE + _side("candidate", _counts(10, 30, 1, [1, 0, 0]))
    v = _gates(_profile(), snaps)["speculative.acceptance_length"]
    assert v.passed and v.limit is None and "only that speculation ran is gated" in v.reason


def test_no_gate_without_speculation_or_a_speculative_block() -> None:
    assert evaluate_speculative(_profile(cand=False), NONE) == []
    assert not speculates(_profile(cand=False), "candidate")
    # the block alone asks for it: a candidate that does not speculate is then NOT EXERCISED
    v = _gates(_profile({"min_acceptance_length": 1.5}, cand=False), NONE)
    assert v["speculative.acceptance_length"].exercised is False


@pytest.mark.parametrize(
    ("end", "start", "message"),
    [
        (_counts(10, 30, 31, [11, 10, 10]), None, "31 accepted tokens above 30 draft tokens"),
        (_counts(10, 30, 15, [8, 5, 1]), None, "add up to 14, not the 15 accepted"),
        (_counts(10, 30, 15, [8, 5, 2]), _counts(12, 30, 15, [8, 5, 2]), "went back from 12 to 10"),
    ],
)
def test_counters_that_break_their_arithmetic_fail(
    end: dict[str, float], start: dict[str, float] | None, message: str
) -> None:
    snaps = NONE + _side("candidate", end, start)
    v = _gates(_profile({"min_acceptance_length": 1.1}), snaps)["speculative.counters"]
    assert v.passed is False and message in v.reason, v.reason


def test_sound_counters_pass_their_check() -> None:
    snaps = NONE + _side("candidate", _counts(10, 30, 15, [8, 5, 2]))
    v = _gates(_profile(), snaps)["speculative.counters"]
    assert v.passed and v.observed == 0


METRICS = """\
# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.
# TYPE vllm:spec_decode_num_drafts_total counter
vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 9.0
vllm:spec_decode_num_drafts_created{engine="0",model_name="m"} 1.7e9
# TYPE vllm:spec_decode_num_draft_tokens_total counter
vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="m"} 27.0
# TYPE vllm:spec_decode_num_accepted_tokens_total counter
vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="m"} 22.0
# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_total counter
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="0"} 9.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="1"} 7.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="2"} 6.0
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{engine="0",model_name="m"} 400.0
"""


def test_the_metrics_page_gives_the_totals_and_the_positions_apart() -> None:
    got = parse_spec_counters(METRICS)
    assert got == {
        DRAFTS: 9.0,
        DRAFT_TOKENS: 27.0,
        ACCEPTED: 22.0,
        position_key("0"): 9.0,
        position_key("1"): 7.0,
        position_key("2"): 6.0,
    }
    snaps = _side("candidate", got)
    a = acceptance(snaps, "candidate")
    assert a is not None and a.length == pytest.approx(1 + 22 / 9)  # 3.44, issue 42's figure


def test_a_not_exercised_acceptance_gate_is_named_on_the_console_lines() -> None:
    from qgate.core.verdict import not_exercised_lines

    snaps = NONE + _side("candidate", _counts(0, 0, 0, [0, 0, 0]))
    failed = [v for v in evaluate_speculative(_profile(), snaps) if not v.passed]
    assert not_exercised_lines(failed) == [
        "speculative.acceptance_length: 0 drafts over the quality suites (at least 1 needed)"
    ]
