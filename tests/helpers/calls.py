"""The names of the functions a Python module calls, for tests that hold a module to calling
only the functions its layer may call (the one judge, the one verdict assembly)."""

from __future__ import annotations

import ast

# Each gate family's verdict maker (gates/assembly.py calls them, nothing outside qgate/gates)
GATE_FAMILIES = {
    "evaluate_quality",
    "evaluate_reuse",
    "kv_scale_verdicts",
    "contradicted_verdicts",
    "evaluate_speculative",
    "scenario_verdicts",
    "probe_verdicts",
    "turn_verdicts",
}


def called(source: str) -> set[str]:
    """Every function name `source` calls (`f(...)`, `x.f(...)`)."""
    return {
        node.func.id if isinstance(node.func, ast.Name) else node.func.attr
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name | ast.Attribute)
    }
