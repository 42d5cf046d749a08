"""Stored against re-derived values: equal up to float noise, and the first difference named.

What every verify check compares with (qgate/report/verify/recompute.py and the others): a
value as JSON (`dump`), equality with floats up to a relative 1e-9 (`same_value`: CPUs round
exp and log differently), a report of an older perf derivation held to the figures it stores
(`covers`), and the message naming a field with both values (`describe`, `differences`).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import pydantic_core

__all__ = ["Diff", "covers", "describe", "differences", "dump", "same_value"]


def dump(value: Any) -> Any:
    # the same JSON form the signer wrote (NaN/inf as null), so equal data compares equal
    return json.loads(pydantic_core.to_json(value, inf_nan_mode="null"))


# Recomputed floats may differ from the stored ones in the last bits when the same formula is
# evaluated in another order (a numerically equivalent refactor, another numpy); any edit of a
# figure moves it by far more than this.
_REL_TOL = 1e-9
_ABS_TOL = 1e-12


def same_value(stored: Any, recomputed: Any) -> bool:
    """JSON values equal, floats up to a relative 1e-9 (booleans, strings, ints exactly)."""
    if isinstance(stored, bool) or isinstance(recomputed, bool):
        return stored is recomputed
    if isinstance(stored, float) or isinstance(recomputed, float):
        if not isinstance(stored, int | float) or not isinstance(recomputed, int | float):
            return False
        return math.isclose(stored, recomputed, rel_tol=_REL_TOL, abs_tol=_ABS_TOL)
    if isinstance(stored, dict) and isinstance(recomputed, dict):
        return stored.keys() == recomputed.keys() and all(
            same_value(v, recomputed[k]) for k, v in stored.items()
        )
    if isinstance(stored, list) and isinstance(recomputed, list):
        return len(stored) == len(recomputed) and all(
            same_value(a, b) for a, b in zip(stored, recomputed, strict=True)
        )
    return bool(stored == recomputed)


def covers(stored: Any, recomputed: Any) -> bool:
    """Every figure a report of an older derivation stores equals its recomputation.

    Newer qgate derives more figures from the same records (more keys, more
    comparison rows, intervals on throughput ratios); those the older report
    lacks are not held against it. Comparison rows are matched by metric.
    """
    if isinstance(stored, dict) and isinstance(recomputed, dict):
        if stored.get("resamples") == 0 and stored.get("ci_low") is stored.get("ci_high") is None:
            # a ratio stored without an interval (derivation 1 gave throughput none)
            ignored = ("ci_low", "ci_high", "resamples", "seed")
            stored = {k: v for k, v in stored.items() if k not in ignored}
        return all(k in recomputed and covers(v, recomputed[k]) for k, v in stored.items())
    if isinstance(stored, list) and isinstance(recomputed, list):
        if all(isinstance(x, dict) and "metric" in x for x in stored + recomputed):
            by_metric = {x["metric"]: x for x in recomputed}
            return len(by_metric) == len(recomputed) and all(
                x["metric"] in by_metric and covers(x, by_metric[x["metric"]]) for x in stored
            )
        return len(stored) == len(recomputed) and all(
            covers(a, b) for a, b in zip(stored, recomputed, strict=True)
        )
    return same_value(stored, recomputed)


_MISSING = object()


@dataclass(frozen=True)
class Diff:
    """One field whose stored value is not the re-derived one."""

    path: str
    stored: Any
    rederived: Any

    def __str__(self) -> str:
        was, now = _show(self.stored), _show(self.rederived)
        if isinstance(self.stored, str) and isinstance(self.rederived, str):
            was, now = _from_first_difference(self.stored, self.rederived)
        elif was == now:  # floats that differ beyond the tolerance but print alike
            was, now = repr(self.stored), repr(self.rederived)
        return f"{self.path}: {was} stored, {now} re-derived"


def _from_first_difference(a: str, b: str, width: int = 60) -> tuple[str, str]:
    """Two long strings shown from a little before where they first differ."""
    if len(a) <= width and len(b) <= width:
        return repr(a), repr(b)
    i = next((k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    start = max(0, i - 20)

    def cut(text: str) -> str:
        part = text[start : start + width]
        return ("..." if start else "") + repr(part) + ("..." if start + width < len(text) else "")

    return cut(a), cut(b)


def differences(
    stored: Any, recomputed: Any, path: str = "", *, covers: bool = False
) -> list[Diff]:
    """Every (field path, stored, re-derived) where two JSON values differ, in document order.

    Leaves compare as `same_value` does (floats up to a relative 1e-9). With `covers`, a
    key the stored value lacks is not a difference (a report of an older derivation).
    """
    if isinstance(stored, dict) and isinstance(recomputed, dict):
        out: list[Diff] = []
        keys = list(stored) + [k for k in recomputed if k not in stored and not covers]
        for key in keys:
            sub = f"{path}.{key}" if path else str(key)
            out += differences(
                stored.get(key, _MISSING), recomputed.get(key, _MISSING), sub, covers=covers
            )
        return out
    if isinstance(stored, list) and isinstance(recomputed, list):
        if covers and all(isinstance(x, dict) and "metric" in x for x in stored + recomputed):
            by_metric = {x["metric"]: x for x in recomputed}
            return [
                d
                for x in stored
                for d in differences(
                    x, by_metric.get(x["metric"], _MISSING), f"{path}[{x['metric']}]", covers=True
                )
            ]
        out = []
        for i, (a, b) in enumerate(zip(stored, recomputed, strict=False)):
            out += differences(a, b, f"{path}[{_label(a, b, i)}]", covers=covers)
        n = min(len(stored), len(recomputed))
        if len(stored) != len(recomputed):
            out.append(Diff(f"{path}[{n}:]", stored[n:], recomputed[n:]))
        return out
    if stored is _MISSING or recomputed is _MISSING or not same_value(stored, recomputed):
        return [Diff(path or "(value)", stored, recomputed)]
    return []


def _label(a: Any, b: Any, i: int) -> str:
    """An element's name in a path: its metric where both sides name the same one (a perf
    comparison row: `comparisons[ttft_ms.p50]`), else its index."""
    if isinstance(a, dict) and isinstance(b, dict) and a.get("metric") == b.get("metric"):
        metric = a.get("metric")
        if isinstance(metric, str):
            return metric
    return str(i)


def _show(value: Any) -> str:
    if value is _MISSING:
        return "nothing"
    if isinstance(value, float) and not isinstance(value, bool):
        return f"{value:.4g}"
    text = json.dumps(value) if isinstance(value, dict | list) else repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def describe(where: str, stored: Any, recomputed: Any, *, covers: bool = False) -> str:
    """'WHERE: FIELD: A stored, B re-derived; ...' naming every differing field (at most 3)."""
    found = differences(stored, recomputed, covers=covers)
    if not found:
        return f"{where}: differs from its re-derivation"
    more = f"; and {len(found) - 3} more" if len(found) > 3 else ""
    shown = [f"{where}{d}" if d.path.startswith("[") else f"{where}: {d}" for d in found[:3]]
    return "; ".join(shown) + more
