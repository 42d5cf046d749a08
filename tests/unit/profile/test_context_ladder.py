"""The context ladder's buckets: every power of two inside one, items on both sides of it."""

from __future__ import annotations

from pathlib import Path

import pytest

from qgate.errors import ProfileError
from qgate.profile import ContextLadder, Profile
from qgate.profile.context_ladder import (
    Bucket,
    bucket_of_suite,
    buckets,
    first_cliff,
    item_id,
    parse_item_id,
    targets,
)
from qgate.profile.load import parse_profile_text
from qgate.profile.suites import exact_results

LIMITS = [2048, 4096, 8192, 10_000, 32_768, 131_072, 163_840]


def _holding(found: list[Bucket], tokens: int) -> list[Bucket]:
    return [b for b in found if b.lo <= tokens < b.hi]


@pytest.mark.parametrize("limit", LIMITS)
def test_every_power_of_two_up_to_the_limit_falls_strictly_inside_one_bucket(limit: int) -> None:
    found = buckets(1024, limit)
    power = 1024
    while power <= limit:
        holders = _holding(found, power)
        assert len(holders) == 1, (power, found)
        b = holders[0]
        assert b.centre == power
        # strictly inside: the power and its neighbours on both sides share the bucket
        assert b.lo < power
        if power < limit:  # the limit itself has no power + 1 to serve
            assert power + 1 < b.hi, (power, b)
        power *= 2


@pytest.mark.parametrize("limit", LIMITS)
def test_buckets_tile_the_ladder_without_gaps_up_to_the_limit(limit: int) -> None:
    found = buckets(1024, limit)
    assert found[0].lo == 724  # 1024 / sqrt(2)
    for a, b in zip(found, found[1:], strict=False):
        assert a.hi == b.lo
    assert found[-1].hi == limit + 1  # the top bucket ends at the model's limit
    assert all(b.lo < b.hi for b in found)


def test_the_smollm2_ladder_has_the_half_power_edges() -> None:
    assert [(b.centre, b.lo, b.hi) for b in buckets(1024, 8192)] == [
        (1024, 724, 1448),
        (2048, 1448, 2896),
        (4096, 2896, 5793),
        (8192, 5793, 8193),
    ]
    # 2,048/2,049 (vLLM #39303's cliff) and 4,096/4,097 share a bucket each
    assert _holding(buckets(1024, 8192), 2048) == _holding(buckets(1024, 8192), 2049)
    assert _holding(buckets(1024, 8192), 4096) == _holding(buckets(1024, 8192), 4097)


@pytest.mark.parametrize("count", [2, 4, 6, 8])
def test_an_even_count_puts_as_many_items_below_the_power_as_above_it(count: int) -> None:
    for b in buckets(1024, 131_072)[:-1]:
        t = targets(b, count)
        assert all(b.lo <= x < b.hi for x in t)
        assert sum(x < b.centre for x in t) == sum(x > b.centre for x in t) == count // 2


def test_targets_of_a_clipped_top_bucket_stay_below_the_clip() -> None:
    top = buckets(1024, 8192)[-1]
    t = targets(top, 4, 8032)
    assert max(t) <= 8032 and min(t) >= top.lo and t == sorted(t)


def test_item_ids_round_trip_and_name_their_bucket() -> None:
    text = item_id(2048, 3, 2233, 0.5)
    assert text == "context.2048.i3.t2233.d50"
    assert parse_item_id(text) == (2048, 3, 2233, 50)
    assert parse_item_id("recall.2048.h0.d0-10") is None
    assert bucket_of_suite("context.4096") == 4096
    assert bucket_of_suite("recall.4096") is None


def test_the_cliff_is_the_shortest_failing_bucket_not_the_first_listed() -> None:
    assert first_cliff({8192: True, 1024: False, 4096: True, 2048: False}) == 4096
    assert first_cliff({1024: False, 2048: False}) is None


def test_each_bucket_is_its_own_gated_result_in_the_registry() -> None:
    prof = Profile.model_validate(
        {
            "name": "t",
            "model": {"embedded": "smollm2"},
            "candidate": {"args": {"kv_cache_dtype": "fp8"}},
            "quality": {"context_ladder": {"up_to": 8192, "max_flips": 0}},
        }
    )
    ids = [rid for rid, _ in exact_results(prof.quality)]
    assert ids == ["context.1024", "context.2048", "context.4096", "context.8192"]


@pytest.mark.parametrize(
    ("body", "where"),
    [
        ("{up_to: 8192, start: 1000}", "quality.context_ladder.start"),
        ("{up_to: 512}", "quality.context_ladder.up_to"),
        ("{up_to: 8192, per_bucket: 0}", "quality.context_ladder.per_bucket"),
        ("{per_bucket: 4}", "quality.context_ladder.up_to"),
    ],
)
def test_a_bad_ladder_names_its_key(body: str, where: str) -> None:
    text = (
        "name: t\nmodel: {embedded: smollm2}\ncandidate: {args: {kv_cache_dtype: fp8}}\n"
        f"quality:\n  context_ladder: {body}\n"
    )
    with pytest.raises(ProfileError) as caught:
        parse_profile_text(text, "p.yaml", Path("."), check_files=False)
    assert any(where in line for line in caught.value.details), caught.value.details


def test_the_model_default_is_a_recall_item_per_depth_in_turn() -> None:
    spec = ContextLadder(up_to=4096)
    assert spec.per_bucket == 8 and spec.depths == [0.1, 0.5, 0.9]


def test_per_bucket_beside_detect_is_refused_as_inert() -> None:
    text = (
        "name: t\nmodel: {embedded: smollm2}\ncandidate: {args: {kv_cache_dtype: fp8}}\n"
        "quality:\n  context_ladder: {up_to: 8192, per_bucket: 4, detect: {drop: 0.3}}\n"
    )
    with pytest.raises(ProfileError) as caught:
        parse_profile_text(text, "p.yaml", Path("."), check_files=False)
    assert any("context_ladder.per_bucket: detect sizes" in x for x in caught.value.details)


def test_buckets_beyond_max_model_len_are_refused_at_validate_naming_the_top() -> None:
    text = (
        "name: t\nmodel: {embedded: smollm2}\nengine: {args: {max_model_len: 2048}}\n"
        "candidate: {args: {kv_cache_dtype: fp8}}\n"
        "quality:\n  context_ladder: {up_to: 8192}\n"
    )
    with pytest.raises(ProfileError) as caught:
        parse_profile_text(text, "p.yaml", Path("."), check_files=False)
    (line,) = caught.value.details
    assert "quality.context_ladder.up_to:" in line and "at most 1888 tokens" in line
    assert "bucket(s) [4096, 8192]" in line
    # the top bucket only clipped (8,192 positions hold 8,032 haystack tokens) is fine
    ok = text.replace("max_model_len: 2048", "max_model_len: 8192")
    assert parse_profile_text(ok, "p.yaml", Path("."), check_files=False).quality.context_ladder


def test_the_room_margin_is_the_recall_suites() -> None:
    from qgate.profile.context_ladder import ROOM_MARGIN_TOKENS
    from qgate.quality.recall_suite import MARGIN_TOKENS

    assert ROOM_MARGIN_TOKENS == MARGIN_TOKENS
