"""The package layers hold: every import points down (or within its own package), no module
imports another's private names, no two modules import each other (directly or round a
circle), and at most a handful of modules sit at the top of qgate/.

Layers, bottom first (docs/development.md, "Layout"): errors, core, profile, attest, checkpoint,
runtime, quality, perf, gates, report, cluster, run, cli. Imports made only for type checking
count too. `gates` sits above `quality` and `perf` because every gate reads their records, and
below `report` because the report, verify and the run call the gates; the quality stage reaches
the gates only through the board the run hands it (quality/board.py `Board`).
"""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

import pytest

from qgate.core.lazy import DEFERRED

ROOT = Path(__file__).resolve().parents[2] / "qgate"
LAYERS = [
    "errors",
    "core",
    "profile",
    "attest",
    "checkpoint",
    "runtime",
    "quality",
    "perf",
    "gates",
    "report",
    "cluster",
    "run",
    "cli",
]
RANK = {name: i for i, name in enumerate(LAYERS)}


def _package(module: str) -> str:
    """`qgate.report.verify.single` -> `report`; `qgate` itself -> `errors` (the bottom)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "errors"


def _modules() -> dict[str, Path]:
    out = {}
    for path in ROOT.rglob("*.py"):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _imports(path: Path) -> list[tuple[int, str, list[str]]]:
    """(line, module, names) of every `qgate` import in the file, lazy ones included."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("qgate"):
            found.append((node.lineno, node.module, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name, []) for a in node.names if a.name.startswith("qgate")]
    return found


MODULES = _modules()


def test_every_package_is_on_a_layer() -> None:
    packages = {_package(m) for m in MODULES}
    assert packages <= set(RANK), packages - set(RANK)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_point_down(module: str) -> None:
    own = _package(module)
    upward = [
        f"{MODULES[module].name}:{line} imports {target}"
        for line, target, _ in _imports(MODULES[module])
        if RANK[_package(target)] > RANK[own]
    ]
    assert not upward, upward


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_private_names_from_other_modules(module: str) -> None:
    taken = [
        f"{MODULES[module].name}:{line} takes {target}.{name}"
        for line, target, names in _imports(MODULES[module])
        for name in names
        if name.startswith("_") and not name.startswith("__") and target != module
    ]
    assert not taken, taken


def test_few_modules_at_the_top() -> None:
    top = sorted(p.name for p in ROOT.glob("*.py"))
    assert top == ["__init__.py", "errors.py"], top


def _edges() -> dict[str, set[str]]:
    """Module -> the qgate modules it imports (at its top, in a function, for type checking).

    `from qgate.a import b` names the module `qgate.a.b` where that is one, else `qgate.a`.
    """
    edges: dict[str, set[str]] = {}
    for module, path in MODULES.items():
        for _, target, names in _imports(path):
            found = {f"{target}.{n}" for n in names if f"{target}.{n}" in MODULES}
            if not found or len(found) < len(names):
                found.add(target)
            edges.setdefault(module, set()).update(t for t in found if t in MODULES and t != module)
    return edges


def test_no_import_circles() -> None:
    edges = _edges()
    circle = None
    try:
        graphlib.TopologicalSorter(edges).prepare()
    except graphlib.CycleError as exc:
        circle = exc.args[1]
    assert circle is None, " -> ".join(circle)


def test_a_circle_is_seen() -> None:
    """The circle check fails where two modules import each other (it can fail)."""
    edges = _edges()
    edges.setdefault("qgate.errors", set()).add("qgate.run.pipeline")  # pipeline reaches errors
    with pytest.raises(graphlib.CycleError):
        graphlib.TopologicalSorter(edges).prepare()


def _function_imports(tree: ast.AST) -> list[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import inside a function, and whether a `try` around it catches ImportError."""
    found: list[tuple[ast.Import | ast.ImportFrom, bool]] = []

    def walk(node: ast.AST, in_function: bool, guarded: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom) and in_function:
                found.append((child, guarded))
            catches = isinstance(child, ast.Try) and any(
                h.type is not None and "ImportError" in ast.unparse(h.type) for h in child.handlers
            )
            inner = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            walk(child, inner, guarded or catches)

    walk(tree, False, False)
    return found


def _late_imports(tree: ast.AST) -> list[str]:
    """Function-local imports of modules not in DEFERRED and not guarded by ImportError."""
    late = []
    for node, guarded in _function_imports(tree):
        names = (
            [node.module or ""]
            if isinstance(node, ast.ImportFrom)
            else [a.name for a in node.names]
        )
        if not guarded and any(n.split(".")[0] not in DEFERRED for n in names):
            late.append(f"{node.lineno}: {ast.unparse(node)}")
    return late


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_at_the_top(module: str) -> None:
    """A module's dependencies are its first lines; only DEFERRED ones wait (qgate/core/lazy.py)."""
    late = _late_imports(ast.parse(MODULES[module].read_text()))
    assert not late, f"{MODULES[module]}: move to the top, or name in DEFERRED: {late}"


def test_a_late_import_is_seen() -> None:
    source = "import json\n\ndef f():\n    import torch\n    from qgate.errors import BadInput\n"
    assert _late_imports(ast.parse(source)) == ["5: from qgate.errors import BadInput"]
    guarded = "def f():\n    try:\n        import yaml\n    except ImportError:\n        pass\n"
    assert _late_imports(ast.parse(guarded)) == []
