"""A live progress line for long scenarios; silent when not a TTY or disabled.

It shares the event loop with the streams being timed, so it is kept cheap:
`advance` (called after every response) only counts, and the line is
redrawn from a loop timer once a second with one plain write to stderr (no
rich rendering, no thread contending for the interpreter lock).
perf/bench_client_fidelity.py --progress measures what drawing costs.
"""

from __future__ import annotations

import asyncio
import sys
import time
from types import TracebackType
from typing import Self

REDRAW_S = 1.0


class ScenarioProgress:
    """Requests done, rate, errors, elapsed and remaining for one scenario."""

    def __init__(
        self, label: str, total: int | None, enabled: bool, duration_s: float | None = None
    ) -> None:
        self.label = label
        self.total = total
        self.duration_s = duration_s
        self.enabled = enabled and sys.stderr.isatty()
        self.done = 0
        self.errors = 0
        self._start = time.monotonic()
        self._timer: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _render(self) -> str:
        el = time.monotonic() - self._start
        rate = self.done / el if el > 0 else 0.0
        total = f"/{self.total}" if self.total else ""
        left = ""
        if self.total and rate > 0:
            left = f"  remaining {max(self.total - self.done, 0) / rate:5.0f}s"
        elif self.duration_s:
            left = f"  remaining {max(self.duration_s - el, 0):5.0f}s (then in-flight finish)"
        return (
            f"{self.label}  {self.done}{total} requests  {rate:5.2f} req/s  "
            f"errors {self.errors}  elapsed {el:5.0f}s{left}"
        )

    def _draw(self) -> None:
        sys.stderr.write("\r\x1b[2K" + self._render())
        sys.stderr.flush()
        if self._loop is not None:
            self._timer = self._loop.call_later(REDRAW_S, self._draw)

    def __enter__(self) -> Self:
        if self.enabled:
            try:
                self._loop = asyncio.get_running_loop()
            except RuntimeError:
                self._loop = None
            self._draw()
        return self

    def advance(self, error: bool) -> None:
        """Count one finished request (transport/HTTP errors; stream checks come later)."""
        self.done += 1
        self.errors += int(error)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self.enabled:
            sys.stderr.write("\r\x1b[2K")  # transient: the line goes away
            sys.stderr.flush()
