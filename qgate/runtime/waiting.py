"""A spinner with elapsed time while a server starts; silent when stderr is not a terminal."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol


class Ticker(Protocol):
    def __call__(self, note: str = "") -> None: ...


@contextmanager
def startup_progress(label: str) -> Iterator[Ticker]:
    """Yield `tick(note)`, to be called on every poll; it redraws "label  12.3 s  note"."""
    from rich.console import Console

    console = Console(stderr=True)
    if not console.is_terminal:
        # CI logs and pipes get no spinner frames, only what qgate logs itself.
        def quiet(note: str = "") -> None:
            return None

        yield quiet
        return
    start = time.monotonic()
    with console.status(label, spinner="dots") as status:

        def tick(note: str = "") -> None:
            elapsed = time.monotonic() - start
            status.update(f"{label}  [dim]{elapsed:5.1f} s[/dim]  {note}".rstrip())

        yield tick
