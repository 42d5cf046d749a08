"""The reference's own lives graded (issue 53 item 5, perf derivation 12): a broken reference life
is INCONCLUSIVE, named by life, round and node, its round kept out of the ratios, and the
candidate's lives of its round and kind are not judged against it."""

from __future__ import annotations

from helpers.life_probes import RIGHT, corrupt, life, reference_quality
from helpers.report_synthetic import PROFILE

from qgate.gates.judge import lives_judged
from qgate.gates.judgement import Derivation, Evidence
from qgate.gates.life import life_verdicts
from qgate.gates.reference_lives import reference_lives
from qgate.perf.life_probes import LifeProbes
from qgate.profile import LivesSpec, Profile
from qgate.quality.records import SuiteRun

BAD = {k: corrupt(v) for k, v in RIGHT.items()}
THREE_BAD = dict(BAD, d=RIGHT["d"])  # 3 of 4 lost


def _rounds(ref: list[dict[str, str]], kind: str = "start") -> list[LifeProbes]:
    """One reference and one candidate life per round, the reference's answers `ref[k]` in
    round k, the candidate's all right."""
    out = []
    for k, answers in enumerate(ref):
        out.append(life("reference", kind, answers, life=2 * k, round=k))
        out.append(life("candidate", kind, RIGHT, life=2 * k + 1, round=k))
    return out


def _section(lives: list[LifeProbes], perf: int = 12, host: str | None = "ci-host"):
    profile = Profile.model_validate(PROFILE)
    runs: tuple[SuiteRun, ...] = tuple(reference_quality() + reference_quality(role="candidate"))
    evidence = Evidence(runs=runs, life_probes=tuple(lives), host=host)
    section = lives_judged(profile, evidence, Derivation(perf=perf))
    assert section is not None
    return section, {v.gate: v for v in section.verdicts}


def test_healthy_reference_lives_pass_as_evidence_the_baseline_held() -> None:
    section, got = _section(_rounds([RIGHT, RIGHT, RIGHT]))
    ref = [g for g in got if g.startswith("lives.reference.")]
    assert ref == ["lives.reference.1.start", "lives.reference.3.start", "lives.reference.5.start"]
    v = got["lives.reference.3.start"]
    assert v.passed and not v.inconclusive and v.n == 4 and v.observed == 0
    assert v.reason.startswith("reference life 3 (round 2, node ci-host) at its start: lost 0")
    assert section.excluded_rounds == [] and all(v.passed for v in section.verdicts)


def test_a_broken_reference_life_is_inconclusive_named_and_its_round_kept_out() -> None:
    section, got = _section(_rounds([RIGHT, THREE_BAD, RIGHT]))
    v = got["lives.reference.3.start"]
    assert not v.passed and v.inconclusive and v.observed == 3 and v.n == 4
    assert v.reason.startswith(
        "INCONCLUSIVE: reference life 3 (round 2, node ci-host) at its start: lost 3 of 4 "
        "judged probe(s) the reference answered right in its quality stage or here (3 of the 4 "
        "another "
        "life of this kind answered right, limit 0): a, b, c; a broken reference life: its "
        "round is kept out of the ratios"
    )
    assert section.excluded_rounds == [1]
    # the candidate's life of that round is not judged against it; the others are, against
    # the healthy lives' floor (the broken life's wrong answers set none)
    cand = got["lives.candidate.4.start"]
    assert cand.inconclusive and not cand.passed
    assert "the reference's life of this round, reference life 3 (round 2, node ci-host)" in (
        cand.reason
    )
    for gate in ("lives.candidate.2.start", "lives.candidate.6.start"):
        assert got[gate].passed and got[gate].n == 4
    assert got["lives.reference.1.start"].passed and got["lives.reference.5.start"].passed


def test_a_cluster_life_is_named_by_its_own_node() -> None:
    lives = _rounds([RIGHT, RIGHT])
    lives[2] = life("reference", "start", BAD, life=2, round=1, node="10.0.0.7 (ffffffffffff)")
    _, got = _section(lives)
    assert "reference life 3 (round 2, node 10.0.0.7 (ffffffffffff)) at its start" in (
        got["lives.reference.3.start"].reason
    )


def test_a_candidate_life_lost_beside_a_broken_reference_is_inconclusive_not_failed() -> None:
    lives = _rounds([RIGHT, BAD])
    lives[3] = life("candidate", "start", BAD, life=3, round=1)  # the round's node garbles both
    section, got = _section(lives)
    cand = got["lives.candidate.4.start"]
    assert cand.inconclusive and not cand.passed and cand.observed == 4
    assert section.excluded_rounds == [1]


def test_the_lone_reference_life_of_a_kind_is_broken_only_when_nothing_is_right() -> None:
    # one life, one round: its answer alone is judged against a batched one; a CPU kind whose
    # numerics vary with the batch loses an item there on an A/A, which is not a broken life
    one_off = dict(RIGHT, b="The answer is 8.")
    section, got = _section([life("reference", "start", one_off, life=0)])
    v = got["lives.reference.1.start"]
    assert v.passed and v.observed == 1 and v.n == 4 and v.limit == 3
    assert "1 of the 4 no other life of this kind asked, against the batched answer only" in (
        v.reason
    )
    assert section.excluded_rounds == []
    section, got = _section([life("reference", "start", BAD, life=0)])
    v = got["lives.reference.1.start"]
    assert v.inconclusive and not v.passed and section.excluded_rounds == [0]
    # one judged item, lost alone: as often the batch's doing as a fault's, not broken
    # (MIN_BROKEN 2); two of two lost are
    spec, runs = LivesSpec(), reference_quality(frozenset({"b", "c", "d"}))
    (v,) = reference_lives(spec, runs, [life("reference", "start", BAD, life=0)]).verdicts
    assert v.passed and v.n == 1 and v.observed == 1 and v.limit == 1
    runs = reference_quality(frozenset({"c", "d"}))
    graded = reference_lives(spec, runs, [life("reference", "start", BAD, life=0)])
    assert graded.verdicts[0].inconclusive and graded.verdicts[0].n == 2 and graded.broken


def test_with_siblings_a_loss_past_max_flips_breaks_the_life() -> None:
    one_off = dict(RIGHT, b="The answer is 8.")
    spec = LivesSpec()
    lives = [
        life("reference", "idle", RIGHT, life=0, round=0),
        life("reference", "idle", one_off, life=2, round=1),
    ]
    runs = reference_quality()
    broken = reference_lives(spec, runs, lives).broken
    assert [p.life for p in broken] == [2]
    assert reference_lives(LivesSpec(max_flips=1), runs, lives).broken == ()


def test_a_life_that_judged_nothing_passes_only_beside_one_that_judged() -> None:
    # the first life's start probes are the set's first items, asked before the quality stage:
    # here all wrong in it and wrong alone too, so that life judges nothing while a later one
    # judges its own
    wrong = frozenset({"a", "b"})
    first = life("reference", "start", {"a": BAD["a"], "b": BAD["b"]}, life=0)
    later = life("reference", "start", RIGHT, life=2, round=1)
    spec, runs = LivesSpec(), reference_quality(wrong)
    graded = reference_lives(spec, runs, [first, later])
    v = {v.gate: v for v in graded.verdicts}["lives.reference.1.start"]
    assert v.passed and v.underpowered and v.n == 0 and graded.broken == ()
    # answered right alone where the batch missed them: judged on them (the very floor the
    # candidate's life is judged on), not a life that showed nothing
    right_alone = life("reference", "start", {"a": RIGHT["a"], "b": RIGHT["b"]}, life=0)
    (v,) = reference_lives(spec, runs, [right_alone]).verdicts
    assert v.passed and not v.inconclusive and v.n == 2 and v.observed == 0
    alone = reference_lives(spec, runs, [first])
    (v,) = alone.verdicts
    assert not v.passed and v.inconclusive and v.n == 0 and alone.broken == ()
    assert "no reference life of this kind judged an item" in v.reason


def test_derivation_11_keeps_its_rules_no_reference_verdict() -> None:
    section, got = _section(_rounds([RIGHT, THREE_BAD]), perf=11)
    assert not [g for g in got if g.startswith("lives.reference.")]
    assert section.excluded_rounds == []  # the broken reference life's round stayed in
    assert got["lives.candidate.4.start"].passed and got["lives.candidate.4.start"].n == 1
    # the same records by derivation 12: the run is not passed silently
    section, got = _section(_rounds([RIGHT, THREE_BAD]))
    assert section.excluded_rounds == [1] and got["lives.candidate.4.start"].inconclusive


def test_life_verdicts_without_the_reference_graded_are_as_before() -> None:
    lives = _rounds([RIGHT, BAD])
    before = life_verdicts(LivesSpec(), reference_quality(), lives)
    assert [v.gate for v in before] == ["lives.candidate.2.start", "lives.candidate.4.start"]
    assert all(v.inconclusive for v in before)  # a floor emptied by the broken life: n = 0
