"""The engine's own reason for dying, found in its log.

A failed start-up ends in a wall of traceback whose last lines are generic
wrappers ("Engine core initialization failed. See root cause above"); the
line a person needs (`FP8 KV cache on CPU requires x86 with AVX-512 or
AMX.`, `error: unrecognized arguments: --foo`, an out-of-memory error) is
often far above them. `root_cause` picks that line out of the whole log so
that the one-line error can name it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from qgate.errors import InfrastructureError, RuntimeFailure

if TYPE_CHECKING:
    from qgate.core.serving import Runtime

# Most specific first: the first pattern with a match wins.
_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"error: (unrecognized arguments: .*)"),
    re.compile(r"error: (argument [^:]+: .*)"),
    re.compile(r"((?:torch\.)?OutOfMemoryError: .*|CUDA out of memory.*|HIP out of memory.*)"),
    re.compile(r"(Cannot allocate memory.*|std::bad_alloc.*|MemoryError.*)"),
    re.compile(r"\b((?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception): .+)"),
)
# Exception lines that only wrap the real cause.
_WRAPPERS = (
    "Engine core initialization failed",
    "See root cause above",
    "EngineCore failed to start",
    "Worker failed with error",
    "WorkerProc initialization failed",
)
_MAX_BYTES = 4 << 20


def root_cause(text: str) -> str | None:
    """The line that says why the engine failed, trimmed; None when nothing specific is found."""
    lines = [ln.strip() for ln in text.splitlines() if not ln.startswith("# qgate:")]
    for pattern in _PATTERNS:
        for line in lines:
            found = pattern.search(line)
            if found and not any(w in line for w in _WRAPPERS):
                return found.group(1).strip()[:300]
    return None


def root_cause_in(path: Path | None) -> str | None:
    """`root_cause` of a log file (its last 4 MiB), None when unreadable."""
    if path is None:
        return None
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - _MAX_BYTES))
            data = f.read()
    except OSError:
        return None
    return root_cause(data.decode("utf-8", errors="replace"))


@contextmanager
def blamed_on(runtime: Runtime) -> Iterator[None]:
    """Turn a request failure inside a stage into the runtime's own failure.

    "connection failed after 4 attempts" says nothing about which server died
    or why; when a request fails, ask the runtime: an exited server raises
    RuntimeFailure with its role, exit status, root cause and log path. A
    server that is still alive leaves the original error, with role and log added.
    """
    try:
        yield
    except RuntimeFailure:
        raise
    except InfrastructureError as exc:
        try:
            runtime.check_alive()
        except RuntimeFailure as dead:
            raise dead from exc
        log = f" (log: {runtime.log_path})" if runtime.log_path else ""
        raise InfrastructureError(f"{runtime.role} runtime: {exc.message}{log}",
                                  exc.details) from exc  # fmt: skip
