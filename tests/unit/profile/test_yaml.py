"""The line-tracking YAML loader under the profile loader."""

from __future__ import annotations

import pytest

from qgate.core.yamlload import YamlSyntaxError, load_yaml, tab_problems


def test_lines_of_every_key_path() -> None:
    doc = load_yaml("a: 1\nb:\n  c: [1, 2]\n  d:\n    - x: 1\n    - y: 2\n")
    assert doc.data == {"a": 1, "b": {"c": [1, 2], "d": [{"x": 1}, {"y": 2}]}}
    assert doc.lines[("a",)] == 1
    assert doc.lines[("b", "c", 1)] == 3
    assert doc.lines[("b", "d", 1, "y")] == 6
    assert doc.line_of(("b", "d", 1, "missing")) == 6
    assert doc.line_of(("nowhere",)) == 1


def test_duplicates_are_reported_not_dropped() -> None:
    doc = load_yaml("a: 1\nb: {c: 1, c: 2}\na: 3\n")
    found = [(p.line, p.path, p.message) for p in doc.problems]
    assert found == [
        (2, ("b", "c"), "duplicate key (first given on line 2)"),
        (3, ("a",), "duplicate key (first given on line 1)"),
    ]
    assert doc.data["a"] == 3


def test_merge_keys_override_without_duplicates() -> None:
    doc = load_yaml("s: &s {a: 1, b: 2}\nt: {<<: *s, b: 3}\nu: *s\n")
    assert doc.problems == []
    assert doc.data["t"] == {"a": 1, "b": 3}
    assert doc.data["u"] == {"a": 1, "b": 2}


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("a: &x [1, *x]\n", 1, "recursive alias"),
        ("a: 1\nb: [1\n", 3, "expected ',' or ']'"),
        ("a: *nope\n", 1, "undefined alias"),
        ("a: !!python/object:os.system x\n", 1, "could not determine a constructor"),
        ("a: 1\n---\nb: 2\n", 2, "expected a single document"),
    ],
)
def test_syntax_errors_carry_a_line(text: str, line: int, fragment: str) -> None:
    with pytest.raises(YamlSyntaxError) as info:
        load_yaml(text)
    assert info.value.line == line
    assert fragment in info.value.message


def test_unhashable_key() -> None:
    doc = load_yaml("? [1, 2]\n: 3\n")
    assert [p.message for p in doc.problems] == ["a key must be a plain value"]


def test_tabs_only_in_indentation_count() -> None:
    assert [p.line for p in tab_problems("a:\n\tb: 1\nc: 'x\ty'\n  \td: 2\n")] == [2, 4]


def test_empty_document() -> None:
    assert load_yaml("# only a comment\n").data is None
