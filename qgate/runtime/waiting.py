"""A spinner with elapsed time while a server starts; silent when stderr is not a terminal."""

from __future__ import annotations

import contextlib
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

from qgate.core import http


class Ticker(Protocol):
    def __call__(self, note: str = "") -> None: ...


@contextmanager
def startup_progress(label: str) -> Iterator[Ticker]:
    """Yield `tick(note)`, to be called on every poll; it redraws "label  12.3 s  note"."""
    from rich.console import Console  # deferred: qgate/core/lazy.py, DEFERRED

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


def poll_health(proc: subprocess.Popen[bytes], url: str, timeout_s: float) -> str | None:
    """Poll `url` (a server's /health) for up to `timeout_s`: '' once it answers 200, the
    last problem when the time is up, None when the process exited first."""
    deadline = time.monotonic() + timeout_s
    problem = ""
    while proc.poll() is None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return problem or "no answer"
        try:
            status, _ = http.get(url, timeout=max(0.5, min(10.0, remaining)))
        except http.ProbeError as e:
            problem = str(e)
            # A dying server resets connections before it can be reaped; prefer its status.
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=min(1.0, max(0.0, deadline - time.monotonic())))
            continue
        if status == 200:
            return ""
        problem = f"HTTP {status}"
        time.sleep(min(0.5, max(0.0, deadline - time.monotonic())))
    return None
