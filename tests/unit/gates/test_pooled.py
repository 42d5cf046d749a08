"""The pooled envelope gate (qgate/gates/pooled.py): every probe answer the candidate gave
while serving, perf scenarios and lives, under one Clopper-Pearson bound on the broken rate."""

from __future__ import annotations

from helpers.life_probes import RIGHT, corrupt, life, reference_quality
from helpers.perf_runs import PROBE_TRUTH, probe_run

from qgate.gates.pooled import GATE, envelope_verdicts, pool
from qgate.perf.records import ScenarioRun
from qgate.profile import EnvelopeSpec

ITEMS = list(PROBE_TRUTH)


def scenario(
    role: str, answers: dict[str, str], *, name: str = "chat@c4", block: int = 0, **kw: str
) -> ScenarioRun:
    """One block of a scenario whose probes answered `answers` (`kw`: the side's quality-stage
    answer by item where it was not the truth)."""
    return probe_run(role, answers, name, block=block, expected=kw)


def blocks(answers: dict[str, str], count: int, name: str = "chat@c4") -> list[ScenarioRun]:
    """`count` blocks of both sides: the reference right, the candidate answering `answers`."""
    return [
        run
        for b in range(count)
        for run in (
            scenario("reference", RIGHT, name=name, block=b),
            scenario("candidate", answers, name=name, block=b),
        )
    ]


def verdict(runs: list[ScenarioRun], lives=(), spec: EnvelopeSpec | None = None):
    (v,) = envelope_verdicts(spec or EnvelopeSpec(), reference_quality(), runs, list(lives))
    return v


def test_clean_answers_pooled_over_scenarios_and_lives_show_the_margin() -> None:
    runs = blocks(RIGHT, 3) + blocks(RIGHT, 3, name="agent")  # 24 perf answers
    lives = [life("candidate", "start", RIGHT), life("candidate", "idle", RIGHT)]  # 8 more
    v = verdict(runs, lives)
    assert v.passed and not v.inconclusive and v.n == 32 and v.gate == GATE
    assert v.observed is not None and 0.08 < v.observed <= 0.1  # 1 - 0.05 ** (1 / 32)
    assert "perf 0 of 24" in v.reason and "lives 0 of 8" in v.reason and "shown within" in v.reason


def test_one_scenarios_four_clean_probes_are_inconclusive_never_pass() -> None:
    v = verdict(blocks(RIGHT, 1))
    assert not v.passed and v.inconclusive and v.underpowered and v.n == 4
    assert "INCONCLUSIVE" in v.reason and "needs at least 29 judged answers" in v.reason


def test_a_garbling_under_load_the_per_scenario_alarm_misses_is_harm_shown_pooled() -> None:
    # one item of four garbled in every block of every scenario: 25% of the answers
    garbled = dict(RIGHT, a=corrupt(RIGHT["a"]))
    runs = [r for name in ("s1", "s2", "s3", "s4", "s5") for r in blocks(garbled, 4, name)]
    v = verdict(runs)
    assert not v.passed and not v.inconclusive and v.n == 80 and "harm shown" in v.reason


def test_a_sparse_garbling_is_inconclusive_not_pass() -> None:
    # 3 broken of 40: the upper bound (~18%) is past 10%, the lower (~2%) is not
    runs = blocks(RIGHT, 10)
    runs[1] = scenario("candidate", dict(RIGHT, b=corrupt(RIGHT["b"])))
    runs[3] = scenario("candidate", dict(RIGHT, c=corrupt(RIGHT["c"])), block=1)
    runs[5] = scenario("candidate", dict(RIGHT, d=corrupt(RIGHT["d"])), block=2)
    v = verdict(runs)
    assert v.inconclusive and not v.passed and v.n == 40 and "3 broken of 40" in v.reason


def test_items_the_reference_missed_there_or_the_candidate_lost_before_are_not_judged() -> None:
    wrong_a = dict(RIGHT, a="The answer is 99.")
    runs = [
        scenario("reference", wrong_a),  # the reference itself misses a under this load
        scenario("candidate", dict(wrong_a, b="The answer is 0.")),  # ... b lost before:
        scenario("candidate", RIGHT, block=1, b="The answer is 0."),  # its quality answer
    ]
    got = pool(reference_quality(), runs, [])
    assert got.asked == 8 and got.by_source["perf"] == (4, 0)  # c and d, twice each


def test_a_broken_life_counts_in_the_pool() -> None:
    bad = {k: corrupt(v) for k, v in RIGHT.items()}
    lives = [life("candidate", "start", RIGHT), life("candidate", "idle", bad, life=3)]
    got = pool(reference_quality(), blocks(RIGHT, 2), lives)
    assert got.by_source == {"perf": (8, 0), "lives": (8, 4)}
    assert got.broken == 4 and got.judged == 16 and got.asked == 16


def test_nothing_judged_is_inconclusive_and_nothing_asked_gives_no_verdict() -> None:
    lives = [life("candidate", "start", RIGHT)]
    (v,) = envelope_verdicts(EnvelopeSpec(), reference_quality(frozenset(ITEMS)), [], lives)
    assert v.inconclusive and not v.passed and v.n == 0 and "no probe answer judged" in v.reason
    assert envelope_verdicts(EnvelopeSpec(), reference_quality(), [], []) == []
    plain = [scenario("reference", {}), scenario("candidate", {})]
    assert envelope_verdicts(EnvelopeSpec(), reference_quality(), plain, []) == []


def test_the_stated_level_is_what_the_bound_is_held_to() -> None:
    runs = blocks(RIGHT, 8)  # 32 clean answers: within 10%, not within 5%
    assert verdict(runs).passed
    assert verdict(runs, spec=EnvelopeSpec(max_broken=0.05)).inconclusive
