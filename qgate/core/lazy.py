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
    """A module `__getattr__` that imports `name` from `package.<homes[name]>` on first use.

    A home may be a submodule path (`verify.single`) or, for a name the package hands on
    from a lower layer, an absolute module (`qgate.attest.keys`).
    """

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = home if home.startswith("qgate.") else f"{package}.{home}"
        return getattr(importlib.import_module(module), name)

    return __getattr__
