"""Answer extraction: pure functions from a model's output to the answer it gave.

`qgate verify` does not re-extract (it reads the recorded `answer`), but the
extraction must be deterministic and explainable, so it lives here without
any state. The order of preference follows what people and models write:
an explicit marker ("#### N", "\\boxed{N}", "the answer is N") wins over the
last number in the text, because small models often restate the operands
after the answer.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

# A number: optional sign, digits with optional thousands separators
# (1,234 or 1 234 is not accepted: a space separates numbers), optional decimals.
_NUM = r"[-−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"
_NUM_RE = re.compile(rf"(?<![\w.])({_NUM})(?![\w])")
_HASH_RE = re.compile(rf"####\s*\$?\s*({_NUM})")
_BOXED_RE = re.compile(rf"\\boxed\s*\{{\s*\$?\s*({_NUM})\s*\}}")
_ANSWER_IS_RE = re.compile(
    rf"(?:final\s+answer|answer)\s*(?:is|:|=)?\s*[:=]?\s*[*_`$\s]*({_NUM})",
    re.IGNORECASE,
)
# Markdown decoration that can glue itself to a number ("**42**", "`42`").
_MARKDOWN_RE = re.compile(r"[*_`~]+")

_UNITS = {
    "zero": 0,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "thirteen": 13,
    "fourteen": 14,
    "fifteen": 15,
    "sixteen": 16,
    "seventeen": 17,
    "eighteen": 18,
    "nineteen": 19,
}
_TENS = {
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
    "sixty": 60,
    "seventy": 70,
    "eighty": 80,
    "ninety": 90,
}
_WORD_RE = re.compile(
    r"\b(minus\s+|negative\s+)?((?:(?:"
    + "|".join(list(_TENS) + list(_UNITS) + ["hundred", "thousand", "and"])
    + r")(?:[\s-]+|\b))+)",
    re.IGNORECASE,
)

SYMBOL_PATTERN = r"[A-Z]{2}-\d{4}"
_SYMBOL_RE = re.compile(rf"(?<![A-Za-z0-9]){SYMBOL_PATTERN}(?![0-9])")


def canonical_number(token: str) -> str | None:
    """'1,234' -> '1234', '−7' -> '-7', '42.0' -> '42', '3.50' -> '3.5'; None if not a number."""
    cleaned = token.replace(",", "").replace("−", "-").strip()
    try:
        value = Decimal(cleaned)
    except InvalidOperation:
        return None
    if value == value.to_integral_value():
        return str(int(value))
    return format(value.normalize(), "f")


def _words_to_int(phrase: str) -> int | None:
    """'forty-two' -> 42, 'one hundred and five' -> 105; None for phrases like 'and'."""
    total, current, seen = 0, 0, False
    for word in re.split(r"[\s-]+", phrase.lower().strip()):
        if not word or word == "and":
            continue
        seen = True
        if word in _UNITS:
            current += _UNITS[word]
        elif word in _TENS:
            current += _TENS[word]
        elif word == "hundred":
            current = max(current, 1) * 100
        elif word == "thousand":
            total += max(current, 1) * 1000
            current = 0
    return total + current if seen else None


def _spelled_number(text: str) -> str | None:
    """The last number written in words, used only when the text has no digits."""
    found: str | None = None
    for match in _WORD_RE.finditer(text):
        value = _words_to_int(match.group(2))
        if value is None:
            continue
        found = str(-value if match.group(1) else value)
    return found


def extract_number(text: str) -> str | None:
    """The final numeric answer in `text`, canonicalised (see `canonical_number`), or None.

    Preference: the last "#### N"; else the last "\\boxed{N}"; else the last
    "answer is N" / "answer: N"; else the last number in the text; else the
    last number spelled in words ("forty-two").
    """
    plain = _MARKDOWN_RE.sub("", text)
    for pattern in (_HASH_RE, _BOXED_RE, _ANSWER_IS_RE):
        hits = pattern.findall(plain)
        if hits:
            return canonical_number(hits[-1])
    numbers = _NUM_RE.findall(plain)
    if numbers:
        return canonical_number(numbers[-1])
    return _spelled_number(plain)


def answer_matches(answer: str | None, expected: int | str) -> bool:
    """Exact numeric equality of an extracted answer with the expected one."""
    if answer is None:
        return False
    want = canonical_number(str(expected))
    return want is not None and answer == want


def extract_symbol(text: str) -> str | None:
    """The first recall symbol (e.g. 'KX-7342') in `text`, or None.

    The first one, not any: a model that lists every symbol of the haystack
    has not recalled the one asked for.
    """
    match = _SYMBOL_RE.search(text.replace("‐", "-").replace("–", "-"))
    return match.group(0) if match else None
