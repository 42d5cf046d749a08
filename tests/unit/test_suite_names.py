"""No code outside a suite's own package branches on a suite's name (issue 40).

What a suite does differently (its plan rows, its re-derivation in `qgate verify`, its profile
problems, whether the reuse passes ask it again) is a hook on its registry entry
(qgate/profile/suites.py); the run, verify, plan and profile code call the hook. This scan
fails when a comparison with a registered suite's name, a `startswith` on one, or a dict
keyed by one comes back outside qgate/quality (where the suites live) and the registry.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from qgate.profile.suites import registered

ROOT = Path(__file__).resolve().parents[2] / "qgate"

OWNERS = (
    "quality/",
    "profile/suites.py",
    "profile/suite_checks.py",
    "profile/quality.py",
    "profile/context_ladder.py",
)
"""Where a suite's name may be compared: the suites themselves and their declarations."""

KNOWN: dict[tuple[str, str], str] = {
    ("core/lazy.py", "lm_eval"): "the lm_eval Python package, deferred; not the suite",
}
"""(module, name) pairs left as they are, each with why; shrink it, never grow it lightly."""


def _names() -> set[str]:
    return {n for e in registered() for n in (e.key, e.prefix)}


def _strings(node: ast.AST) -> Iterator[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node.value
    elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        for elt in node.elts:
            yield from _strings(elt)


def _is_name(text: str, names: set[str]) -> bool:
    """'math', or a result id or prefix of one ('math.short', 'context.')."""
    return text in names or text.partition(".")[0] in names and "." in text


def branches(source: str, names: set[str]) -> list[tuple[int, str]]:
    """(line, name) of every comparison, startswith or dict key on a suite name in `source`."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        candidates: list[ast.AST] = []
        if isinstance(node, ast.Compare):
            candidates = [node.left, *node.comparators]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("startswith", "endswith", "removeprefix")
        ):
            candidates = list(node.args)
        elif isinstance(node, ast.Dict):
            # a constant key only: a tuple key is a key path ((QualitySpec, "lm_eval"): a bound)
            candidates = [k for k in node.keys if isinstance(k, ast.Constant)]
        for c in candidates:
            found += [(node.lineno, s) for s in _strings(c) if _is_name(s, names)]
    return found


def _modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if not rel.startswith(OWNERS):
            yield rel, path


@pytest.mark.parametrize(("rel", "path"), list(_modules()), ids=lambda x: str(x))
def test_no_branch_on_a_suite_name_outside_the_suites(rel: str, path: Path) -> None:
    found = [
        f"{rel}:{line}: {name!r}"
        for line, name in branches(path.read_text(encoding="utf-8"), _names())
        if (rel, name) not in KNOWN
    ]
    assert not found, "declare it as a hook on the suite's SuiteEntry instead:\n" + "\n".join(found)


@pytest.mark.parametrize(
    "source",
    [
        'if entry.key == "math":\n    pass\n',
        'ok = family in ("tool_calls", "structured")\n',
        'ok = run.suite.startswith("context.")\n',
        'table = {"recall": 1}\n',
        'ok = "divergence" != k\n',
    ],
)
def test_a_branch_is_seen(source: str) -> None:
    assert branches(source, _names())


def test_other_strings_are_not_branches() -> None:
    assert not branches('x = "math.short"\nok = role == "reference"\n', _names())
