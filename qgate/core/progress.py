"""Progress a CI log can show: plain lines through the `qgate` logger, configured once.

A terminal gets spinners and live lines besides (runtime/waiting.py,
perf/progress.py); a pipe or a CI log gets only these lines: one per stage
start and end, one per runtime start, and per suite the items done out of
the total at most every `EVERY_S` seconds and at the end. `configure` is
called by the CLI (`--quiet`, `-v`, `--log-level`); library users attach
their own handlers to the `qgate` logger as usual.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import time
from collections.abc import Iterator
from contextvars import ContextVar
from typing import TextIO

__all__ = ["EVERY_S", "ItemProgress", "StageClock", "configure", "items", "suite", "timed"]

log = logging.getLogger("qgate")
EVERY_S = 20.0
_HANDLER_NAME = "qgate-cli"
_label: ContextVar[str | None] = ContextVar("qgate_progress_label", default=None)


class _CurrentStderr(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever sys.stderr is now (rich's live displays swap it for a proxy)."""

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, value: TextIO) -> None:
        pass


def configure(level: int | str = logging.INFO) -> None:
    """One stderr handler on the `qgate` logger: `HH:MM:SS qgate: message` lines."""
    if isinstance(level, str):
        level = logging.getLevelNamesMapping()[level.upper()]
    for old in [h for h in log.handlers if h.get_name() == _HANDLER_NAME]:
        log.removeHandler(old)
    handler = _CurrentStderr()
    handler.set_name(_HANDLER_NAME)
    handler.setFormatter(logging.Formatter("%(asctime)s qgate: %(message)s", "%H:%M:%S"))
    log.addHandler(handler)
    log.setLevel(level)
    log.propagate = False


@contextlib.contextmanager
def timed(what: str, announce: bool = True) -> Iterator[None]:
    """`what: started` (unless not `announce`) and `what: done in N s`.

    An error leaves no line of its own: the error message says what stopped.
    """
    if announce:
        log.info("%s: started", what)
    start = time.monotonic()
    yield
    log.info("%s: done in %.0f s", what, time.monotonic() - start)


class StageClock:
    """Wall time of each stage of a run, for the report; a log line at each start and end."""

    def __init__(self) -> None:
        self.timings: dict[str, float] = {}

    @contextlib.contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Time stage `name`; `load` is not announced (a bad profile's error comes alone)."""
        start = time.perf_counter()
        try:
            with timed(f"stage {name}", announce=name != "load"):
                yield
        finally:
            self.timings[name] = round(time.perf_counter() - start, 3)


@contextlib.contextmanager
def suite(role: str, name: str) -> Iterator[None]:
    """Suite `name` on `role`'s runtime, timed; `items` counters inside name the role."""
    token = _label.set(role)
    try:
        with timed(f"{role} {name}"):
            yield
    finally:
        _label.reset(token)


class ItemProgress:
    """Items done out of `total`, logged at most every EVERY_S and when the last is done."""

    def __init__(self, what: str, total: int, unit: str) -> None:
        self.label = f"{_label.get() or 'quality'} {what}"
        self.total = total
        self.unit = unit
        self.done = 0
        self._start = self._last = time.monotonic()

    def advance(self, n: int = 1) -> None:
        self.done += n
        now = time.monotonic()
        if self.done >= self.total or now - self._last >= EVERY_S:
            self._last = now
            log.info(
                "%s: %d/%d %s, %.0f s",
                self.label,
                self.done,
                self.total,
                self.unit,
                now - self._start,
            )


def items(what: str, total: int, unit: str = "answers") -> ItemProgress:
    """A counter for `total` items of `what` (e.g. `math.short`) in the current suite."""
    return ItemProgress(what, total, unit)
