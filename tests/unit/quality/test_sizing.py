"""Sample sizes from `detect: {drop, power}`: the count reaches the power, the sets grow to it."""

from __future__ import annotations

import pytest

from qgate.profile import Detect, LmEvalTask, MathSuite, RecallSuite
from qgate.quality.math_suite import load_math_set, math_data_sha256
from qgate.quality.sizing import (
    achieved_power,
    items_needed,
    lmeval_limit,
    math_limit,
    recall_haystacks,
)


@pytest.mark.parametrize(
    ("drop", "alpha", "discordance"),
    [(0.15, 0.0167, None), (0.05, 0.05, None), (0.1, 0.05, 0.3), (0.02, 0.05, None)],
)
def test_the_count_reaches_the_stated_power_and_half_of_it_does_not(
    drop: float, alpha: float, discordance: float | None
) -> None:
    detect = Detect(drop=drop, discordance=discordance)
    sizing = items_needed(detect, alpha)
    assert sizing.needed == sizing.used and not sizing.capped
    assert sizing.power_at_used >= 0.8
    assert achieved_power(sizing.used // 2, drop, sizing.discordance, alpha) < 0.8
    assert sizing.discordance == (discordance if discordance is not None else 2 * drop)


def test_more_flips_both_ways_need_more_items() -> None:
    quiet = items_needed(Detect(drop=0.05, discordance=0.05), 0.05).used
    noisy = items_needed(Detect(drop=0.05, discordance=0.3), 0.05).used
    assert noisy > 3 * quiet


def test_the_bound_caps_the_count_and_says_so() -> None:
    sizing = items_needed(Detect(drop=0.01, max_items=200), 0.05)
    assert sizing.needed is None and sizing.used == 200 and sizing.capped
    assert sizing.power_at_used < 0.8


def test_suites_take_the_count_in_their_own_unit() -> None:
    detect = Detect(drop=0.1)
    n = items_needed(detect, 0.05).used
    assert math_limit(MathSuite(limit=10, detect=detect)) == n  # replaces limit
    assert math_limit(MathSuite(limit=10)) == 10
    recall = RecallSuite(depths=[0.1, 0.5, 0.9], haystacks=1, detect=detect)
    assert recall_haystacks(recall) == -(-n // 3)
    assert recall_haystacks(RecallSuite(haystacks=2)) == 2
    assert lmeval_limit(LmEvalTask(task="t", detect=detect)) == n


def test_the_core_math_set_grows_past_its_shipped_items_the_same_way_every_time() -> None:
    core, _ = load_math_set(None)
    grown, _ = load_math_set(None, len(core) + 150)
    assert [i.id for i in grown[: len(core)]] == [i.id for i in core]
    extra = grown[len(core) :]
    assert len(extra) == 150 and all(i.id.startswith("x") for i in extra)
    assert len({i.question for i in grown}) == len(grown)  # no question asked twice
    assert load_math_set(None, len(core) + 150)[0] == grown
    sized = MathSuite(detect=Detect(drop=0.05))  # needs more than the core set
    count = math_limit(sized)
    assert count is not None and count > len(core)
    digest = math_data_sha256(sized, "short", max_model_len=None)
    # the digest (and so the reference cache key) follows the items asked, not how
    assert digest == math_data_sha256(MathSuite(limit=count), "short", max_model_len=None)
    assert digest != math_data_sha256(MathSuite(), "short", max_model_len=None)


def test_a_capped_detection_is_a_report_warning() -> None:
    from qgate.profile import Profile
    from qgate.run.report import capped_detections

    def profile(max_items: int) -> Profile:
        math = {"detect": {"drop": 0.02, "max_items": max_items}, "prompts": ["long"]}
        return Profile.model_validate(
            {
                "name": "p",
                "model": {"embedded": "smollm2"},
                "candidate": {},
                "quality": {"math": math},
            }
        )

    (line,) = capped_detections(profile(300))
    assert line.startswith(
        "math.long: detect 2.0 pts at power 0.8 needs more than "
        "detect.max_items 300; it ran 300 items (power 0."
    )
    assert capped_detections(profile(5000)) == []
