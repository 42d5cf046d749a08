"""Lines of key paths that `qgate.core.yamlload` records, aliases included."""

from __future__ import annotations

from qgate.core.yamlload import load_yaml


def test_keys_under_an_alias_have_the_lines_of_the_anchored_keys() -> None:
    # Once only the alias's own item had a line: a problem under it was "not in the file".
    doc = load_yaml("a: &x\n  b: 1\n  c: [1, {d: 2}]\ne:\n  - *x\n  - f: *x\n")
    assert doc.lines[("e", 0, "b")] == 2
    assert doc.lines[("e", 0, "c", 1, "d")] == 3
    assert doc.lines[("e", 1, "f", "c", 1, "d")] == 3
    assert doc.data["e"][1]["f"] == {"b": 1, "c": [1, {"d": 2}]}
