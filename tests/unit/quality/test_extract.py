"""Answer extraction edge cases: markers, separators, signs, punctuation, words."""

from __future__ import annotations

import pytest

from qgate.quality.extract import (
    answer_matches,
    canonical_number,
    extract_number,
    extract_symbol,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("42", "42"),
        ("The sum is 42", "42"),
        ("3 + 4 = 7", "7"),
        ("7.", "7"),
        ("The answer is 12.", "12"),
        ("the answer is: 15", "15"),
        ("Answer: -3", "-3"),
        ("So the final answer is 1,234.", "1234"),
        ("We get 12,345,678 apples", "12345678"),
        ("#### 56", "56"),
        ("First 3, then 4.\n#### 7\nCheck: 3 + 4", "7"),
        ("####-12", "-12"),
        ("$\\boxed{81}$ because 9 * 9", "81"),
        ("\\boxed{ 1,000 }", "1000"),
        ("**42**", "42"),
        ("The answer is **17**.", "17"),
        ("`8`", "8"),
        ("The result is −5", "-5"),
        ("It costs $40.00 in total", "40"),
        ("Half of 7 is 3.5", "3.5"),
        ("She has 10 apples, gives 3 away, and keeps 7.", "7"),
        ("The answer is forty-two.", "42"),
        ("**twelve**", "12"),
        ("one hundred and five", "105"),
        ("minus seven", "-7"),
        ("I have no idea.", None),
        ("", None),
        ("version v1.5 of the answer", None),
        ("A list: 1,2,3", "3"),
        ("x = 5\n\n", "5"),
    ],
)
def test_extract_number(text: str, expected: str | None) -> None:
    assert extract_number(text) == expected


def test_marker_beats_later_numbers() -> None:
    assert extract_number("The answer is 9. (I computed 4 + 5 = 9, step 2 of 3)") == "9"
    assert extract_number("#### 10 and then 20 and 30") == "10"


def test_spelled_words_do_not_match_inside_other_words() -> None:
    assert extract_number("someone was often at the tenant meeting") is None


@pytest.mark.parametrize(
    ("token", "expected"),
    [("1,234", "1234"), ("042", "42"), ("-0", "0"), ("3.50", "3.5"), ("abc", None)],
)
def test_canonical_number(token: str, expected: str | None) -> None:
    assert canonical_number(token) == expected


def test_answer_matches() -> None:
    assert answer_matches("42", 42)
    assert answer_matches("-3", "-3")
    assert not answer_matches("41", 42)
    assert not answer_matches(None, 42)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The code is KX-7342.", "KX-7342"),
        ("kx-7342", None),
        ("Codes: AB-1234 then KX-7342", "AB-1234"),
        ("The code is KX–7342", "KX-7342"),
        ("XKX-73421", None),
        ("I don't know", None),
    ],
)
def test_extract_symbol(text: str, expected: str | None) -> None:
    assert extract_symbol(text) == expected
