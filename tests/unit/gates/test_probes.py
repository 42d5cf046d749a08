"""The probe gate of a perf scenario: graded against the known answer, paired, exact test."""

from __future__ import annotations

from helpers.perf_runs import PROBE_TRUTH, probe, probe_run

from qgate.gates.judgement import probes_failed
from qgate.gates.probes import probe_suite, probe_verdicts
from qgate.gates.speed import evaluate_perf_gates
from qgate.perf.records import ScenarioRun
from qgate.profile import PerfProbes, PerfSpec
from qgate.profile.probe_count import probe_points

TRUTH = PROBE_TRUTH


def run(role: str, answers: dict[str, str], name: str = "chat@c8") -> ScenarioRun:
    return probe_run(role, answers, name)


RIGHT = {k: f"The answer is {v}." for k, v in TRUTH.items()}


def gates(ref: dict[str, str], cand: dict[str, str], spec: PerfProbes | None = None) -> dict:
    out = probe_verdicts(
        spec or PerfProbes(), "chat@c8", [run("reference", ref)], [run("candidate", cand)]
    )
    return {v.gate.rsplit(".", 1)[1]: v for v in out}


def test_a_candidate_wrong_under_load_fails_the_scenario() -> None:
    # digits rotated by 5 (the fault proxy's corruption): every answer wrong
    cand = {
        k: f"The answer is {''.join(str((int(c) + 5) % 10) for c in v)}." for k, v in TRUTH.items()
    }
    got = gates(RIGHT, cand)
    assert not got["max_flips"].passed and got["max_flips"].observed == 4
    assert got["max_flips"].gate == "perf.chat@c8.probes.max_flips"
    assert "4 reference and 4 candidate asks" in got["max_flips"].reason
    assert got["significance"].observed == 1 / 16
    assert probes_failed(list(got.values()), "chat@c8")


def test_one_lost_item_is_within_the_default_allowance() -> None:
    cand = {**RIGHT, "a": "The answer is 13."}
    got = gates(RIGHT, cand)
    assert got["max_flips"].passed and got["max_flips"].observed == 1
    assert not probes_failed(list(got.values()), "chat@c8")
    assert not gates(RIGHT, cand, PerfProbes(max_flips=0))["max_flips"].passed


def test_no_number_is_wrong_against_the_known_answer_not_a_disagreement() -> None:
    # A/A: both sides answer an item with no number; graded against the truth, both are
    # wrong, so no flip (as a disagreement it would have counted against the candidate)
    same = {**RIGHT, "b": "I cannot say.", "c": "seven hundred"}
    got = gates(same, dict(same), PerfProbes(max_flips=0))
    assert got["max_flips"].passed and got["max_flips"].observed == 0
    suite = probe_suite("chat@c8", "reference", [run("reference", same)])
    assert suite is not None and [i.correct for i in suite.items] == [True, False, False, True]


def test_an_item_counts_as_right_only_when_every_ask_was() -> None:
    cand = run("candidate", RIGHT)
    cand.requests.append(probe("a", "The answer is 99.", index=9))  # a second ask of a: wrong
    cand.requests.append(probe("b", "The answer is 7.", index=10, error="HTTP 500"))
    out = probe_verdicts(PerfProbes(max_flips=0), "chat@c8", [run("reference", RIGHT)], [cand])
    flips = next(v for v in out if v.gate.endswith("max_flips"))
    assert flips.observed == 2 and not flips.passed


def test_blocks_and_rounds_of_a_side_are_pooled() -> None:
    refs = [run("reference", RIGHT), run("reference", RIGHT)]
    bad = {**RIGHT, "a": "The answer is 1.", "b": "The answer is 1."}
    cands = [run("candidate", RIGHT), run("candidate", bad)]  # a broken second life
    out = probe_verdicts(PerfProbes(), "chat@c8", refs, cands)
    assert probes_failed(out, "chat@c8")


def test_a_side_without_probes_fails_and_none_at_all_gives_no_gate() -> None:
    empty = run("candidate", {})
    out = probe_verdicts(PerfProbes(), "chat@c8", [run("reference", RIGHT)], [empty])
    assert (
        len(out) == 1 and not out[0].passed and "candidate asked no graded probe" in out[0].reason
    )
    ref_empty = empty.model_copy(update={"role": "reference"})
    assert probe_verdicts(PerfProbes(), "chat@c8", [ref_empty], [empty]) == []
    assert (
        probe_verdicts(None, "chat@c8", [run("reference", RIGHT)], [run("candidate", RIGHT)]) == []
    )


def test_probe_points_spread_every_item_through_the_load() -> None:
    # early in the load, each beside workload requests still in flight, done before it ends
    assert probe_points(3, 4, 0.05) == [1, 1, 1, 1]
    assert probe_points(100, 4, 0.05) == [9, 17, 25, 33, 41]  # share wins: 5 probes
    assert probe_points(1, 2, 0.05) == [1, 1]
    # a level of 12 keeps its load only while completions are refilled: the first 12 of 40
    assert probe_points(40, 4, 0.05, in_flight=12) == [3, 6, 9, 12]
    assert probe_points(None, 4, 0.05) is None  # duration-bound: one every 1/share
    assert probe_points(10, 0, 0.05) == [] and probe_points(10, 4, 0.0) == []


def test_a_speed_gate_on_a_scenario_whose_probes_failed_fails_without_its_ratio() -> None:
    spec = PerfSpec.model_validate(
        {
            "scenarios": [
                {"name": "chat", "input_tokens": 8, "output_tokens": 4, "concurrency": [1, 8]}
            ],
            "gates": [{"metric": "output_throughput", "min_ratio": 0.9}],
        }
    )
    row = [{"metric": "output_throughput", "ratio": 1.2, "ci_low": 1.1, "ci_high": 1.3}]
    results = [("chat@c1", row), ("chat@c8", row)]
    out = evaluate_perf_gates(spec, results, withheld={"chat@c8"})
    assert [v.passed for v in out] == [True, False]
    assert out[1].observed is None and "withheld" in out[1].reason


def test_an_item_lost_at_light_load_is_left_to_the_quality_gates() -> None:
    wrong = {**RIGHT, "a": "The answer is 13.", "b": "The answer is 8."}
    cand = run("candidate", wrong)
    for r in cand.requests:  # the candidate gave these same wrong answers in its quality stage
        r.probe_expected = "13" if r.probe_id == "a" else r.probe_truth
    out = probe_verdicts(PerfProbes(max_flips=0), "chat@c8", [run("reference", RIGHT)], [cand])
    flips = next(v for v in out if v.gate.endswith("max_flips"))
    assert flips.observed == 1 and flips.n == 3  # a left out; b lost under load only
    assert "1 item(s) left out" in flips.reason
    for r in cand.requests:
        r.probe_expected = "13" if r.probe_id in ("a", "b", "c", "d") else None
    out = probe_verdicts(PerfProbes(), "chat@c8", [run("reference", RIGHT)], [cand])
    assert len(out) == 1 and not out[0].passed and "no item left to judge" in out[0].reason
