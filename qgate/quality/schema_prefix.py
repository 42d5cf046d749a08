"""Whether a text cut short could still become valid JSON for a structured-output schema.

A server that constrains its output to a schema can only ever emit a prefix of JSON valid
for it: cut by `max_tokens`, it leaves `{"answer": 12` or `{ "wo`, never prose, a ```json
fence or a key the schema does not have. So a cut output that is no such prefix proves the
schema was ignored (qgate/quality/agent_data.py `grade_structured`).

Hand-written for the one shape the structured suite asks (`schema_for`: an object with one
required property, an integer or a string from an enum, additionalProperties false): no
maintained library checks a JSON-schema prefix (jsonschema validates whole documents; the
grammar compilers that constrain decoding, xgrammar and outlines, run inside the server).
JSON whitespace (space, tab, newline, carriage return) is allowed wherever JSON allows it.
The check refuses a prefix only where that is certain and answers "could be" on any doubt:
a string with a backslash escape (`"\\u0061nswer"` is the key `answer`), any number at the
end (`7.5` may go on as `7.5e1`), a schema of another shape. One choice is not
doubt-free: a second member (`, "answer": ...`) is refused, although Python's json reads
duplicate keys as the last one, because no schema-to-grammar decoder writes a property twice
and a model left unconstrained adds a key (`, "reason": ...`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

__all__ = ["could_be_prefix"]

_WS = " \t\n\r"
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_NUMBER_CHARS = frozenset("0123456789+-.eE")

Fits = Callable[[str, bool], bool]
"""Whether a string's content fits, given whether it closed (else it may go on)."""


class _Open(Exception):
    """The text ended where valid JSON could go on, or an escape leaves it in doubt."""


def could_be_prefix(schema: dict[str, Any], text: str) -> bool:
    """True when some continuation of `text` is JSON valid for `schema` (the structured
    suite's one-property shape; any other schema gives True), False when none can be."""
    props = schema.get("properties")
    if (
        schema.get("type") != "object"
        or schema.get("additionalProperties") is not False
        or not isinstance(props, dict)
        or len(props) != 1
    ):
        return True
    ((key, prop),) = props.items()
    enum = prop.get("enum")
    value: Callable[[_Reader], bool]
    if prop.get("type") == "integer" and enum is None:
        value = _integer
    elif prop.get("type") == "string" and isinstance(enum, list):
        value = _enum([w for w in enum if isinstance(w, str)])
    else:
        return True
    try:
        return _object(_Reader(text), key, value)
    except _Open:
        return True


class _Reader:
    """A cursor over the text; needing a character past its end raises _Open."""

    def __init__(self, text: str) -> None:
        self.text, self.at = text, 0

    def skip_ws(self) -> None:
        while self.at < len(self.text) and self.text[self.at] in _WS:
            self.at += 1

    def take(self, char: str) -> bool:
        """Consume `char` if it is next; False if another character is."""
        if self.at >= len(self.text):
            raise _Open
        if self.text[self.at] != char:
            return False
        self.at += 1
        return True

    def string(self, fits: Fits) -> bool:
        """A JSON string whose content, closed or cut, `fits`."""
        if not self.take('"'):
            return False
        end = self.text.find('"', self.at)
        content = self.text[self.at : len(self.text) if end < 0 else end]
        if "\\" in content:
            raise _Open  # an escape may spell any character
        if end < 0:
            if fits(content, False):
                raise _Open
            return False
        self.at = end + 1
        return fits(content, True)


def _object(r: _Reader, key: str, value: Callable[[_Reader], bool]) -> bool:
    """`{"<key>": <value>}` with whitespace where JSON allows it, and nothing after."""
    r.skip_ws()
    if not r.take("{"):
        return False
    r.skip_ws()
    if not r.string(lambda s, closed: s == key if closed else key.startswith(s)):
        return False
    r.skip_ws()
    if not r.take(":"):
        return False
    r.skip_ws()
    if not value(r):
        return False
    r.skip_ws()
    if not r.take("}"):
        return False  # a second member too: see the module's docstring
    r.skip_ws()
    return r.at == len(r.text)


def _integer(r: _Reader) -> bool:
    """A JSON number the schema's `integer` accepts (jsonschema: 7 and 7.0 alike)."""
    start = r.at
    while r.at < len(r.text) and r.text[r.at] in _NUMBER_CHARS:
        r.at += 1
    number = r.text[start : r.at]
    if r.at == len(r.text):
        # one more digit completes any number prefix ("-", "1.", "1e", "1e+"), and an
        # exponent can still make it whole (7.5e1)
        if any(_NUMBER.fullmatch(number + tail) for tail in ("", "0")):
            raise _Open
        return False
    if not _NUMBER.fullmatch(number):
        return False
    parsed = json.loads(number)
    return isinstance(parsed, int) or (isinstance(parsed, float) and parsed.is_integer())


def _enum(words: list[str]) -> Callable[[_Reader], bool]:
    def value(r: _Reader) -> bool:
        return r.string(
            lambda s, closed: s in words if closed else any(w.startswith(s) for w in words)
        )

    return value
