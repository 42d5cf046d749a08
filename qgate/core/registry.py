"""One registry mechanism for everything a profile names by key (suites, engine kinds).

Entries are either objects or lazy "module:attribute" strings, imported on
first use (lm-eval's registry design), so `qgate validate` and `--help` import
no module they do not need. A name is registered once: a second registration
of a taken name is refused. An unknown name is answered with the available
ones and, for a near miss, "did you mean". Both are errors of the project's
tree (UnknownName is a BadInput: exit 2 when a profile names it).
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from qgate.errors import BadInput

__all__ = ["DuplicateName", "Registry", "UnknownName", "load_object"]

T = TypeVar("T")


class UnknownName(BadInput):
    """A name no entry is registered for; the message names the available ones."""


class DuplicateName(ValueError):
    """A second registration of a taken name (a programming error of a plug-in)."""


def load_object(target: str) -> object:
    """The object at "package.module:attribute", imported now."""
    module, _, attribute = target.partition(":")
    if not module or not attribute:
        raise ValueError(f"{target!r} is not 'module:attribute'")
    return getattr(importlib.import_module(module), attribute)


class Registry(Generic[T]):
    """Named entries in registration order; lazy entries are loaded and checked on first use."""

    def __init__(self, what: str, check: Callable[[object], T]) -> None:
        self.what = what
        self._check = check
        self._entries: dict[str, T | str] = {}

    def register(self, name: str, entry: T | str) -> None:
        """Add `entry` (an object or "module:attribute") under `name`; DuplicateName if taken."""
        if not name or not name.isidentifier():
            raise ValueError(f"{self.what} name must be an identifier, not {name!r}")
        if name in self._entries:
            raise DuplicateName(f"{self.what} {name!r} is already registered")
        self._entries[name] = entry

    def unregister(self, name: str) -> None:
        """Remove `name` (tests that register a toy entry); UnknownName if absent."""
        self.get(name)
        del self._entries[name]

    def names(self) -> list[str]:
        """Registered names, in registration order."""
        return list(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def unknown_message(self, name: str) -> str:
        """`Unknown engine 'vlm' (did you mean 'vllm'?). Available: vllm, endpoint`."""
        names = self.names()
        near = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
        hint = f" (did you mean '{near[0]}'?)" if near else ""
        return f"Unknown {self.what} '{name}'{hint}. Available: {', '.join(names)}"

    def get(self, name: str) -> T:
        """The entry of `name`, loaded and checked if it was lazy; UnknownName otherwise."""
        entry = self._entries.get(name)
        if entry is None:
            raise UnknownName(self.unknown_message(name))
        if isinstance(entry, str):
            entry = self._check(load_object(entry))
            self._entries[name] = entry
        return entry

    def values(self) -> Iterator[T]:
        """Every entry (loading lazy ones), in registration order."""
        return (self.get(name) for name in self.names())
