"""One registry mechanism for everything a profile names by key (suites, engine kinds).

Entries are either objects or lazy "module:attribute" strings, imported on
first use (lm-eval's registry design), so `qgate validate` and `--help` import
no module they do not need. A name is registered once: a second registration
of a taken name is refused. An unknown name is answered with the available
ones and, for a near miss, "did you mean". Both are errors of the project's
tree (UnknownName is a BadInput: exit 2 when a profile names it).

A registry opened to an entry-point group (`open_to("qgate.suites")`, once its module has
registered the built-in entries) also holds what installed distributions declare there: the
group is read with importlib.metadata on the first look-up (once per process), each plug-in
is registered under its entry point's name as a lazy "module:attribute", and imported when it
is first used. A plug-in that fails to import, is not what the registry holds, or takes a
built-in's name is a PluginError: one line naming the entry point and what went wrong.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable, Iterator
from importlib.metadata import EntryPoint, entry_points
from typing import Generic, TypeVar

from qgate.errors import BadInput

__all__ = ["DuplicateName", "PluginError", "Registry", "UnknownName", "load_object"]

T = TypeVar("T")


class UnknownName(BadInput):
    """A name no entry is registered for; the message names the available ones."""


class DuplicateName(ValueError):
    """A second registration of a taken name (a programming error of a plug-in)."""


class PluginError(BadInput):
    """An installed plug-in (an entry point of a `qgate.*` group) that qgate cannot use."""


def _plugin_line(point: EntryPoint, problem: str) -> str:
    """`plug-in qgate.suites 'word_count' (wc_plugin:ENTRY): ModuleNotFoundError: ...`."""
    return f"plug-in {point.group} {point.name!r} ({point.value}): {problem}"


def load_object(target: str) -> object:
    """The object at "package.module:attribute", imported now."""
    module, _, attribute = target.partition(":")
    if not module or not attribute:
        raise ValueError(f"{target!r} is not 'module:attribute'")
    return getattr(importlib.import_module(module), attribute)


class Registry(Generic[T]):
    """Named entries in registration order; lazy entries are loaded and checked on first use."""

    def __init__(
        self,
        what: str,
        check: Callable[[object], T],
        name_of: Callable[[T], str] | None = None,
    ) -> None:
        self.what = what
        self._check = check
        self._name_of = name_of
        self._entries: dict[str, T | str] = {}
        self._group: str | None = None
        self._points: dict[str, EntryPoint] = {}

    def open_to(self, group: str) -> None:
        """Take plug-ins from entry-point `group` too, read on the first look-up (call it once
        the built-in entries are registered)."""
        self._group = group

    def _discover(self) -> None:
        """Register the group's entry points (lazily: each is imported on first use), once."""
        group, self._group = self._group, None
        if group is None:
            return
        for point in entry_points(group=group):
            if point.name in self._entries:
                taken = f"{self.what} {point.name!r} is already registered"
                raise PluginError(_plugin_line(point, taken))
            if not point.name.isidentifier():
                raise PluginError(_plugin_line(point, "its name must be an identifier"))
            self._entries[point.name] = f"{point.module}:{point.attr}"
            self._points[point.name] = point

    def _load(self, name: str, target: str) -> T:
        point = self._points.get(name)
        if point is None:
            return self._check(load_object(target))
        try:
            loaded = self._check(load_object(target))
        except Exception as exc:  # any failure of a third party's import is one line
            raise PluginError(_plugin_line(point, f"{type(exc).__name__}: {exc}")) from exc
        if self._name_of is not None and self._name_of(loaded) != name:
            named = f"it names itself {self._name_of(loaded)!r}, not its entry point's name"
            raise PluginError(_plugin_line(point, named))
        return loaded

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
        self._points.pop(name, None)

    def names(self) -> list[str]:
        """Registered names, in registration order (plug-ins after the built-in entries)."""
        self._discover()
        return list(self._entries)

    def __contains__(self, name: object) -> bool:
        self._discover()
        return name in self._entries

    def unknown_message(self, name: str) -> str:
        """`Unknown engine 'vlm' (did you mean 'vllm'?). Available: vllm, endpoint`."""
        names = self.names()
        near = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
        hint = f" (did you mean '{near[0]}'?)" if near else ""
        return f"Unknown {self.what} '{name}'{hint}. Available: {', '.join(names)}"

    def get(self, name: str) -> T:
        """The entry of `name`, loaded and checked if it was lazy; UnknownName otherwise."""
        self._discover()
        entry = self._entries.get(name)
        if entry is None:
            raise UnknownName(self.unknown_message(name))
        if isinstance(entry, str):
            entry = self._load(name, entry)
            self._entries[name] = entry
        return entry

    def plugin(self, name: str) -> bool:
        """Whether `name` came from an installed distribution's entry point."""
        self._discover()
        return name in self._points

    def values(self) -> Iterator[T]:
        """Every entry (loading lazy ones), in registration order."""
        return (self.get(name) for name in self.names())
