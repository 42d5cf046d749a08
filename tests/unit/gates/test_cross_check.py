"""The divergence cross-check (issue 55 item 4): a speculating candidate's scores against its
own greedy generation; scores the second path contradicts pass no divergence gate."""

from __future__ import annotations

import math
from typing import Any

import pytest

from qgate.gates.assembly import candidate_verdicts
from qgate.gates.cross_check import CROSS_CHECK_FROM, cross_check_verdicts, cross_summary
from qgate.gates.quality import evaluate_divergence
from qgate.profile import Profile
from qgate.profile.spec_plan import cross_check_notes, cross_checked
from qgate.quality.records import CrossSequence, DivergenceRun, DivergenceSequence

NGRAM = '{"method":"ngram","num_speculative_tokens":3,"prompt_lookup_max":3}'
TOKENS = [5, 6, 7, 8]


def _profile(spec_cand: bool = True, **divergence: Any) -> Profile:
    return Profile.model_validate(
        {
            "name": "t",
            "model": {"embedded": "smollm2"},
            "candidate": {"args": {"speculative_config": NGRAM} if spec_cand else {}},
            "quality": {
                "divergence": {"sequences": 2, "tokens": 4, "max_mean_kld": 1.0, **divergence}
            },
        }
    )


def _dist(top: int, p_top: float) -> tuple[list[int], list[float]]:
    """Two tokens: `top` with probability p_top, token 1 with the rest."""
    ids = sorted({top, 1})
    lps = [math.log(p_top) if i == top else math.log(1 - p_top) for i in ids]
    return ids, lps


def _seq(sid: str, p_top: float = 0.9) -> DivergenceSequence:
    tops = [_dist(t, p_top) for t in TOKENS]
    return DivergenceSequence(
        id=sid,
        prompt_sha256="0" * 64,
        token_ids=TOKENS,
        kld=[0.0] * 4,
        top1_agree=[True] * 4,
        delta_p=[0.0] * 4,
        reference_top_ids=[i for i, _ in tops],
        reference_top_logprobs=[lp for _, lp in tops],
        candidate_top_ids=[i for i, _ in tops],
        candidate_top_logprobs=[lp for _, lp in tops],
    )


def _cross(sid: str, p_top: float = 0.9, tokens: list[int] = TOKENS) -> CrossSequence:
    tops = [_dist(t, p_top) for t in tokens]
    return CrossSequence(
        id=sid,
        token_ids=tokens,
        top_ids=[i for i, _ in tops],
        top_logprobs=[lp for _, lp in tops],
    )


def _run(cross: list[CrossSequence] | None) -> DivergenceRun:
    return DivergenceRun(
        data_sha256="0" * 64,
        top_k=2,
        tokens=4,
        sequences=[_seq("a"), _seq("b")],
        cross_check=cross,
    )


def _gates(profile: Profile, run: DivergenceRun | None) -> dict[str, Any]:
    assert profile.quality.divergence is not None
    made = evaluate_divergence(profile.quality.divergence, run)
    return {v.gate: v for v in cross_check_verdicts(profile, run, made)}


def test_scores_that_agree_with_the_generation_pass() -> None:
    gates = _gates(_profile(), _run([_cross("a"), _cross("b")]))
    check = gates["divergence.cross_check"]
    assert check.passed and check.observed == pytest.approx(0.0, abs=1e-12), check.reason
    assert check.n == 8 and "worst sequence" in check.reason
    assert gates["divergence.max_mean_kld"].passed


def test_bent_scores_fail_the_check_and_every_divergence_gate_as_not_trusted() -> None:
    # the generation path says 0.5/0.5 where the scores said 0.9/0.1: mean KL 0.368 > 0.05
    run = _run([_cross("a"), _cross("b", p_top=0.5)])
    s = cross_summary(run)
    assert s.worst_id == "b" and s.positions == 8 and not s.missing
    assert s.worst == pytest.approx(0.9 * math.log(1.8) + 0.1 * math.log(0.2))
    gates = _gates(_profile(), run)
    check = gates["divergence.cross_check"]
    assert not check.passed and check.reason.startswith("NOT TRUSTED: ")
    kld = gates["divergence.max_mean_kld"]  # its own figure is within its limit
    assert not kld.passed and kld.reason.startswith("NOT TRUSTED (divergence.cross_check")
    assert kld.observed == pytest.approx(0.0)


def test_a_missing_second_path_is_not_trusted_never_passed() -> None:
    for cross in (None, [_cross("a")]):
        gates = _gates(_profile(), _run(cross))
        assert not gates["divergence.cross_check"].passed
        assert "no second path" in gates["divergence.cross_check"].reason
        assert not gates["divergence.max_mean_kld"].passed
    assert not _gates(_profile(), None)["divergence.cross_check"].passed


def test_positions_are_compared_up_to_the_first_token_past_the_common_prefix() -> None:
    """Once the generation leaves the reference's tokens its contexts differ: position 2 (the
    first differing token) still had the scored context, position 3 did not."""
    off = _cross("a", tokens=[5, 6, 9, 9])
    assert cross_summary(_run([off, _cross("b")])).positions == 3 + 4


def test_a_nan_score_is_the_worst() -> None:
    bent = _cross("b")
    bent.top_logprobs[0][0] = float("nan")
    gates = _gates(_profile(), _run([_cross("a"), bent]))
    assert not gates["divergence.cross_check"].passed


def test_who_is_cross_checked_and_what_the_plan_says() -> None:
    assert cross_checked(_profile())
    assert not cross_checked(_profile(spec_cand=False))
    assert cross_checked(_profile(spec_cand=False, cross_check="always"))
    plain = _profile(spec_cand=False)
    assert _gates(plain, _run(None)).keys() == {"divergence.max_mean_kld"}  # not asked
    (note,) = cross_check_notes(_profile())
    assert "the candidate speculates" in note and "8 generated tokens" in note
    assert cross_check_notes(plain) == []


def test_the_gate_joins_from_quality_derivation_5() -> None:
    profile, run = _profile(), _run([_cross("a"), _cross("b", p_top=0.5)])

    def made(derivation: int) -> list[str]:
        out = candidate_verdicts(profile, [], run, [], [], [], None, derivation=derivation)
        return [v.gate for v in out if v.gate.startswith("divergence.")]

    assert made(CROSS_CHECK_FROM) == ["divergence.max_mean_kld", "divergence.cross_check"]
    assert made(CROSS_CHECK_FROM - 1) == ["divergence.max_mean_kld"]


def test_a_divergence_stopped_before_it_ran_leaves_the_check_unsettled_too() -> None:
    """`stop: verdict`: the quality stage stopped on a settled FAIL before divergence ran."""
    profile = _profile()
    assert profile.quality.divergence is not None
    why = "divergence: not run: the quality stage stopped once the verdict was FAIL (x settled)"
    made = [
        v.model_copy(update={"settled": False, "reason": why})
        for v in evaluate_divergence(profile.quality.divergence, None)
    ]
    gates = {v.gate: v for v in cross_check_verdicts(profile, None, made)}
    check = gates["divergence.cross_check"]
    assert not check.passed and not check.settled and check.reason == why
    assert gates["divergence.max_mean_kld"].reason == why  # not marked NOT TRUSTED
