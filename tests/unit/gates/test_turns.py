"""The graded-turn gate (qgate/gates/turns.py) over synthetic records."""

from __future__ import annotations

from qgate.gates.judgement import failed_answers, probes_failed
from qgate.gates.turns import graded_spec, own_flips, turn_accuracy, turn_verdicts
from qgate.perf.records import RequestRecord, ScenarioRun
from qgate.perf.sessions import session_turns
from qgate.profile import GradedTurns, PerfSpec

SPEC = GradedTurns(sessions=4, turns=4)


def _run(role: str, wrong: set[str], block: int = 0) -> ScenarioRun:
    """Four sessions of four turns; the graded turns in `wrong` answered wrongly."""
    reqs = []
    for k in range(4):
        for t in session_turns(0, k, 4):
            text = "OK" if t.truth is None else t.truth
            if t.id in wrong:
                text = "no idea"
            reqs.append(
                RequestRecord(
                    index=len(reqs),
                    turn=t.index,
                    scheduled_ns=0,
                    sent_ns=0,
                    first_token_ns=1,
                    done_ns=2,
                    text=text,
                    probe_truth=t.truth,
                    probe_correct=True,  # never read: the gate re-grades the text
                    graded_turn=t.id,
                )
            )
    return ScenarioRun(
        scenario="agent",
        role=role,  # type: ignore[arg-type]
        kind="multi_turn",
        gpus=1,
        duration_ns=1,
        requests=reqs,
        block=block,
    )


def test_the_same_answers_pass_and_the_turns_are_paired_by_id() -> None:
    verdicts = turn_verdicts(SPEC, "agent", [_run("reference", set())], [_run("candidate", set())])
    assert [v.gate for v in verdicts] == [
        "perf.agent.turns.max_flips",
        "perf.agent.turns.significance",
    ]
    assert all(v.passed for v in verdicts)
    assert "0 lost, 0 gained of 8" in verdicts[0].reason
    assert "max_flips 1 + 0 the reference's own flips" in verdicts[0].reason


def test_lost_turns_beyond_max_flips_fail_and_withhold_the_ratios() -> None:
    lost = {"s0.t2", "s1.t3", "s2.t2", "s3.t3", "s1.t2"}
    verdicts = turn_verdicts(SPEC, "agent", [_run("reference", set())], [_run("candidate", lost)])
    assert not verdicts[0].passed and "5 lost, 0 gained of 8" in verdicts[0].reason
    assert not verdicts[1].passed  # 5 to 0: p = 1/32 < 0.05
    assert probes_failed(verdicts, "agent") and failed_answers(verdicts, "agent") == "turns"


def test_the_reference_s_own_flips_across_its_asks_raise_the_allowance() -> None:
    lost = {"s0.t2", "s1.t3"}
    refs = [_run("reference", set()), _run("reference", lost, block=1)]  # unsure of 2 turns
    cands = [_run("candidate", lost), _run("candidate", lost, block=1)]
    assert own_flips(refs) == 2
    # every ask of a turn must be right: the reference's two unsure turns count as wrong,
    # so nothing is lost against it; with a sure reference the same 2 losses fail max_flips 1
    assert all(v.passed for v in turn_verdicts(SPEC, "agent", refs, cands))
    sure = [_run("reference", set()), _run("reference", set(), block=1)]
    strict = turn_verdicts(SPEC.model_copy(update={"significance": False}), "agent", sure, cands)
    assert not strict[0].passed and "max_flips 1 + 0" in strict[0].reason
    lost3 = lost | {"s2.t2"}
    cands3 = [_run("candidate", lost3), _run("candidate", lost3, block=1)]
    refs1 = [_run("reference", set()), _run("reference", {"s3.t3"}, block=1)]
    loose = turn_verdicts(SPEC.model_copy(update={"significance": False}), "agent", refs1, cands3)
    assert loose[0].limit == 2.0 and not loose[0].passed  # 3 lost > 1 + 1 own


def test_a_side_without_graded_turns_fails_and_none_at_all_is_no_verdict() -> None:
    empty = _run("candidate", set()).model_copy(update={"requests": []})
    verdicts = turn_verdicts(SPEC, "agent", [_run("reference", set())], [empty])
    assert len(verdicts) == 1 and not verdicts[0].passed
    assert "the candidate asked no graded turn" in verdicts[0].reason
    assert turn_verdicts(SPEC, "agent", [empty], [empty]) == []
    assert turn_verdicts(None, "agent", [_run("reference", set())], [empty]) == []


def test_accuracy_by_turn_index_counts_every_ask() -> None:
    acc = turn_accuracy([_run("candidate", {"s0.t3", "s1.t3"})])
    assert acc == {2: (4, 4), 3: (2, 4)}


def test_the_graded_block_is_found_by_the_run_name() -> None:
    spec = PerfSpec.model_validate(
        {
            "scenarios": [
                {"name": "a", "kind": "multi_turn", "graded": {"turns": 4}},
                {"name": "b", "input_tokens": 8, "output_tokens": 2, "concurrency": [1, 2]},
            ]
        }
    )
    assert graded_spec(spec, "a") == GradedTurns(turns=4)
    assert graded_spec(spec, "b@c2") is None and graded_spec(None, "a") is None
