"""Processes seen from the tests: a run's descendants, which of them live, and Ctrl-C for a
child started from a background job."""

from __future__ import annotations

import signal
from pathlib import Path


def ctrl_c_reaches_it() -> None:
    """A `preexec_fn`: SIGINT's default handling back in the child.

    A shell runs background jobs with SIGINT ignored, and children inherit that: a suite
    started as `make test &` would see no Ctrl-C at all (seen here). The child gets the
    default back, so Python installs its KeyboardInterrupt handler as in a terminal."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def descendants(pid: int) -> set[int]:
    """Every process below `pid` now, from /proc (children of children included)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.add(child)
            todo.append(child)
    return out


def alive(pid: int) -> bool:
    """Running, and not a zombie waiting to be reaped."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status


def cmdline(pid: int) -> bytes:
    """`pid`'s command line (NUL-separated), or b"" once it is gone."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""
