"""The life probe gate: each candidate life's start and idle probes, graded against the known
answer and paired with the reference's quality records and own life probes."""

from __future__ import annotations

from helpers.life_probes import RIGHT, TRUTH, corrupt, life, reference_quality

from qgate.gates.life import excluded_rounds, life_verdicts
from qgate.perf.life_probes import LifeProbes, life_label
from qgate.profile import LivesSpec


def by_gate(
    lives: list[LifeProbes], spec: LivesSpec | None = None, wrong: frozenset[str] = frozenset()
):
    return {v.gate: v for v in life_verdicts(spec or LivesSpec(), reference_quality(wrong), lives)}


def test_only_the_first_answer_after_the_pause_corrupted_fails_that_life() -> None:
    idle = dict(RIGHT, a=corrupt(RIGHT["a"]))  # the first request after the pause
    lives = [
        life("reference", "start", RIGHT, life=0),
        life("reference", "idle", RIGHT, life=0),
        life("candidate", "start", RIGHT),
        life("candidate", "idle", idle),
    ]
    got = by_gate(lives)
    assert set(got) == {"lives.candidate.2.start", "lives.candidate.2.idle"}  # no reference verdict
    assert got["lives.candidate.2.start"].passed
    failed = got["lives.candidate.2.idle"]
    assert not failed.passed and failed.observed == 1 and failed.n == 4 and failed.limit == 0
    assert "candidate life 2 (round 1) after 30 s idle: lost 1 of 4" in failed.reason
    assert failed.reason.endswith(": a")


def test_the_allowance_lets_one_loss_pass() -> None:
    idle = dict(RIGHT, a=corrupt(RIGHT["a"]))
    got = by_gate([life("candidate", "idle", idle)], LivesSpec(max_flips=1))
    assert got["lives.candidate.2.idle"].passed


def test_the_reference_own_miss_of_the_same_kind_is_its_noise_not_a_loss() -> None:
    wrong_b = dict(RIGHT, b="The answer is 8.")
    lives = [
        life("reference", "idle", wrong_b, life=0),  # the reference itself misses b after idle
        life("candidate", "idle", wrong_b),
        life("candidate", "start", wrong_b),  # ... but not at its start: there b is a loss
    ]
    got = by_gate(lives)
    assert got["lives.candidate.2.idle"].passed and got["lives.candidate.2.idle"].n == 3
    assert not got["lives.candidate.2.start"].passed


def test_an_item_the_reference_lost_in_its_quality_stage_is_not_judged() -> None:
    cand = dict(RIGHT, c="no idea")
    got = by_gate([life("candidate", "start", cand)], wrong=frozenset({"c"}))
    assert got["lives.candidate.2.start"].passed and got["lives.candidate.2.start"].n == 3


def test_no_number_is_wrong_and_the_stored_grade_is_ignored() -> None:
    cand = dict(RIGHT, d="I cannot say.")
    got = by_gate([life("candidate", "start", cand)])
    assert not got["lives.candidate.2.start"].passed


def test_a_life_with_nothing_to_judge_is_inconclusive_and_keeps_its_round() -> None:
    lives = [life("candidate", "idle", RIGHT)]
    v = by_gate(lives, wrong=frozenset(TRUTH))["lives.candidate.2.idle"]
    assert not v.passed and v.inconclusive and v.underpowered and v.n == 0
    assert v.reason.startswith("INCONCLUSIVE: ")
    assert v.reason.endswith("nothing shows this life answers right")
    verdicts = life_verdicts(LivesSpec(), reference_quality(frozenset(TRUTH)), lives)
    assert excluded_rounds(lives, verdicts) == set()  # not shown broken: its ratios stay


def test_before_the_pooled_derivation_a_life_with_nothing_to_judge_passed() -> None:
    runs = reference_quality(frozenset(TRUTH))
    (v,) = life_verdicts(LivesSpec(), runs, [life("candidate", "idle", RIGHT)], pooled=False)
    assert v.passed and v.underpowered and not v.inconclusive and v.n == 0


def test_each_life_of_each_round_is_named_and_a_failed_one_excludes_its_round() -> None:
    bad = {k: corrupt(v) for k, v in RIGHT.items()}
    lives = [
        life("candidate", "start", RIGHT, life=1, round=0),
        life("candidate", "start", bad, life=3, round=1, side="int8", node="10.0.0.2 (abc)"),
        life("candidate", "start", RIGHT, life=5, round=2, side="int8"),
    ]
    verdicts = life_verdicts(LivesSpec(), reference_quality(), lives)
    failed = [v for v in verdicts if not v.passed]
    assert [v.gate for v in failed] == ["lives.int8.4.start"]
    assert (
        "int8 life 4 (round 2, node 10.0.0.2 (abc)) at its start: lost 4 of 4" in failed[0].reason
    )
    assert excluded_rounds(lives, verdicts) == {1}
    assert life_label(lives[0]) == "candidate life 2 (round 1)"


def test_no_failed_life_excludes_nothing() -> None:
    lives = [life("candidate", "start", RIGHT)]
    assert excluded_rounds(lives, life_verdicts(LivesSpec(), reference_quality(), lives)) == set()


def test_an_item_the_candidate_lost_in_its_quality_stage_is_left_to_the_quality_gates() -> None:
    cand = dict(RIGHT, b="The answer is 8.")
    runs = reference_quality() + reference_quality(frozenset({"b"}), role="candidate")
    got = {v.gate: v for v in life_verdicts(LivesSpec(), runs, [life("candidate", "start", cand)])}
    v = got["lives.candidate.2.start"]
    assert v.passed and v.n == 3 and "lost in the candidate's quality stage" in v.reason
    # the same answer, with the candidate right on b in its quality stage: a loss of the life
    runs = reference_quality() + reference_quality(role="candidate")
    got = {v.gate: v for v in life_verdicts(LivesSpec(), runs, [life("candidate", "start", cand)])}
    assert not got["lives.candidate.2.start"].passed


def test_a_probe_is_judged_against_the_references_own_probe_of_its_kind_not_its_batch() -> None:
    # the reference's quality stage (a batch) had b right; its own start probes (alone) asked
    # a and c only; the candidate, alone too, answers b wrong, as the reference alone would
    # have: on a kind whose numerics vary with the batch that was an A/A's false alarm (CI)
    ref = life("reference", "start", {"a": RIGHT["a"], "c": RIGHT["c"]}, life=0)
    cand = life("candidate", "start", dict(RIGHT, b="The answer is 8."))
    now = by_gate([ref, cand])["lives.candidate.2.start"]
    assert now.passed and now.n == 2  # a and c judged; b never answered alone by the reference
    assert "not answered right by the reference's own probes of this kind" in now.reason
    before = {
        v.gate: v for v in life_verdicts(LivesSpec(), reference_quality(), [ref, cand], alone=False)
    }["lives.candidate.2.start"]
    assert not before.passed and before.n == len(RIGHT)  # perf derivation 9's rule
    # a kind the reference asked none of (idle here) keeps the quality-stage basis
    idle = life("candidate", "idle", dict(RIGHT, b="The answer is 8."))
    assert not by_gate([ref, idle])["lives.candidate.2.idle"].passed
    # a loss against the reference's own probe of the kind still fails
    lost = life("candidate", "start", dict(RIGHT, a=corrupt(RIGHT["a"])))
    assert not by_gate([ref, lost])["lives.candidate.2.start"].passed
