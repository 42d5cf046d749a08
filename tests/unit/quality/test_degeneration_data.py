"""The degeneration probe's grading: a loop, an empty answer and an error are not clean; prose
is, whatever its length or how it ended."""

from __future__ import annotations

from qgate.quality.degeneration_data import (
    compression_ratio,
    degeneration_data_sha256,
    grade_long,
    long_items,
)

PROSE = (
    "The keeper climbed the stairs at dusk, counting each step as his father had taught him. "
    "Outside, the wind pulled at the shutters and the sea threw itself against the rocks. "
    "He lit the lamp, checked the oil, and wrote the hour in the log with a steady hand. "
    "Far out, a ship's light blinked twice and was gone behind a swell, then came back again. "
)


def test_prose_is_clean_and_says_how_it_ended() -> None:
    grade = grade_long(PROSE * 2, "length")
    assert grade.clean and grade.failure is None
    assert grade.answer.startswith(f"{len(PROSE) * 2} chars, length, tail ratio 0.")


def test_a_loop_is_named_once_its_tail_is_long_enough_to_tell() -> None:
    looped = PROSE + "!" * 400
    assert compression_ratio("!" * 400) < 0.05 < 0.3 < compression_ratio(PROSE)
    grade = grade_long(looped, "length")
    assert not grade.clean and grade.failure == "loop"
    assert grade_long(PROSE + "the end. " * 60, "length").failure == "loop"  # a phrase loop
    assert grade_long("ok " * 20, "stop").clean  # too short to judge: not a loop


def test_empty_and_errors_are_not_clean() -> None:
    assert grade_long("  ", "stop").failure == "empty"
    assert grade_long("HTTP 500: boom", "http_error").failure == "http_error"


def test_prompts_are_distinct_and_the_digest_follows_the_settings() -> None:
    items = long_items(20)
    assert len({i.prompt for i in items}) == 20 and items[0].id == "long-0"
    assert "story" in items[0].prompt and "essay" in items[16].prompt
    base = degeneration_data_sha256(8, 1024, True)
    assert base != degeneration_data_sha256(8, 512, True)
    assert base != degeneration_data_sha256(8, 1024, False)
