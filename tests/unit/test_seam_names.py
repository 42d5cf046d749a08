"""No code outside an engine's or an executor's own modules branches on its name (issue 40).

What an engine does differently (its version, its applied-config check, whether two of its
servers share a machine, whether it runs on the CPU here and takes vLLM's arguments) is
declared on its class (qgate/profile/engines.py, `EngineDecl`); what an executor does is
declared on `Lives` (qgate/runtime/lives.py). This scan fails when a comparison with a
registered engine kind or executor name comes back elsewhere. docs/development.md gives the
grep that shows the same.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from qgate.profile.engines import engine_kinds
from qgate.runtime.lives import EXECUTORS

ROOT = Path(__file__).resolve().parents[2] / "qgate"

ENGINE_OWNERS = (
    "profile/engines.py",
    "runtime/vllm_server.py",
    "runtime/sglang_server.py",
    "runtime/endpoint.py",
    "runtime/command_server.py",
    "runtime/command.py",  # vLLM's launch command (the `vllm` script or python -m)
)
EXECUTOR_OWNERS = ("runtime/lives.py", "cluster/")

KNOWN: dict[tuple[str, str], str] = {}
"""(module, name) pairs left as they are, each with why; shrink it, never grow it lightly."""


def compared(source: str, names: set[str]) -> list[tuple[int, str]]:
    """(line, name) of every comparison (==, !=, in, not in) with one of `names`."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Compare):
            continue
        for side in (node.left, *node.comparators):
            elts = side.elts if isinstance(side, (ast.Tuple, ast.List, ast.Set)) else [side]
            found += [
                (node.lineno, e.value)
                for e in elts
                if isinstance(e, ast.Constant) and isinstance(e.value, str) and e.value in names
            ]
    return found


def _modules(owners: tuple[str, ...]) -> Iterator[tuple[str, Path]]:
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if not rel.startswith(owners):
            yield rel, path


def _found(owners: tuple[str, ...], names: set[str]) -> list[str]:
    return [
        f"{rel}:{line}: {name!r}"
        for rel, path in _modules(owners)
        for line, name in compared(path.read_text(encoding="utf-8"), names)
        if (rel, name) not in KNOWN
    ]


def test_no_branch_on_an_engine_kind_outside_its_module() -> None:
    found = _found(ENGINE_OWNERS, set(engine_kinds()))
    assert not found, "declare it on the engine's class (EngineDecl) instead:\n" + "\n".join(found)


def test_no_branch_on_an_executor_name_outside_its_module() -> None:
    found = _found(EXECUTOR_OWNERS, set(EXECUTORS.names()))
    assert not found, "declare it on Lives instead:\n" + "\n".join(found)


@pytest.mark.parametrize(
    "source",
    ['if launch.kind != "vllm":\n    pass\n', 'ok = kind in ("vllm", "command")\n'],
)
def test_a_branch_is_seen(source: str) -> None:
    assert compared(source, set(engine_kinds()))


def test_other_strings_are_not_branches() -> None:
    assert not compared('x = {"vllm": 1}\nok = role == "reference"\n', set(engine_kinds()))


RAY_FREE = ("qgate.cluster.waves",)
"""Modules of qgate/cluster/ that are no executor's own: waves of lives at once (any executor
that runs several)."""


def test_no_module_imports_the_ray_executor_around_the_seam() -> None:
    """Only qgate/cluster/ imports the Ray executor's modules; the run, `qgate plan` and the
    report reach it through `Lives` (registered by "module:attribute" in runtime/lives.py)."""
    found = []
    for rel, path in _modules(EXECUTOR_OWNERS):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                targets = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            ray = [t for t in targets if t.startswith("qgate.cluster.") or t == "ray"]
            if ray and not any(t in RAY_FREE for t in ray):
                found.append(f"{rel}:{node.lineno}: {ray[0]}")
    assert not found, found
