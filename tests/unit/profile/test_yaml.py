"""The line-tracking YAML loader under the profile loader."""

from __future__ import annotations

import time

import pytest

from qgate.core.yamlload import MAX_NODES, YamlSyntaxError, load_yaml, tab_problems


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


def _laughs(levels: int, width: int) -> str:
    """The billion laughs: `width`**`levels` values in `levels` + 1 lines."""
    lines = ["a0: &a0 [" + ", ".join(["lol"] * width) + "]"]
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


def _merges(levels: int, width: int) -> str:
    """Merge keys of merge keys: PyYAML before 6.0.4 copies width**levels pairs composing it."""
    lines = ["m0: &m0 {a: 1, b: 2}"]
    for i in range(1, levels + 1):
        lines.append(f"m{i}: &m{i} {{<<: [" + ", ".join([f"*m{i - 1}"] * width) + "]}")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    ("name", "text", "line"),
    [
        ("billion-laughs", _laughs(9, 10), 5),
        ("merge-keys", _merges(9, 10), 5),
        # a chain of aliases nests deeper than MAX_DEPTH without one deep line
        (
            "alias-chain",
            "c0: &c0 [1]\n" + "".join(f"c{i}: &c{i} [*c{i - 1}]\n" for i in range(1, 400)),
            64,
        ),
    ],
)
def test_alias_bombs_are_refused_before_anything_is_built(name: str, text: str, line: int) -> None:
    start = time.monotonic()
    with pytest.raises(YamlSyntaxError) as info:
        load_yaml(text)
    assert time.monotonic() - start < 5.0  # generous: about 10 ms here; unguarded, minutes
    assert info.value.line == line
    assert "aliases" in info.value.message


def test_the_alias_budget_is_a_count_of_expanded_values() -> None:
    # 1 mapping + a key and a list value + the list's items: exactly MAX_NODES values is fine
    items = MAX_NODES - 3
    doc = load_yaml(
        f"a: &a [{', '.join(['1'] * 100)}]\nb: [{', '.join(['*a'] * ((items - 102) // 101))}]\n"
    )
    assert doc.data["b"][0] is doc.data["a"]
    with pytest.raises(YamlSyntaxError, match="more than 20,000 values"):
        load_yaml(f"a: &a [{', '.join(['1'] * 1000)}]\nb: [{', '.join(['*a'] * 100)}]\n")
