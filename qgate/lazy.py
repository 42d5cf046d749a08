"""Lazy package surfaces (PEP 562): `__all__` names, each imported from its home module on use.

A package's `__init__` lists its public names and where each lives; importing
the package imports none of them, so `qgate --help` and `qgate validate` stay
instant while `from qgate.perf import summarize` still works.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_getattr"]


def lazy_getattr(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` that imports `name` from `package.<homes[name]>` on first use."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{home}"), name)

    return __getattr__
