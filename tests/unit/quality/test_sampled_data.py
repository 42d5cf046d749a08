"""The sampled test's requests and grading: seeds fixed by item and sample, the grade a pure
function of the stored texts, diversity the share of sample pairs that differ."""

from __future__ import annotations

import pytest

from qgate.profile.sampled import SampledSuite
from qgate.quality.sampled_data import (
    diversity,
    grade_sampled,
    output_of,
    sample_seed,
    sampled_data_sha256,
    sampled_items,
)


def test_seeds_are_fixed_by_item_and_sample_and_differ_between_them() -> None:
    seeds = {sample_seed(f"m{i}", s) for i in range(50) for s in range(8)}
    assert len(seeds) == 400 and all(0 <= s < 2**31 for s in seeds)
    assert sample_seed("m3", 2) == sample_seed("m3", 2)


def test_the_questions_are_the_first_of_the_math_set_grown_past_the_core() -> None:
    items = sampled_items(SampledSuite(prompts=300))
    assert len(items) == 300 and len({i.id for i in items}) == 300


@pytest.mark.parametrize(
    ("texts", "value"),
    [(["7"] * 4, 0.0), (["7", "8", "9", "10"], 1.0), (["7", "7 ", "8", "8"], 8 / 12)],
)
def test_diversity_is_the_share_of_sample_pairs_that_differ(texts: list[str], value: float) -> None:
    assert diversity(texts) == pytest.approx(value)


def test_the_grade_counts_right_samples_and_refuses_a_short_record() -> None:
    graded = grade_sampled(output_of(["12", "The answer is 12.", "13", "12"]), "12", 4)
    assert (graded.score, graded.correct, graded.answer) == (0.75, False, "3/4 correct, 3 distinct")
    assert grade_sampled(output_of(["12"] * 3), "12", 4).answer == "3 of 4 samples"
    assert grade_sampled("not json", "12", 4).answer == "unreadable"


def test_the_digest_moves_with_what_is_asked() -> None:
    base = sampled_data_sha256(SampledSuite())
    assert base == sampled_data_sha256(SampledSuite())
    assert base != sampled_data_sha256(SampledSuite(temperature=0.7))
    assert base != sampled_data_sha256(SampledSuite(samples=4))
