"""The most probe answers a run can pool for the envelope gate (qgate/profile/probe_count.py),
each count at its most: what `qgate validate` holds against the margin's clean answers."""

from __future__ import annotations

from typing import Any

from qgate.profile import Profile
from qgate.profile.probe_count import Answers, most_answers, probes_of

BASE: dict[str, Any] = {
    "name": "t",
    "model": {"embedded": "smollm2"},
    "candidate": {"emulate_weights": {"format": "fp8_e4m3"}},
    "quality": {"math": {"prompts": ["short"], "max_drop": 0.2, "limit": 16}},
}
LEVELS = {"name": "chat", "input_tokens": 64, "output_tokens": 8, "concurrency": [1, 4]}


def _profile(**extra: Any) -> Profile:
    return Profile.model_validate({**BASE, **extra})


def test_without_perf_the_first_life_asks_start_and_idle_probes() -> None:
    assert most_answers(_profile(), 16) == Answers(0, 8)
    assert most_answers(_profile(lives={"idle_s": 0}), 16) == Answers(0, 4)


def test_perf_blocks_count_at_two_unless_the_run_is_in_sequence() -> None:
    perf = {"scenarios": [LEVELS], "probes": {"items": 3}}
    assert most_answers(_profile(perf=perf), 16) == Answers(3 * 2 * 2, 8)  # 2 levels, 2 blocks
    sequence = _profile(perf=perf, engine={"placement": "sequence"})
    assert most_answers(sequence, 16) == Answers(3 * 2, 8)
    assert most_answers(_profile(perf={**perf, "blocks": 5}), 16) == Answers(3 * 2 * 5, 8)


def test_rounds_repeat_the_perf_and_start_a_life_each() -> None:
    perf = {"scenarios": [LEVELS], "probes": {"items": 3}, "rounds": 3}
    assert most_answers(_profile(perf=perf), 16) == Answers(3 * 2 * 2 * 3, 8 * 3)


def test_a_math_set_smaller_than_asked_caps_every_probe_set() -> None:
    perf = {"scenarios": [LEVELS], "probes": {"items": 8}}
    assert most_answers(_profile(perf=perf, lives={"probes": 8}), 2) == Answers(2 * 2 * 2, 4)


def test_a_share_of_many_requests_asks_more_than_the_items() -> None:
    many = {**LEVELS, "concurrency": 1, "requests": 200}
    assert probes_of(200, 3, 0.05) == 10
    assert most_answers(_profile(perf={"scenarios": [many], "probes": {"items": 3}}), 16) == (
        Answers(10 * 2, 8)
    )


def test_a_duration_bound_scenario_has_no_most() -> None:
    timed = {**LEVELS, "duration_s": 30}
    assert most_answers(_profile(perf={"scenarios": [timed]}), 16) is None
    assert probes_of(10**15, 4, 0.05) == 5 * 10**13  # counted, never placed one by one
