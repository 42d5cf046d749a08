"""A live progress line for long scenarios (rich); silent when not a TTY or disabled."""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import Any, Self


class ScenarioProgress:
    """Requests done, rate, errors, elapsed and remaining for one scenario."""

    def __init__(self, label: str, total: int | None, enabled: bool) -> None:
        self.label = label
        self.total = total
        self.enabled = enabled and sys.stderr.isatty()
        self.done = 0
        self.errors = 0
        self._start = time.monotonic()
        self._live: Any = None
        self._last = 0.0

    def _render(self) -> str:
        el = time.monotonic() - self._start
        rate = self.done / el if el > 0 else 0.0
        total = f"/{self.total}" if self.total else ""
        left = ""
        if self.total and rate > 0:
            left = f"  remaining {max(self.total - self.done, 0) / rate:5.0f}s"
        return (
            f"[bold]{self.label}[/bold]  {self.done}{total} requests  {rate:5.2f} req/s  "
            f"errors {self.errors}  elapsed {el:5.0f}s{left}"
        )

    def __enter__(self) -> Self:
        if self.enabled:
            from rich.console import Console
            from rich.live import Live

            self._live = Live(self._render(), console=Console(stderr=True), transient=True)
            self._live.__enter__()
        return self

    def advance(self, error: bool) -> None:
        self.done += 1
        self.errors += int(error)
        now = time.monotonic()
        # Redraw at most 4 times a second: the event loop is timing streams.
        if self._live is not None and now - self._last > 0.25:
            self._last = now
            self._live.update(self._render())

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._live is not None:
            self._live.__exit__(exc_type, exc, tb)
