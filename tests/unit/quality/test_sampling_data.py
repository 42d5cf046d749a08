"""The sampling canaries' grading: a pure function of the answers a record stored, honoured
when the answers show the parameter acted, and not when they show it ignored."""

from __future__ import annotations

import pytest

from qgate.quality.sampling_data import (
    PARAMS,
    Answer,
    canary,
    grade_canary,
    output_of,
    sampling_data_sha256,
    stop_word,
)


def _texts(*texts: str) -> str:
    return output_of([Answer([t], ["stop"], 5) for t in texts])


GREEDY = "The cat sat on the lamp and watched the sea."


@pytest.mark.parametrize(
    ("param", "honoured", "ignored"),
    [
        ("temperature", _texts("a b", "a c", "a b", "d"), _texts("a b", "a b", "a b", "a b")),
        ("seed", _texts("x y", "x y"), _texts("x y", "x z")),
        ("top_k", _texts(GREEDY, GREEDY), _texts(GREEDY, "A dog ran.")),
        ("top_p", _texts(GREEDY, GREEDY), _texts(GREEDY, "A dog ran.")),
        ("repetition_penalty", _texts("apple apple", "apple pie"), _texts("apple", "apple")),
        ("frequency_penalty", _texts("apple apple", "apple pie"), _texts("apple", "apple")),
        ("presence_penalty", _texts("apple apple", "apple pie"), _texts("apple", "apple")),
        (
            "max_tokens",
            output_of([Answer(["The cat sat"], ["length"], 4)]),
            output_of([Answer(["The cat sat on the lamp"], ["stop"], 7)]),
        ),
        ("stop", _texts(GREEDY, "The cat"), _texts(GREEDY, GREEDY)),
        (
            "n",
            output_of([Answer(["a", "b", "c"], ["stop"] * 3, 9)]),
            output_of([Answer(["a"], ["stop"], 3)]),
        ),
        (
            "logprobs",
            output_of([Answer(["a b"], ["stop"], 2, [3, 3])]),
            output_of([Answer(["a b"], ["stop"], 2, [])]),
        ),
    ],
)
def test_each_canary_tells_honoured_from_ignored(param: str, honoured: str, ignored: str) -> None:
    assert grade_canary(param, honoured).honoured, grade_canary(param, honoured)
    assert not grade_canary(param, ignored).honoured, grade_canary(param, ignored)


def test_every_parameter_has_a_canary_and_its_requests_say_what_they_check() -> None:
    for param in PARAMS:
        asked = canary(param, 24, 4)
        assert asked.bodies and asked.param == param
    assert [b["seed"] for b in canary("temperature", 24, 4).bodies] == [1, 2, 3, 4]
    assert canary("top_k", 24, 4).bodies[1]["top_k"] == 1
    assert canary("presence_penalty", 24, 4).bodies[1]["presence_penalty"] == 2.0
    assert canary("max_tokens", 24, 4).bodies[0]["max_tokens"] == 4
    with pytest.raises(ValueError, match="no sampling canary"):
        canary("min_p", 24, 4)


def test_what_cannot_be_read_or_was_not_answered_is_not_honoured() -> None:
    assert grade_canary("seed", "not json").answer == "unreadable"
    assert grade_canary("seed", output_of([Answer([], [None])])).answer == "no answer"
    assert grade_canary("stop", _texts("two words")).answer == "no stop word"
    assert stop_word(GREEDY) == "sat" and stop_word("one two") is None


def test_the_digest_follows_the_settings() -> None:
    base = sampling_data_sha256(["seed"], 24, 4)
    assert base == sampling_data_sha256(["seed"], 24, 4)
    assert base != sampling_data_sha256(["seed"], 32, 4)
    assert base != sampling_data_sha256(["seed", "n"], 24, 4)
